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
Whatever of a step depends only on its key and t (its random draws) is computed for up to
:data:`sgmc._hoist.MAX_CHUNK` steps at once before them (:mod:`sgmc._hoist`).
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from . import _validate as check
from ._hoist import chunk_limit, draw_ahead, largest_divisor, split_step
from ._mesh import check_mesh, put, shardings, split_data, to_host
from ._store import DiskSink, MemorySink, tree_from_spec, tree_spec
from ._tree import all_finite, as_float_tree
from .errors import DivergenceError, Interrupted
from .problem import Problem
from .result import Result

__all__ = ["resume", "sample"]

PyTree = Any

#: Upper bound on the device memory of one block's draw buffer.
_BLOCK_BYTES = 64 * 2**20
#: Pseudo-random generators: threefry (JAX's default: reproducible on every backend and
#: under any sharding) or rbg (XLA's RngBitGenerator for the bits; its bits may differ
#: across backends, and JAX draws a vmapped batch of rbg keys from the batch's first key,
#: so a step's randomness is not drawn ahead with other steps' — the draws would depend on
#: the block size — which makes rbg slower than threefry here).
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


def _step_fn(problem, sampler, state, key, t):
    return sampler.step(problem, state, key, t)


def _loop(n: int, body, carry):
    """``fori_loop(0, n, body, carry)``; no loop at all when n = 1 (a loop of one trip still
    costs its overhead on XLA:CPU)."""
    return body(0, carry) if n == 1 else jax.lax.fori_loop(0, n, body, carry)


class _Parts(NamedTuple):
    """What both block programs share (see :func:`_block_parts`)."""

    states: Any
    counters: Any
    stat_zero: dict
    chunk: int         # most steps whose randomness is drawn at once
    randomness: Any    # (t, K) -> the draws of steps t .. t + K − 1 (None: not hoisted)
    one_step: Any      # (t, states, counters, draws, i) -> (states, counters, info)
    accumulate: Any
    record: Any
    outer: Any


