"""The driver: runs any sampler as compiled blocks of steps over vectorised chains.

One call of :func:`sample` compiles one program (cached on the problem's and sampler's
static structure and the shapes, so a second call with the same settings compiles nothing)
and runs it block after block. A block is one loop over steps inside one ``jit``, keeping a
draw every ``thin`` steps; each step moves every chain (``vmap``); minibatch indices and
noise are drawn on the device; only thinned draws leave the device. Between blocks the host
updates the progress bar and checks for divergence — never per step. Per-example gradient
evaluations (including those an estimator spends at initialisation, e.g. a SAGA table) are
counted per chain in a 64-bit counter.

Randomness: chain c uses key ``split(key(seed), num_chains)[c]``, itself split into an
initialisation key and a run key; step t uses ``fold_in(run_key, t)``. Draws therefore do not
depend on how the run is cut into blocks, and the same seed gives bitwise identical draws.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import time
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from . import _validate as check
from ._tree import all_finite, as_float_tree
from .errors import DivergenceError
from .problem import Problem
from .result import Result

__all__ = ["sample"]

PyTree = Any

#: Upper bound on the device memory of one block's draw buffer.
_BLOCK_BYTES = 64 * 2**20
#: Pseudo-random generators: threefry (JAX's default: reproducible on every backend and
#: under any sharding) or rbg (XLA's RngBitGenerator for the bits: about 25 % faster per
#: step here, but its bits may differ across backends and shardings).
_PRNG_IMPLS = {"threefry": "threefry2x32", "rbg": "rbg"}
#: Blocks per run when the user does not choose (progress granularity).
_TARGET_BLOCKS = 20


class _Counters(NamedTuple):
    """Per-chain running counters carried across blocks."""

    evals_hi: jax.Array  # per-example gradient evaluations, as a 64-bit (hi, lo) uint32 pair
    evals_lo: jax.Array
    bad_step: jax.Array  # index of the first step whose result was non-finite, or -1


def _add_u64(hi, lo, n):
    lo_new = lo + n.astype(jnp.uint32)
    return hi + (lo_new < lo).astype(jnp.uint32), lo_new


@partial(jax.jit, static_argnames=("max_draws",))
def _run_block(problem, sampler, states, counters, run_keys, t0, n_draws, thin, *, max_draws):
    """Run ``n_draws`` × ``thin`` steps of every chain from global step ``t0``, recording a
    draw every ``thin`` steps into a buffer of ``max_draws`` slots (draw axis first).

    The loops run outside the ``vmap`` over chains, so the step index t is one unbatched
    number: periodic work keyed on it (SVRG snapshots, anchor refreshes) stays a real branch
    instead of a select that would evaluate both sides for every chain at every step. A
    single chain is not ``vmap``-ed at all: on XLA:CPU batching one chain still costs (its
    gathers become batched gathers), so it runs unbatched and gains its axis back at the end.
    """
    single = counters.bad_step.shape[0] == 1
    if single:
        def inner(tree):
            return jax.tree.map(lambda x: x[0], tree)

        def outer(tree, axis=0):
            return jax.tree.map(lambda x: jnp.expand_dims(x, axis), tree)

        step, fold, finite = sampler.step, jax.random.fold_in, all_finite
    else:
        def inner(tree):
            return tree

        def outer(tree, axis=0):
            return tree

        step = jax.vmap(sampler.step, in_axes=(None, 0, 0, None))
        fold = jax.vmap(jax.random.fold_in, in_axes=(0, None))
        finite = jax.vmap(all_finite)
    states, counters, keys = inner((states, counters, run_keys))
    info_shape = jax.eval_shape(step, problem, states, keys, t0)[1]
    stat_keys = sorted(k for k in info_shape if k != "grad_evals")
    stat_zero = {k: jnp.zeros(counters.bad_step.shape, jnp.float32) for k in stat_keys}

    # One flat loop over the block's steps; draw j lives in slot j = (t − t0) // thin and is
    # overwritten at every step of its interval, so it ends holding the interval's last state.
    # (Nesting a loop over `thin` inside a loop over draws costs a loop per step when thin = 1.)
    def one_step(t, carry):
        states, c, acc, buf = carry
        states, info = step(problem, states, fold(keys, t), t)
        hi, lo = _add_u64(c.evals_hi, c.evals_lo, info["grad_evals"])
        bad = jnp.where((c.bad_step < 0) & ~finite(states.position), t, c.bad_step)
        fresh = (t - t0) % thin == 0
        acc = {k: jnp.where(fresh, 0.0, acc[k]) + jnp.asarray(info[k], jnp.float32)
               for k in stat_keys}
        c = _Counters(hi, lo, bad)
        record = {"position": states.position, "evals_hi": hi, "evals_lo": lo, "stats": acc}
        j = (t - t0) // thin
        buf = jax.tree.map(lambda b, x: jax.lax.dynamic_update_index_in_dim(b, x, j, 0),
                           buf, record)
        return states, c, acc, buf

    template = {"position": states.position, "evals_hi": counters.evals_hi,
                "evals_lo": counters.evals_lo, "stats": stat_zero}
    buf = jax.tree.map(lambda x: jnp.zeros((max_draws, *jnp.shape(x)), jnp.result_type(x)),
                       template)
    states, counters, _, buf = jax.lax.fori_loop(
        t0, t0 + n_draws * thin, one_step, (states, counters, stat_zero, buf))
    return outer(states), outer(counters), outer(buf, axis=1)


@jax.jit
def _init_chains(problem, sampler, positions, keys):
    return jax.vmap(lambda p, k: sampler.init(problem, p, k))(positions, keys)


def _chain_positions(problem: Problem, init: PyTree, num_chains: int) -> PyTree:
    """One position per chain: ``init`` broadcast, or ``init`` already stacked per chain."""
    if isinstance(init, (list, tuple)) and init and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in init):
        init = np.asarray(init, dtype=np.float32)  # a plain list of numbers is one vector
    if init is None or not jax.tree.leaves(init):
        raise ValueError("init must be an array or a pytree of arrays, got an empty value")
    try:
        init = as_float_tree(init)
    except TypeError as err:
        raise TypeError(f"init must contain numeric arrays: {err}") from err
    if not bool(all_finite(init)):
        raise ValueError("init contains non-finite values (NaN or inf)")
    try:
        problem.check_params(init)
        return jax.tree.map(lambda x: jnp.broadcast_to(x, (num_chains, *x.shape)), init)
    except ValueError as single_err:
        leaves = jax.tree.leaves(init)
        if all(x.ndim >= 1 and x.shape[0] == num_chains for x in leaves):
            try:
                problem.check_params(jax.tree.map(lambda x: x[0], init))
            except ValueError:
                raise single_err from None
            return init
        raise


def _want_progress(progress: bool | None) -> bool:
    if progress is not None:
        return bool(progress)
    if not sys.stderr.isatty() or os.environ.get("CI"):
        return False
    return importlib.util.find_spec("tqdm") is not None  # an optional dependency


def sample(problem: Problem, sampler: Any, init: PyTree, num_steps: int, num_chains: int = 1,
           burn_in: int = 0, thin: int = 1, seed: int = 0, progress: bool | None = None,
           draws_per_block: int | None = None, prng: str = "threefry") -> Result:
    """Run ``num_chains`` chains of ``sampler`` on ``problem`` for ``num_steps`` steps each.

    The first ``burn_in`` steps are discarded; after them a draw is kept every ``thin``
    steps, so each chain yields ``(num_steps − burn_in) // thin`` draws (any steps left over
    are still taken, so the final state is the state after ``num_steps`` steps).

    Args:
        problem: an :class:`sgmc.Posterior` or :class:`sgmc.Objective`.
        sampler: e.g. ``sgmc.sgld(...)``, ``sgmc.sghmc(...)``.
        init: the starting point — one position (used by every chain), or one per chain
            stacked on a leading axis of size ``num_chains``.
        num_steps: total steps per chain, ≥ 1.
        num_chains: independent chains, run as one vectorised computation.
        burn_in: steps discarded first, in [0, num_steps − 1].
        thin: keep every ``thin``-th draw, in [1, num_steps − burn_in].
        seed: integer in [0, 2³² − 1]; the same seed gives bitwise identical draws.
        progress: show a progress bar (needs tqdm, in the ``diagnostics`` extra); default:
            only on an interactive terminal outside CI, when tqdm is installed.
        draws_per_block: draws computed per compiled block (default: about 1/20 of the run,
            capped so that a block's draws take at most 64 MiB).
        prng: ``"threefry"`` (default; the same draws on every backend and sharding) or
            ``"rbg"`` (faster random bits; draws may differ across backends).

    Returns:
        :class:`sgmc.Result` with ``samples`` (leaves shaped (num_chains, num_draws, ...)),
        ``info["grad_evals"]`` (cumulative per-example gradient evaluations at each draw)
        and run metadata.

    Raises:
        ValueError, TypeError: for bad arguments, before anything is compiled.
        sgmc.DivergenceError: if a chain's state becomes non-finite; it carries the draws
            kept before that step.
    """
    if not isinstance(problem, Problem):
        raise TypeError("problem must be an sgmc.Posterior or sgmc.Objective, got "
                        f"{type(problem).__name__}")
    if not all(hasattr(sampler, a) for a in ("init", "step", "check")):
        raise TypeError("sampler must be an sgmc sampler such as sgmc.sgld(...), got "
                        f"{type(sampler).__name__}")
    num_steps = check.integer("num_steps", num_steps, lo=1)
    num_chains = check.integer("num_chains", num_chains, lo=1)
    burn_in = check.integer("burn_in", burn_in, lo=0, hi=num_steps - 1)
    thin = check.integer("thin", thin, lo=1, hi=num_steps - burn_in)
    seed = check.integer("seed", seed, lo=0, hi=2**32 - 1)
    check.choice("prng", prng, tuple(_PRNG_IMPLS))
    if draws_per_block is not None:
        draws_per_block = check.integer("draws_per_block", draws_per_block, lo=1)
    positions = _chain_positions(problem, init, num_chains)
    sampler.check(problem, jax.tree.map(lambda x: x[0], positions), num_chains)

    settings = {"num_steps": num_steps, "burn_in": burn_in, "thin": thin, "seed": seed,
                "num_chains": num_chains, "prng": prng}
    num_draws = (num_steps - burn_in) // thin
    trailing = (num_steps - burn_in) - num_draws * thin
    if draws_per_block is None:
        bytes_per_draw = num_chains * sum(x[0].size * x.dtype.itemsize
                                          for x in jax.tree.leaves(positions))
        cap = max(1, _BLOCK_BYTES // max(bytes_per_draw, 1))
        draws_per_block = min(cap, max(1, math.ceil(num_draws / _TARGET_BLOCKS)))
    draws_per_block = min(draws_per_block, num_draws)

    chain_keys = jax.random.split(jax.random.key(seed, impl=_PRNG_IMPLS[prng]), num_chains)
    pairs = jax.vmap(jax.random.split)(chain_keys)
    init_keys, run_keys = pairs[:, 0], pairs[:, 1]

    t_start = time.perf_counter()
    states = _init_chains(problem, sampler, positions, init_keys)
    init_evals = int(getattr(sampler, "init_evals", lambda p: 0)(problem))
    counters = _Counters(jnp.full(num_chains, init_evals >> 32, jnp.uint32),
                         jnp.full(num_chains, init_evals & 0xFFFFFFFF, jnp.uint32),
                         jnp.full(num_chains, -1, jnp.int32))
    args = (problem, sampler, states, counters, run_keys, np.int32(0), np.int32(1), np.int32(1))
    run = _run_block.lower(*args, max_draws=draws_per_block).compile()
    compile_time = time.perf_counter() - t_start

    plan = _block_plan(burn_in, num_draws, thin, trailing, draws_per_block)
    kept: list[dict] = []
    draw_steps: list[np.ndarray] = []
    bar = None
    if _want_progress(progress):
        from tqdm.auto import tqdm
        bar = tqdm(total=num_steps, desc=getattr(sampler, "name", "sampling"), unit="step")
    t_run = time.perf_counter()
    t0 = 0
    try:
        for n_draws, block_thin, keep in plan:
            # NumPy scalars: creating device scalars costs ~0.1 ms each here.
            states, counters, buf = run(problem, sampler, states, counters, run_keys,
                                        np.int32(t0), np.int32(n_draws), np.int32(block_thin))
            if keep:  # slice on the host: an eager device slice costs more than the copy
                kept.append(jax.tree.map(
                    lambda b, n=n_draws: np.swapaxes(np.asarray(b)[:n], 0, 1), buf))
                draw_steps.append(t0 + block_thin * np.arange(1, n_draws + 1))
            t0 += n_draws * block_thin
            if bar is not None:
                bar.update(n_draws * block_thin)
            bad = np.asarray(counters.bad_step)
            if (bad >= 0).any():
                chain = int(np.argmin(np.where(bad >= 0, bad, np.iinfo(np.int32).max)))
                step = int(bad[chain]) + 1
                partial_res = _assemble(kept, draw_steps, sampler, problem, states, counters,
                                        _timed(settings, compile_time, t_run),
                                        max_step=step - 1)
                raise DivergenceError(step, chain, partial_res)
    finally:
        if bar is not None:
            bar.close()
    return _assemble(kept, draw_steps, sampler, problem, states, counters,
                     _timed(settings, compile_time, t_run))


def _block_plan(burn_in: int, num_draws: int, thin: int, trailing: int,
                draws_per_block: int) -> list[tuple[int, int, bool]]:
    """(draws, steps per draw, keep?) for each block: burn-in, then draws, then leftovers.

    Burn-in and leftover steps run as blocks of one discarded "draw" of many steps, so every
    block reuses the one compiled program.
    """
    steps_per_block = draws_per_block * thin
    plan = [(1, min(steps_per_block, burn_in - s), False)
            for s in range(0, burn_in, steps_per_block)]
    plan += [(min(draws_per_block, num_draws - d), thin, True)
             for d in range(0, num_draws, draws_per_block)]
    if trailing:
        plan.append((1, trailing, False))
    return plan


def _timed(settings: dict, compile_time: float, t_run: float) -> dict:
    return dict(settings, compile_time=compile_time,
                sampling_time=time.perf_counter() - t_run)


def _assemble(kept, draw_steps, sampler, problem, states, counters, meta,
              max_step=None) -> Result:
    """Concatenate the kept blocks into a Result (optionally only draws up to ``max_step``)."""
    n = counters.bad_step.shape[0]
    if kept:
        cat = jax.tree.map(lambda *b: np.concatenate(b, axis=1), *kept)
        steps = np.concatenate(draw_steps)
    else:  # no draw kept yet: empty arrays of the right trailing shapes
        pos = jax.tree.map(lambda x: np.zeros((x.shape[0], 0, *x.shape[1:]), x.dtype),
                           states.position)
        cat = {"position": pos, "evals_hi": np.zeros((n, 0), np.uint32),
               "evals_lo": np.zeros((n, 0), np.uint32), "stats": {}}
        steps = np.zeros(0, np.int64)
    keep = slice(None) if max_step is None else (steps <= max_step)
    evals = (cat["evals_hi"].astype(np.int64) << 32) + cat["evals_lo"].astype(np.int64)
    info = {"grad_evals": evals[:, keep], "step": steps[keep]}
    info.update({k: v[:, keep] for k, v in cat["stats"].items()})
    samples = jax.tree.map(lambda x: x[:, keep], cat["position"])
    total = ((np.asarray(counters.evals_hi).astype(np.int64) << 32)
             + np.asarray(counters.evals_lo).astype(np.int64))
    meta = dict(meta, sampler=getattr(sampler, "name", type(sampler).__name__),
                num_data=problem.num_data, grad_evals_total=total.tolist())
    return Result(samples, info, meta, final_state=states)
