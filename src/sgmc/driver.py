"""The driver: runs any sampler as compiled blocks of steps over vectorised chains.

One call of :func:`sample` compiles at most two programs (cached on the problem's and
sampler's static structure, the shapes, the block size and ``thin``, so a second call with
the same settings compiles nothing) and runs the run's blocks through them. A block is one
loop over steps inside one ``jit``, keeping a draw every ``thin`` steps; each step moves
every chain (``vmap``); minibatch indices and noise are drawn on the device; only thinned
draws leave the device. All full blocks run one program whose loop has a static length; a
partial last block and the steps that do not fill a draw run one program with a traced
length. Between blocks the host updates the progress bar and checks for divergence — never
per step. Per-example gradient evaluations (including those an estimator spends at
initialisation, e.g. a SAGA table) are counted per chain in a 64-bit counter.

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


def _chain_fns(single):
    """(inner, outer, batch, fold, finite) for one chain run unbatched or many vmapped:
    inner/outer drop and restore the chain axis of one chain; batch is ``jax.vmap`` or None."""
    if single:
        def inner(tree):
            return jax.tree.map(lambda x: x[0], tree)

        def outer(tree, axis=0):
            return jax.tree.map(lambda x: jnp.expand_dims(x, axis), tree)

        return inner, outer, None, jax.random.fold_in, all_finite

    def same(tree, axis=0):
        return tree

    fold = jax.vmap(jax.random.fold_in, in_axes=(0, None))
    return same, same, jax.vmap, fold, jax.vmap(all_finite)


def _draw_fn(sampler, batch):
    """What a draw records of a chain's state: ``sampler.draw(state)`` (a coupling's coldest
    replica, say) or the state's position; ``batch`` maps it over chains (None: one chain)."""
    draw = getattr(sampler, "draw", None)
    if draw is None:
        return lambda states: states.position
    return draw if batch is None else batch(draw)


def _block_parts(problem, sampler, states, counters, run_keys, t0):
    """What both block programs share: the chain-level step, the per-step bookkeeping and
    the zero accumulators of the per-draw statistics.

    The loops run outside the ``vmap`` over chains, so the step index t is one unbatched
    number: periodic work keyed on it (SVRG snapshots, anchor refreshes) stays a real branch
    instead of a select that would evaluate both sides for every chain at every step. A
    single chain is not ``vmap``-ed at all: on XLA:CPU batching one chain still costs (its
    gathers become batched gathers), so it runs unbatched and gains its axis back at the end.
    """
    inner, outer, batch, fold, finite = _chain_fns(counters.bad_step.shape[0] == 1)
    step = sampler.step if batch is None else batch(sampler.step, in_axes=(None, 0, 0, None))
    states, counters, keys = inner((states, counters, run_keys))
    info_shape = jax.eval_shape(step, problem, states, keys, t0)[1]
    stat_keys = sorted(k for k in info_shape if k != "grad_evals")
    # Statistics may be vectors (per replica pair, say). Counts are summed over a draw's
    # steps; the sampler's `last_value_stats` (states such as σ̂²) keep the draw's value.
    stat_zero = {k: jnp.zeros(info_shape[k].shape, jnp.float32) for k in stat_keys}
    last = set(getattr(sampler, "last_value_stats", ()))
    draw_fn = _draw_fn(sampler, batch)

    def one_step(t, states, c):
        """Step t of every chain: (new states, new counters, info)."""
        states, info = step(problem, states, fold(keys, t), t)
        hi, lo = _add_u64(c.evals_hi, c.evals_lo, info["grad_evals"])
        bad = jnp.where((c.bad_step < 0) & ~finite(states.position), t, c.bad_step)
        return states, _Counters(hi, lo, bad), info

    def accumulate(acc, info, fresh):
        return {k: jnp.asarray(info[k], jnp.float32) if k in last else
                jnp.where(fresh, 0.0, acc[k]) + jnp.asarray(info[k], jnp.float32)
                for k in stat_keys}

    def record(states, c, acc):
        return {"position": draw_fn(states), "evals_hi": c.evals_hi, "evals_lo": c.evals_lo,
                "stats": acc}

    return states, counters, stat_zero, one_step, accumulate, record, outer