def _block_parts(problem, sampler, states, counters, run_keys, t0):
    """What both block programs share: the chain-level step, the per-step bookkeeping and
    the zero accumulators of the per-draw statistics.

    The loops run outside the ``vmap`` over chains, so the step index t is one unbatched
    number: periodic work keyed on it (SVRG snapshots, anchor refreshes) stays a real branch
    instead of a select that would evaluate both sides for every chain at every step. A
    single chain is not ``vmap``-ed at all: on XLA:CPU batching one chain still costs (its
    gathers become batched gathers), so it runs unbatched and gains its axis back at the end.

    The step's randomness (everything it computes from its key and t alone: minibatch
    indices, noise, ...) is drawn for up to ``chunk`` steps at once, ahead of them
    (:mod:`sgmc._hoist`): about half of a small model's step time otherwise. Draws that
    depend on t alone stay unbatched over chains, for the same reason as t itself.
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
    one = (lambda tree: tree) if batch is None else (lambda tree: jax.tree.map(
        lambda x: x[0], tree))
    split = split_step(_step_fn, (problem, sampler, one(states)), one(keys), t0)
    num_chains = counters.bad_step.shape[0] if batch is not None else 1

    if split is None:
        def randomness(t, k):
            return None

        def moved(t, states, draws, i):
            return step(problem, states, fold(keys, t), t)
    else:
        axes = [0 if k else None for k in split.keyed]
        pre = split.pre if batch is None else batch(split.pre, in_axes=(0, None),
                                                    out_axes=axes)
        post = split.post if batch is None else batch(split.post,
                                                      in_axes=(axes, None, None, 0))

        def randomness(t, k):
            draws = draw_ahead(pre, lambda tt: fold(keys, tt), t, k)
            # Kept apart from the step's own arithmetic: no program may fuse the two
            # differently (draws must not depend on how a run is cut into blocks).
            return jax.lax.optimization_barrier(draws)

        def moved(t, states, draws, i):
            # Barriers on both sides: the step's arithmetic is fused the same way in every
            # loop structure (chunks of draws, chunks within a draw, traced lengths), so
            # the rounding, and the draws, do not depend on the block size.
            barrier = jax.lax.optimization_barrier
            res, states = barrier(([d[i] for d in draws], states))
            return barrier(post(res, problem, sampler, states))

    def one_step(t, states, c, draws, i):
        """Step t of every chain, with its randomness ``draws[i]``: (states, counters, info)."""
        states, info = moved(t, states, draws, i)
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

    return _Parts(states, counters, stat_zero, chunk_limit(split, num_chains), randomness,
                  one_step, accumulate, record, outer)


def _put(buf, row, slot):
    return jax.tree.map(lambda b, x: jax.lax.dynamic_update_index_in_dim(b, x, slot, 0),
                        buf, row)


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
    p = _block_parts(problem, sampler, states, counters, run_keys, t0)

    # Randomness is drawn for a chunk of K steps: K = m·thin spanning m whole draws (m
    # divides n_draws) when thin is small, else K divides thin and r = thin / K chunks make
    # one draw. All loops have static bounds (a `lax.scan` over `arange(n_draws)` collecting
    # the draws as its output measured ~20 % slower per step than writing them into slots).
    if thin <= p.chunk:
        m = largest_divisor(n_draws, p.chunk // thin)
        k, r = m * thin, 1
    else:
        m, k = 1, largest_divisor(thin, p.chunk)
        r = thin // k

    def steps(carry, t, n, draws, offset):
        def body(i, carry):
            states, c, acc = carry
            states, c, info = p.one_step(t + i, states, c, draws, offset + i)
            return states, c, p.accumulate(acc, info, False)

        return _loop(n, body, carry)

    def group(g, carry):
        states, c, acc, buf = carry
        t_g = t0 + g * (m * thin)
        if r == 1:
            draws = p.randomness(t_g, k)

            def one_draw(j, carry):
                states, c, acc, buf = carry
                states, c, acc = steps((states, c, acc), t_g + j * thin, thin, draws, j * thin)
                return states, c, p.stat_zero, _put(buf, p.record(states, c, acc), g * m + j)

            return _loop(m, one_draw, carry)

        def chunk(i, inner):
            t_c = t_g + i * k
            return steps(inner, t_c, k, p.randomness(t_c, k), 0)

        states, c, acc = _loop(r, chunk, (states, c, acc))
        return states, c, p.stat_zero, _put(buf, p.record(states, c, acc), g)

    buf = _empty_buffer(p.record(p.states, p.counters, p.stat_zero), n_draws)
    states, counters, _, buf = _loop(n_draws // m, group,
                                     (p.states, p.counters, p.stat_zero, buf))
    return p.outer(states), p.outer(counters), p.outer(buf, axis=1)


def _empty_buffer(template, slots):
    return jax.tree.map(lambda x: jnp.zeros((slots, *jnp.shape(x)), jnp.result_type(x)),
                        template)


@partial(jax.jit, static_argnames=("max_draws",))
def _run_steps(problem, sampler, states, counters, run_keys, t0, n_draws, thin, *, max_draws):
    """Like :func:`_run_block` with a traced number of draws and of steps per draw, into a
    buffer of ``max_draws`` slots: one program for the leftovers of a run (a partial last
    block; burn-in and trailing steps that do not fill a draw)."""
    p = _block_parts(problem, sampler, states, counters, run_keys, t0)
    total, k = n_draws * thin, p.chunk

    # Chunks of k steps (the last one possibly partial). Draw j lives in slot
    # j = (t − t0) // thin and is overwritten at every step of its interval, so it ends
    # holding the interval's last state.
    def chunk(i, carry):
        t_c = t0 + i * k
        draws = p.randomness(t_c, k)

        def body(s, carry):
            states, c, acc, buf = carry
            t = t_c + s
            states, c, info = p.one_step(t, states, c, draws, s)
            acc = p.accumulate(acc, info, (t - t0) % thin == 0)
            return states, c, acc, _put(buf, p.record(states, c, acc), (t - t0) // thin)

        return jax.lax.fori_loop(0, jnp.minimum(k, total - i * k), body, carry)

    buf = _empty_buffer(p.record(p.states, p.counters, p.stat_zero), max_draws)
    states, counters, _, buf = jax.lax.fori_loop(
        0, (total + k - 1) // k, chunk, (p.states, p.counters, p.stat_zero, buf))
    return p.outer(states), p.outer(counters), p.outer(buf, axis=1)


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
           draws_per_block: int | None = None, prng: str = "threefry",
           checkpoint: str | os.PathLike | None = None, checkpoint_every: int | None = None,
           stream_to: str | os.PathLike | None = None, mesh: Mesh | None = None) -> Result:
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
            run, capped so that a block's draws take at most 64 MiB, its steps at most
            ``checkpoint_every`` and, with streamed data, about buffer_rows / batch_size
            (see :class:`sgmc.Stream`), and chosen to divide the run's draws when it can, so that
            the run needs one compiled program. The draws do not depend on it.
        prng: ``"threefry"`` (default; the same draws on every backend and sharding) or
            ``"rbg"`` (XLA's RngBitGenerator: may be faster on accelerators, is slower on
            the CPU, where threefry draws many steps' randomness at once; its draws may
            differ across backends).
        checkpoint: a file path. The complete state of the run (every chain's sampler
            state, the draws kept so far, the position in the run) is written there
            atomically between blocks, and once more at the end; :func:`sgmc.resume`
            continues from it with draws bitwise identical to an uninterrupted run's. The
            checkpoint it replaces is kept as ``PATH.prev``. Positions must be arrays or
            dicts / lists / tuples of arrays.
        checkpoint_every: write a checkpoint after the first block that ends at least this
            many steps after the previous one (≥ 1; needs ``checkpoint``). Default: after
            every block (about 1/20 of the run).
        stream_to: a new or empty folder. Kept draws are written there block by block into
            memory-mapped ``.npy`` files instead of being held in memory, so memory does not
            grow with the run; the Result's draws are read-only memory maps of those files,
            and ``sgmc.Result.load(folder)`` opens them later (also after a crash: it then
            holds the draws written so far).
        mesh: a :class:`jax.sharding.Mesh` with an axis named ``"chains"`` (its size must
            divide ``num_chains``) and optionally ones named ``"replicas"`` (for replica
            exchange; its size must divide the number of replicas) and ``"data"`` (its size
            must divide N). Chains, and replicas, are then split over the devices, the
            data replicated or their rows split over ``"data"``; the draws are those of
            the same run on one device (bitwise whenever every device holds at least two
            chains; with one chain per device XLA may reassociate a few float32 sums).
            See :mod:`sgmc._mesh` for several hosts.

    Returns:
        :class:`sgmc.Result` with ``samples`` (leaves shaped (num_chains, num_draws, ...)),
        ``info["grad_evals"]`` (cumulative per-example gradient evaluations at each draw)
        and run metadata.

    Raises:
        ValueError, TypeError: for bad arguments, before anything is compiled.
        sgmc.DivergenceError: if a chain's state becomes non-finite; it carries the draws
            kept before that step.
        sgmc.Interrupted: on Ctrl-C (a KeyboardInterrupt); it carries every draw kept so
            far and, with ``checkpoint``, the run continues with :func:`sgmc.resume`.
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
    checkpoint, checkpoint_every, stream_to = _check_storage(checkpoint, checkpoint_every,
                                                             stream_to)
    positions = _chain_positions(problem, init, num_chains)
    sampler.check(problem, jax.tree.map(lambda x: x[0], positions), num_chains)
    if mesh is not None:
        check_mesh(mesh, num_chains, sampler, problem)
    _check_stream(problem, sampler)
    position_spec = _position_spec(positions) if checkpoint else None

    num_draws = (num_steps - burn_in) // thin
    total_draws = burn_in // thin + num_draws  # burn-in runs as draws that are dropped
    if draws_per_block is None:
        bytes_per_draw = num_chains * sum(x[0].size * x.dtype.itemsize
                                          for x in jax.tree.leaves(positions))
        cap = max(1, _BLOCK_BYTES // max(bytes_per_draw, 1))
        if checkpoint_every is not None:
            cap = min(cap, max(1, checkpoint_every // thin))
        if problem.stream is not None:
            # A block's minibatches come from one buffer of B rows: keep a block to about
            # B / batch_size steps so that its minibatches barely reuse rows (sgmc.streaming).
            b = getattr(getattr(sampler, "sampler", sampler), "batch_size", None)
            cap = min(cap, max(1, problem.num_data // (b or problem.num_data) // thin))
        draws_per_block = _default_draws_per_block(total_draws, cap)
    settings = {"num_steps": num_steps, "burn_in": burn_in, "thin": thin, "seed": seed,
                "num_chains": num_chains, "prng": prng,
                "draws_per_block": min(draws_per_block, total_draws),
                "checkpoint": checkpoint, "checkpoint_every": checkpoint_every,
                "stream_to": stream_to}

    t_start = time.perf_counter()
    init_keys, _ = _chain_keys(settings)
    states = _init_chains(problem, sampler, positions, init_keys)
    init_evals = int(getattr(sampler, "init_evals", lambda p: 0)(problem))
    counters = _Counters(jnp.full(num_chains, init_evals >> 32, jnp.uint32),
                         jnp.full(num_chains, init_evals & 0xFFFFFFFF, jnp.uint32),
                         jnp.full(num_chains, -1, jnp.int32))
    sink = DiskSink(stream_to, num_draws) if stream_to else MemorySink()
    run = _Run(problem, sampler, settings, sink, (states, counters, 0, 0), position_spec,
               mesh, compile_time=time.perf_counter() - t_start)
    return _execute(run, progress)


def resume(path: str | os.PathLike, problem: Problem, sampler: Any,
           progress: bool | None = None, mesh: Mesh | None = None) -> Result:
    """Continue the run saved in checkpoint ``path`` to its end and return its complete Result.

    The draws (and every per-draw statistic) are bitwise those of the same run made without
    interruption. A checkpoint stores the state but not the code, so ``problem`` and
    ``sampler`` are passed again; they must be the ones the run was started with (same
    model, data, sampler kind and hyper-parameters — checked by fingerprint). Checkpoints
    keep being written to ``path`` as the run goes on; if the run streamed its draws
    (``stream_to``), the folder must still be there. A finished run's checkpoint returns its
    Result at once. ``mesh`` places the rest of the run on devices as in :func:`sample`
    (it need not be the mesh the run started on).

    Raises:
        sgmc.CheckpointError: ``path`` is not a checkpoint, is truncated or corrupted (the
            previous checkpoint ``PATH.prev`` is named if it is intact), or was written for
            a different problem or sampler.
    """
    from . import checkpoint as ckpt

    if not isinstance(problem, Problem):
        raise TypeError("problem must be an sgmc.Posterior or sgmc.Objective, got "
                        f"{type(problem).__name__}")
    path = os.fspath(path)
    header, arrays = ckpt.read(path)
    found = ckpt.fingerprint(problem, sampler)
    for what in ("problem", "sampler"):
        if header["fingerprint"][what] != found[what]:
            raise ckpt.CheckpointError(
                f"{path} was written by a run of a different {what} (its model, data or "
                "settings differ); resume with the problem and sampler the run started with")
    settings = dict(header["settings"], checkpoint=path)
    if mesh is not None:
        check_mesh(mesh, settings["num_chains"], sampler, problem)
    positions = _position_template(header["positions"])
    init_keys, _ = _chain_keys(settings)
    template = jax.eval_shape(_init_chains, problem, sampler, positions, init_keys)
    n = settings["num_chains"]
    template = (template, _Counters(*(jax.ShapeDtypeStruct((n,), t)
                                      for t in (jnp.uint32, jnp.uint32, jnp.int32))))
    states, counters = _fill(template, [arrays[f"state/{i}"] for i in
                                        range(header["num_state_leaves"])], path)
    draw_treedef = jax.tree.structure(jax.eval_shape(_draw_fn(sampler, jax.vmap), states))
    count = header["kept"]
    if settings["stream_to"]:
        sink = DiskSink(settings["stream_to"], _num_draws(settings), count, draw_treedef)
    elif count:
        samples = jax.tree.unflatten(draw_treedef, [arrays[f"kept/samples/{i}"]
                                                    for i in range(draw_treedef.num_leaves)])
        info = {k[len("kept/info/"):]: v for k, v in arrays.items()
                if k.startswith("kept/info/")}
        sink = MemorySink([(samples, info, arrays["kept/step"])])
    else:
        sink = MemorySink()
    cursor = (states, counters, int(header["t0"]), int(header["next_block"]))
    run = _Run(problem, sampler, settings, sink, cursor, header["positions"], mesh,
               compile_time=float(header["compile_time"]),
               sampling_time=float(header["sampling_time"]))
    return _execute(run, progress)


def _check_stream(problem: Problem, sampler: Any) -> None:
    """Samplers that cannot run on streamed data (see :mod:`sgmc.streaming`)."""
    from .estimators.saga import SAGA

    if problem.stream is None:
        return
    estimator = getattr(getattr(sampler, "sampler", sampler), "estimator", None)
    if isinstance(estimator, SAGA):
        raise ValueError("SAGA cannot run on streamed data (sgmc.Stream): its table is "
                         "indexed by buffer rows, which change every block; use svrg(...)")
    if getattr(estimator, "sampling", None) == "replacement":
        warnings.warn("streamed data with minibatches drawn with replacement: a buffer's rows "
                      "are then reused unevenly and the draws come out overdispersed; use "
                      "sampling='permutation' in the estimator (see sgmc.streaming)",
                      UserWarning, stacklevel=3)


def _check_storage(checkpoint, checkpoint_every, stream_to):
    """Validate the checkpoint and streaming arguments (paths as strings)."""
    if checkpoint is not None:
        checkpoint = os.fspath(checkpoint)
        folder = os.path.dirname(os.path.abspath(checkpoint))
        if not os.path.isdir(folder):
            raise ValueError(f"checkpoint={checkpoint!r}: the folder {folder} does not exist")
        if os.path.isdir(checkpoint):
            raise ValueError(f"checkpoint={checkpoint!r} is a folder; give a file path")
    if checkpoint_every is not None:
        if checkpoint is None:
            raise ValueError("checkpoint_every needs checkpoint=PATH")
        checkpoint_every = check.integer("checkpoint_every", checkpoint_every, lo=1)
    if stream_to is not None:
        stream_to = os.path.abspath(os.fspath(stream_to))
        if os.path.exists(stream_to) and (not os.path.isdir(stream_to) or os.listdir(stream_to)):
            raise ValueError(f"stream_to={stream_to!r} must be a new or empty folder")
    return checkpoint, checkpoint_every, stream_to


def _position_spec(positions: PyTree) -> dict:
    """The chain-stacked positions' structure, shapes and dtypes (JSON), for checkpoints."""
    spec, order = tree_spec(positions)
    leaves = jax.tree.leaves(positions)
    out = {"spec": spec, "order": order, "shapes": [list(x.shape) for x in leaves],
           "dtypes": [str(x.dtype) for x in leaves]}
    if jax.tree.structure(_position_template(out)) != jax.tree.structure(positions):
        raise TypeError("checkpoint= needs positions made of arrays and dicts, lists or "
                        "tuples of arrays (namedtuples and custom pytree nodes cannot be "
                        "restored without running code)")
    return out


def _position_template(spec: dict) -> PyTree:
    leaves = [jax.ShapeDtypeStruct(tuple(s), jnp.dtype(d))
              for s, d in zip(spec["shapes"], spec["dtypes"], strict=True)]
    return tree_from_spec(spec["spec"], spec["order"], leaves)


def _fill(template: PyTree, leaves: list, path: str) -> PyTree:
    """``template``'s structure with the stored leaves, which must match its shapes."""
    from .errors import CheckpointError

    want = jax.tree.leaves(template)
    if len(want) != len(leaves) or any(
            tuple(w.shape) != x.shape or jnp.dtype(w.dtype) != x.dtype
            for w, x in zip(want, leaves, strict=False)):
        raise CheckpointError(f"{path}: the stored sampler state does not fit this problem "
                              "and sampler (different shapes)")
    return jax.tree.unflatten(jax.tree.structure(template), [jnp.asarray(x) for x in leaves])


def _chain_keys(settings: dict) -> tuple[jax.Array, jax.Array]:
    """(init keys, run keys), one per chain, derived from the seed (see module docstring)."""
    impl = _PRNG_IMPLS[settings["prng"]]
    chain_keys = jax.random.split(jax.random.key(settings["seed"], impl=impl),
                                  settings["num_chains"])
    pairs = jax.vmap(jax.random.split)(chain_keys)
    return pairs[:, 0], pairs[:, 1]