@partial(jax.jit, static_argnames=("n_draws", "thin"))
def _run_block(problem, sampler, states, counters, run_keys, t0, *, n_draws, thin):
    """Run ``n_draws`` × ``thin`` steps of every chain from global step ``t0``, recording a
    draw after every ``thin`` steps (draw axis first in the returned buffer).

    ``n_draws`` and ``thin`` are static: a loop whose trip count is a traced value costs
    about 25–35 % per step on XLA:CPU (with threefry keys), so all the full blocks of a run
    share this one program of static length. The rest of the run (a partial last block, and
    the fewer than ``thin`` steps that burn-in or the end leave over) runs in
    :func:`_run_steps`. Nothing is skipped under ``lax.cond`` here: an estimator's state can
    hold an O(N) table, which a ``cond`` would copy at every step.
    """
    states, counters, stat_zero, one_step, accumulate, record, outer = _block_parts(
        problem, sampler, states, counters, run_keys, t0)

    # A loop over draws, writing each into its slot of the buffer, and inside it a loop over
    # the thin steps of one draw (none when thin = 1: that would cost a loop per step). Both
    # have static bounds: the loop index is the draw's slot, t = t0 + d × thin + k. (A
    # `lax.scan` over `arange(n_draws)` collecting the draws as its output measured ~20 %
    # slower per step than this loop, about as slow as a traced trip count.)
    def one_draw(d, carry):
        states, c, buf = carry
        first = t0 + d * thin
        states, c, info = one_step(first, states, c)
        acc = accumulate(stat_zero, info, True)
        if thin > 1:
            def more(k, inner_carry):
                states, c, acc = inner_carry
                states, c, info = one_step(first + k, states, c)
                return states, c, accumulate(acc, info, False)

            states, c, acc = jax.lax.fori_loop(1, thin, more, (states, c, acc))
        buf = jax.tree.map(lambda b, x: jax.lax.dynamic_update_index_in_dim(b, x, d, 0),
                           buf, record(states, c, acc))
        return states, c, buf

    buf = _empty_buffer(record(states, counters, stat_zero), n_draws)
    states, counters, buf = jax.lax.fori_loop(0, n_draws, one_draw, (states, counters, buf))
    return outer(states), outer(counters), outer(buf, axis=1)


def _empty_buffer(template, slots):
    return jax.tree.map(lambda x: jnp.zeros((slots, *jnp.shape(x)), jnp.result_type(x)),
                        template)