def _num_draws(settings: dict) -> int:
    return (settings["num_steps"] - settings["burn_in"]) // settings["thin"]


class _Run:
    """A run in progress: its fixed parts, where its draws go, and where it stands.

    ``cursor`` = (states, counters, steps done, next block) is replaced in one assignment
    after each block, so a Ctrl-C never sees half an update; the sink may then hold one
    block more than the cursor accounts for, which :meth:`kept_before` lets us drop.
    """

    def __init__(self, problem, sampler, settings, sink, cursor, position_spec, mesh=None,
                 compile_time=0.0, sampling_time=0.0):
        self.problem, self.sampler, self.settings = problem, sampler, settings
        self.sink, self.cursor, self.position_spec = sink, cursor, position_spec
        self.compile_time, self.sampling_time = compile_time, sampling_time
        s = settings
        trailing = (s["num_steps"] - s["burn_in"]) % s["thin"]
        self.plan = _block_plan(s["burn_in"], _num_draws(s), s["thin"], trailing,
                                s["draws_per_block"])
        self.run_keys = _chain_keys(s)[1]
        self.placement, self.put_data = None, jax.device_put
        self.given = (problem, sampler)  # as passed: what a checkpoint's fingerprint is of
        if mesh is not None:
            on_states, on_chains = shardings(mesh, sampler, cursor[0])
            self.placement = (on_states, on_chains)
            problem, on_problem = split_data(mesh, problem)
            self.problem = put(problem, on_problem)
            self.put_data = partial(put, sharding=on_problem)
            self.run_keys = put(self.run_keys, on_chains)
            self.cursor = (*self.place(*cursor[:2]), *cursor[2:])

    def place(self, states, counters):
        """States and counters where the mesh wants them. The partitioner may return a
        block's states sharded differently from how they went in (it splits what it can);
        the compiled block program needs them exactly as it was compiled for."""
        if self.placement is None:
            return states, counters
        return put((states, counters), (self.placement[0], self.placement[1]))

    def kept_before(self, block: int) -> int:
        """Draws per chain kept by the blocks before ``block``."""
        return sum(max(0, n - drop) for n, _, _, drop in self.plan[:block])

    def result(self, max_step: int | None = None) -> Result:
        states, counters = self.cursor[:2]
        parts = self.sink.arrays()
        if parts is None:  # no draw kept yet: empty arrays of the right trailing shapes
            n = counters.bad_step.shape[0]
            samples = jax.tree.map(lambda x: np.zeros((x.shape[0], 0, *x.shape[1:]), x.dtype),
                                   _draw_fn(self.sampler, jax.vmap)(states))
            info, steps = {"grad_evals": np.zeros((n, 0), np.int64)}, np.zeros(0, np.int64)
        else:
            samples, info, steps = parts
        if max_step is not None:  # steps increase: a slice, no copy of memory-mapped draws
            keep = slice(int(np.searchsorted(steps, max_step, side="right")))
            samples = jax.tree.map(lambda x: x[:, keep], samples)
            info, steps = {k: v[:, keep] for k, v in info.items()}, steps[keep]
        total = ((to_host(counters.evals_hi).astype(np.int64) << 32)
                 + to_host(counters.evals_lo).astype(np.int64))
        s = self.settings
        meta = {k: s[k] for k in ("num_steps", "burn_in", "thin", "seed", "num_chains", "prng")}
        meta.update({k: s[k] for k in ("checkpoint", "stream_to") if s[k]})
        if hasattr(self.sampler, "output"):  # a coupling: do draws hold every replica?
            meta["output"] = self.sampler.output
        meta.update(compile_time=self.compile_time, sampling_time=self.sampling_time,
                    sampler=getattr(self.sampler, "name", type(self.sampler).__name__),
                    num_data=self.problem.total_data, grad_evals_total=total.tolist())
        return Result(samples, {"grad_evals": info["grad_evals"], "step": steps,
                                **{k: v for k, v in info.items() if k != "grad_evals"}},
                      meta, final_state=states)

    def save_checkpoint(self) -> str:
        from . import checkpoint as ckpt

        states, counters, t0, next_block = self.cursor
        leaves = jax.tree.leaves((states, counters))
        arrays = {f"state/{i}": to_host(x) for i, x in enumerate(leaves)}
        count = self.kept_before(next_block)
        self.sink.truncate(count)
        if isinstance(self.sink, MemorySink) and (parts := self.sink.arrays()) is not None:
            samples, info, steps = parts
            arrays.update({f"kept/samples/{i}": x
                           for i, x in enumerate(jax.tree.leaves(samples))})
            arrays.update({f"kept/info/{k}": v for k, v in info.items()})
            arrays["kept/step"] = steps
        settings = {k: v for k, v in self.settings.items() if k != "checkpoint"}
        header = {"settings": settings, "positions": self.position_spec, "t0": t0,
                  "next_block": next_block, "kept": count, "num_state_leaves": len(leaves),
                  "compile_time": self.compile_time, "sampling_time": self.sampling_time,
                  "fingerprint": ckpt.fingerprint(*self.given)}
        path = self.settings["checkpoint"]
        ckpt.write(path, header, arrays)
        return path


def _execute(run: _Run, progress: bool | None) -> Result:
    """Run the blocks of ``run`` from where it stands to its end."""
    problem, sampler, plan = run.problem, run.sampler, run.plan
    states, counters, t0, first = run.cursor
    rest = plan[first:]
    n_block, thin = run.settings["draws_per_block"], run.settings["thin"]
    every = run.settings["checkpoint_every"] or 1
    last_checkpoint = t0
    sampled_before = run.sampling_time
    bar = t_run = None
    # Streamed data: block i runs on its own buffer, read and put on the device by a
    # thread while block i − 1 runs (block 0's buffer is the problem's own).
    stream = problem.stream
    pool = ThreadPoolExecutor(1) if stream is not None else None

    def buffer(i):
        return problem if i == 0 else problem.with_buffer(i, run.put_data)

    try:
        upcoming = pool.submit(buffer, first) if pool else None
        # Compile up front (and only the programs the rest of the plan uses), so that
        # compile_time holds all compilation and sampling_time none.
        t_start = time.perf_counter()
        args = (problem, sampler, states, counters, run.run_keys, np.int32(0))
        run_block = run_steps = None
        if any(static for _, _, static, _ in rest):
            run_block = _run_block.lower(*args, n_draws=n_block, thin=thin).compile()
        if not all(static for _, _, static, _ in rest):
            run_steps = _run_steps.lower(*args, np.int32(1), np.int32(1),
                                         max_draws=n_block).compile()
        run.compile_time += time.perf_counter() - t_start
        if _want_progress(progress):
            from tqdm.auto import tqdm
            bar = tqdm(total=run.settings["num_steps"], initial=t0,
                       desc=getattr(sampler, "name", "sampling"), unit="step")
        t_run = time.perf_counter()
        for i in range(first, len(plan)):
            n_draws, steps, static, drop = plan[i]
            states, counters, t0, _ = run.cursor
            data = problem
            if pool:
                data = upcoming.result()
                if i + 1 < len(plan):
                    upcoming = pool.submit(buffer, i + 1)
            # NumPy scalars: creating device scalars costs ~0.1 ms each here.
            if static:
                states, counters, buf = run_block(data, sampler, states, counters,
                                                  run.run_keys, np.int32(t0))
            else:
                states, counters, buf = run_steps(data, sampler, states, counters,
                                                  run.run_keys, np.int32(t0),
                                                  np.int32(n_draws), np.int32(steps))
            if drop < n_draws:  # slice on the host: an eager device slice costs more
                run.sink.append(*_host_block(buf, drop, n_draws),
                                t0 + steps * np.arange(drop + 1, n_draws + 1))
            run.cursor = (*run.place(states, counters), t0 + n_draws * steps, i + 1)
            run.sampling_time = sampled_before + time.perf_counter() - t_run
            if bar is not None:
                bar.update(n_draws * steps)
            bad = to_host(counters.bad_step)
            if (bad >= 0).any():
                chain = int(np.argmin(np.where(bad >= 0, bad, np.iinfo(np.int32).max)))
                step = int(bad[chain]) + 1
                raise DivergenceError(step, chain, run.result(max_step=step - 1))
            done = run.cursor[2]
            if run.settings["checkpoint"] and (done - last_checkpoint >= every
                                               or i + 1 == len(plan)):
                run.save_checkpoint()
                last_checkpoint = done
    except KeyboardInterrupt:
        if t_run is not None:
            run.sampling_time = sampled_before + time.perf_counter() - t_run
        run.sink.truncate(run.kept_before(run.cursor[3]))
        path = run.save_checkpoint() if run.settings["checkpoint"] else None
        raise Interrupted(run.cursor[2], run.result(), path) from None
    finally:
        if bar is not None:
            bar.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    result = run.result()
    run.sink.close(result.meta)
    return result


def _host_block(buf: dict, drop: int, n_draws: int) -> tuple[PyTree, dict]:
    """A block's kept draws on the host, draw axis second: (draws, statistics)."""
    host = jax.tree.map(lambda b: np.swapaxes(to_host(b)[drop:n_draws], 0, 1), buf)
    evals = (host["evals_hi"].astype(np.int64) << 32) + host["evals_lo"].astype(np.int64)
    return host["position"], {"grad_evals": evals, **host["stats"]}


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