@partial(jax.jit, static_argnames=("max_draws",))
def _run_steps(problem, sampler, states, counters, run_keys, t0, n_draws, thin, *, max_draws):
    """Like :func:`_run_block` with a traced number of draws and of steps per draw, into a
    buffer of ``max_draws`` slots: one program for the leftovers of a run (a partial last
    block; burn-in and trailing steps that do not fill a draw)."""
    states, counters, stat_zero, one_step, accumulate, record, outer = _block_parts(
        problem, sampler, states, counters, run_keys, t0)

    # One flat loop; draw j lives in slot j = (t − t0) // thin and is overwritten at every
    # step of its interval, so it ends holding the interval's last state.
    def body(t, carry):
        states, c, acc, buf = carry
        states, c, info = one_step(t, states, c)
        acc = accumulate(acc, info, (t - t0) % thin == 0)
        j = (t - t0) // thin
        buf = jax.tree.map(lambda b, x: jax.lax.dynamic_update_index_in_dim(b, x, j, 0),
                           buf, record(states, c, acc))
        return states, c, acc, buf

    buf = _empty_buffer(record(states, counters, stat_zero), max_draws)
    states, counters, _, buf = jax.lax.fori_loop(
        t0, t0 + n_draws * thin, body, (states, counters, stat_zero, buf))
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
        draws_per_block: draws computed per compiled block, burn-in included (burn-in
            runs as draws at this ``thin`` that are dropped). Default: about 1/20 of the
            run, capped so that a block's draws take at most 64 MiB, and chosen to divide
            the run's draws when it can, so that the run needs one compiled program.
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
    total_draws = burn_in // thin + num_draws  # burn-in runs as draws that are dropped
    if draws_per_block is None:
        bytes_per_draw = num_chains * sum(x[0].size * x.dtype.itemsize
                                          for x in jax.tree.leaves(positions))
        cap = max(1, _BLOCK_BYTES // max(bytes_per_draw, 1))
        draws_per_block = _default_draws_per_block(total_draws, cap)
    draws_per_block = min(draws_per_block, total_draws)

    chain_keys = jax.random.split(jax.random.key(seed, impl=_PRNG_IMPLS[prng]), num_chains)
    pairs = jax.vmap(jax.random.split)(chain_keys)
    init_keys, run_keys = pairs[:, 0], pairs[:, 1]

    t_start = time.perf_counter()
    states = _init_chains(problem, sampler, positions, init_keys)
    init_evals = int(getattr(sampler, "init_evals", lambda p: 0)(problem))
    counters = _Counters(jnp.full(num_chains, init_evals >> 32, jnp.uint32),
                         jnp.full(num_chains, init_evals & 0xFFFFFFFF, jnp.uint32),
                         jnp.full(num_chains, -1, jnp.int32))
    plan = _block_plan(burn_in, num_draws, thin, trailing, draws_per_block)
    # Compile up front (and only the programs this plan uses), so that compile_time holds
    # all compilation and sampling_time none.
    args = (problem, sampler, states, counters, run_keys, np.int32(0))
    run_block = run_steps = None
    if any(static for _, _, static, _ in plan):
        run_block = _run_block.lower(*args, n_draws=draws_per_block, thin=thin).compile()
    if not all(static for _, _, static, _ in plan):
        run_steps = _run_steps.lower(*args, np.int32(1), np.int32(1),
                                     max_draws=draws_per_block).compile()
    compile_time = time.perf_counter() - t_start

    kept: list[dict] = []
    draw_steps: list[np.ndarray] = []
    bar = None
    if _want_progress(progress):
        from tqdm.auto import tqdm
        bar = tqdm(total=num_steps, desc=getattr(sampler, "name", "sampling"), unit="step")
    t_run = time.perf_counter()
    t0 = 0
    try:
        for n_draws, steps, static, drop in plan:
            # NumPy scalars: creating device scalars costs ~0.1 ms each here.
            if static:
                states, counters, buf = run_block(problem, sampler, states, counters,
                                                  run_keys, np.int32(t0))
            else:
                states, counters, buf = run_steps(problem, sampler, states, counters,
                                                  run_keys, np.int32(t0), np.int32(n_draws),
                                                  np.int32(steps))
            if drop < n_draws:  # slice on the host: an eager device slice costs more
                kept.append(jax.tree.map(
                    lambda b, n=n_draws, k=drop: np.swapaxes(np.asarray(b)[k:n], 0, 1), buf))
                draw_steps.append(t0 + steps * np.arange(drop + 1, n_draws + 1))
            t0 += n_draws * steps
            if bar is not None:
                bar.update(n_draws * steps)
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


def _default_draws_per_block(total_draws: int, cap: int) -> int:
    """About 1/20 of the draws (burn-in's included) per block, at most ``cap``: if possible a
    divisor of ``total_draws`` within a factor 2 of that, so that every block is full and
    one compiled program runs them all (a partial block compiles a second program)."""
    target = max(1, min(cap, total_draws // _TARGET_BLOCKS))
    lo, hi = (target + 1) // 2, min(cap, 2 * target)
    near = [d for i in range(1, math.isqrt(total_draws) + 1) if total_draws % i == 0
            for d in (i, total_draws // i) if lo <= d <= hi]
    return min(near, key=lambda d: (abs(math.log(d / target)), -d)) if near else target


def _block_plan(burn_in: int, num_draws: int, thin: int, trailing: int,
                draws_per_block: int) -> list[tuple[int, int, bool, int]]:
    """(draws, steps per draw, full block?, leading draws to drop) for each block, in order.

    Burn-in runs as draws at the run's ``thin`` that are dropped on the host, so burn-in
    blocks are full blocks of the one static-length program (:func:`_run_block`), and a
    block may hold burn-in draws followed by kept ones. Only the rest runs in the program of
    traced length (:func:`_run_steps`): the ``burn_in % thin`` steps before those draws, a
    partial last block, and the steps after the last draw. With ``thin = 1`` that is at most
    the partial block, which the default block size avoids when it can.
    """
    burn_draws, head = divmod(burn_in, thin)
    plan = [(1, head, False, 1)] if head else []
    total = burn_draws + num_draws
    for d in range(0, total, draws_per_block):
        n = min(draws_per_block, total - d)
        plan.append((n, thin, n == draws_per_block, max(0, burn_draws - d)))
    if trailing:
        plan.append((1, trailing, False, 1))
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
                           _draw_fn(sampler, jax.vmap)(states))
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
