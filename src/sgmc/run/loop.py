"""The compiled loop: blocks of steps of any kernel (the contract of :mod:`sgmc.contracts`).

A block is one loop over steps inside one ``jit``, keeping a draw every ``thin`` steps; each
step moves every chain (``vmap``; a single chain runs unbatched: on XLA:CPU batching one
chain still costs). The loops sit outside the ``vmap``, so the step index t is one number
shared by all chains: periodic work keyed on it (an SVRG snapshot) stays a real branch
instead of a select that would run the full pass at every step. Nothing is skipped under
``lax.cond`` in the loop (an estimator's O(N) table would be copied every step).

Two programs: :func:`run_block` runs ``n_draws`` draws of ``thin`` steps with a *static* trip
count (a traced trip count cost 25–35 % more per step on XLA:CPU; with ``unroll`` its steps
are written out with no loop at all), and :func:`run_steps` a traced number, for a run's
leftovers (a partial last block, burn-in steps that do not fill a draw).

Randomness ahead (:mod:`sgmc.rng`): the draws of up to :data:`MAX_CHUNK` steps are made in
one batched call (the step run in *record* mode under ``vmap`` over steps, everything but its
draws removed as dead code), then the steps run in *replay* mode. That pays on a CPU as soon
as two steps' draws fit in :data:`CHUNK_BYTES` (written at once and read back step by step,
they must stay in the caches), on an accelerator only when a step draws at most
:data:`ACCELERATOR_STEP_BYTES` (all :data:`MAX_CHUNK` steps at once). Otherwise each step
draws its own (*live* mode), and the noise fuses into the update instead of going through
memory: on an H100, live was 3 µs a step faster for a 79.5k-parameter MLP (318 KB of draws
a step), 9 µs for a 1.8M one and 235 µs for a 36.8M one, and 2–3 µs slower for logistic
regressions (< 1 KB a step).
Optimisation barriers keep every step's arithmetic (with its key, in live mode) apart from
the rest, fused the same way in every loop structure, so the draws are bitwise the same for
any block size. Threefry keys only: JAX batches ``rbg`` keys by drawing the whole batch
from its first key, so rbg steps are always live.

Finiteness is checked after every draw (every ``thin`` steps, burn-in's draws included) and
at the end of the run's leftover programs, not per step: ``Counters.bad_step`` is the first
such check that found a chain's position non-finite.

Predictive averages (``sample(..., predict=fn)``): at every kept draw — the draw after step t
with lo ≤ t < hi (``window``: after burn-in, before the steps left over after the last draw)
and ``kernel.keeps(t)`` — each chain adds x = fn(draw) to its running moments
(Welford's update, :mod:`sgmc.run.moments`). The predicate is one unbatched boolean (t is
shared by the chains), so the update sits under a real ``lax.cond``: fn runs only at kept
draws. The drift statistics (``sample(..., diagnose=True)``, :mod:`sgmc.run.stats`) are
computed under the same predicate, from their own random stream, apart from the steps'
arithmetic.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sgmc._tree import all_finite
from sgmc.contracts.kernel import check_info
from sgmc.rng import Rng, record, replay
from sgmc.run.moments import welford
from sgmc.run.stats import STREAM, stacks_replicas, statistics

__all__ = ["ACCELERATOR_STEP_BYTES", "CHUNK_BYTES", "MAX_CHUNK", "Counters", "init_chains",
           "run_block", "run_steps"]

#: Most steps whose randomness is drawn at once (beyond ~100 steps the gain per step is
#: small: 12 µs at 100, 10 µs at 1000).
MAX_CHUNK = 256
#: On a CPU, the most memory one chunk's draws may take for all chains: 8 MiB made an MLP's
#: step 1.3–1.65× slower than 2 MiB on a 2-core VM (benchmarks/README.md, "Chunks").
CHUNK_BYTES = 2 * 2**20
#: On an accelerator, randomness is recorded ahead (all :data:`MAX_CHUNK` steps at once)
#: only when a step draws at most this many bytes for all chains (module docstring).
ACCELERATOR_STEP_BYTES = 32 * 2**10


class Counters(NamedTuple):
    """Per-chain running counters carried across blocks (stored in checkpoints as leaves)."""

    evals_hi: jax.Array  # per-example gradient evaluations, as a 64-bit (hi, lo) uint32 pair
    evals_lo: jax.Array
    bad_step: jax.Array  # the first checked step whose state was non-finite, or -1
    # At that step, the first replica (num_replicas > 1) with a non-finite position, else -1.
    bad_replica: jax.Array

    #: Every field's dtype, in order (a checkpoint's counters are restored to these).
    DTYPES = (jnp.uint32, jnp.uint32, jnp.int32, jnp.int32)

    @classmethod
    def start(cls, num_chains: int, init_evals: int) -> Counters:
        """Counters of ``num_chains`` fresh chains whose ``init`` spent ``init_evals`` (host
        arrays: they travel with the first block's arguments, no device call of their own)."""
        n = num_chains
        return cls(np.full(n, init_evals >> 32, np.uint32),
                   np.full(n, init_evals & 0xFFFFFFFF, np.uint32),
                   np.full(n, -1, np.int32), np.full(n, -1, np.int32))

    @classmethod
    def template(cls, num_chains: int) -> Counters:
        """Shapes and dtypes of ``num_chains`` chains' counters (to restore a checkpoint)."""
        return cls(*(jax.ShapeDtypeStruct((num_chains,), t) for t in cls.DTYPES))


def _first_bad_replica(position: Any) -> jax.Array:
    """Per-replica finiteness of one chain's replica-stacked position: (all finite, index of
    the first replica with a non-finite leaf, or -1)."""
    ok = jax.vmap(all_finite)(position)
    return jnp.all(ok), jnp.where(jnp.all(ok), -1, jnp.argmin(ok)).astype(jnp.int32)


def _add_u64(hi, lo, n):
    lo_new = lo + n.astype(jnp.uint32)
    return hi + (lo_new < lo).astype(jnp.uint32), lo_new


def _nbytes(x: Any) -> int:
    size = int(np.prod(x.shape, dtype=np.int64))
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        return size * 16  # a typed key's payload: 8 bytes (threefry) or 16 (rbg), at most
    return size * np.dtype(x.dtype).itemsize


def _largest_divisor(n: int, at_most: int) -> int:
    """The largest divisor of n that is ≤ at_most (≥ 1)."""
    return max(d for d in range(1, min(n, at_most) + 1) if n % d == 0)


def _loop(n: int, body, carry, unroll: bool = False):
    """``fori_loop(0, n, body, carry)``; no loop at all when n = 1 (a loop of one trip still
    costs its overhead on XLA:CPU) or with ``unroll`` (the n bodies one after another: see
    :func:`run_block`)."""
    if n == 1:
        return body(0, carry)
    if unroll:
        for i in range(n):
            carry = body(i, carry)
        return carry
    return jax.lax.fori_loop(0, n, body, carry)


class _Parts(NamedTuple):
    """What both block programs share (see :func:`_parts`)."""

    states: Any
    counters: Counters
    stat_zero: dict
    chunk: int         # most steps whose randomness is drawn at once
    randomness: Any    # (t, K) -> the draws of steps t .. t + K − 1 (None: live mode)
    one_step: Any      # (t, states, counters, draws, i) -> (states, counters, info)
    check: Any         # (states, counters, t) -> counters with non-finite states marked
    accumulate: Any
    record: Any
    outer: Any
    moments: Any       # the chains' Moments, as the loop carries them (None: no predict)
    observe: Any       # (moments, states, t, done) -> moments with a kept draw added
    draw_axis: int     # where a buffer's draw axis sits inside the loop (after the chains)


def drawn(problem, kernel):
    """A chain's draw from its state: the kernel's point (the first replica's, for replica
    exchange) on the model's scale (``Problem.constrain``: the identity unless the problem
    has constrained parameters; per replica for a kernel whose draws stack the replicas,
    :func:`sgmc.run.stats.stacks_replicas`)."""
    def draw(state):
        stacked = stacks_replicas(kernel, state)
        return (jax.vmap(problem.constrain) if stacked else problem.constrain)(kernel.draw(state))

    return draw


def _parts(problem, kernel, states, counters, run_keys, t0, moments=None, window=None,
           predict=None, store=True, stats=False) -> _Parts:
    """The chain-level step with its randomness drawn ahead, the per-step bookkeeping, the
    zero accumulators of the per-draw statistics (reduced as ``kernel.info_spec`` says) and,
    with ``predict``, the update of the predictive moments at kept draws. ``store=False``
    records no draw; ``stats`` records the drift statistics (:mod:`sgmc.run.stats`) of
    every kept draw."""
    single = counters.bad_step.shape[0] == 1
    if single:
        def inner(tree):
            return jax.tree.map(lambda x: x[0], tree)

        def outer(tree, axis=0):
            return jax.tree.map(lambda x: jnp.expand_dims(x, axis), tree)

        def batch(fn, in_axes):
            return fn

        fold, finite, draw = jax.random.fold_in, all_finite, drawn(problem, kernel)
        replica_check = _first_bad_replica
    else:
        def inner(tree):
            return tree

        def outer(tree, axis=0):
            return tree

        batch = partial(jax.vmap)
        fold = jax.vmap(jax.random.fold_in, in_axes=(0, None))
        finite, draw = jax.vmap(all_finite), jax.vmap(drawn(problem, kernel))
        replica_check = jax.vmap(_first_bad_replica)
    states, counters, keys, moments = inner((states, counters, run_keys, moments))
    # Replica-stacked kernels: which replica went non-finite first is recorded too.
    stacked = kernel.num_replicas > 1

    def live(state, key, t):
        return kernel.step(problem, state, Rng(key), t)

    def recorded(state, key, t):
        return record(lambda rng: kernel.step(problem, state, rng, t), key)

    def replayed(state, draws, t):
        return replay(lambda rng: kernel.step(problem, state, rng, t), draws)

    live_b = batch(live, in_axes=(0, 0, None))
    info_shape = jax.eval_shape(live_b, states, keys, t0)[1]
    check_info(kernel, info_shape)
    spec = kernel.info_spec
    stat_keys = sorted(k for k in info_shape if spec[k] != "total")
    stat_zero = {k: jnp.zeros(info_shape[k].shape, jnp.float32) for k in stat_keys}

    threefry = str(jax.random.key_impl(keys)) == "threefry2x32"
    draw_shapes = jax.eval_shape(batch(recorded, in_axes=(0, 0, None)), states, keys, t0)
    per_step = sum(_nbytes(x) for x in jax.tree.leaves(draw_shapes))
    if jax.default_backend() == "cpu":  # (module docstring)
        fits = min(MAX_CHUNK, CHUNK_BYTES // max(1, per_step))
    else:
        fits = MAX_CHUNK if per_step <= ACCELERATOR_STEP_BYTES else 1
    chunk = fits if threefry and per_step and fits >= 2 else 1
    if chunk == 1:
        # Live (module docstring). The key passes the barrier with the state: nothing of
        # step t + 1 can be computed, or fused, with step t.
        guard = jax.lax.optimization_barrier if threefry and per_step else (lambda x: x)

        def randomness(t, k):
            return None

        def moved(t, states, draws, i):
            states, key = guard((states, fold(keys, t)))
            return guard(live_b(states, key, t))
    else:
        record_b = batch(recorded, in_axes=(0, 0, None))
        replay_b = batch(replayed, in_axes=(0, 0, None))

        def randomness(t, k):
            ts = t + jnp.arange(k, dtype=jnp.int32)
            # The state is only read for its shapes: everything but the draws is dead code.
            draws = jax.vmap(lambda tt: record_b(states, fold(keys, tt), tt))(ts)
            # Kept apart from the step's own arithmetic: no program may fuse the two
            # differently (draws must not depend on how a run is cut into blocks).
            return jax.lax.optimization_barrier(draws)

        def moved(t, states, draws, i):
            # Barriers on both sides: the step's arithmetic is fused the same way in every
            # loop structure (chunks of draws, chunks within a draw, traced lengths), so
            # the rounding, and the draws, do not depend on the block size.
            barrier = jax.lax.optimization_barrier
            mine, states = barrier((jax.tree.map(lambda d: d[i], draws), states))
            return barrier(replay_b(states, mine, t))

    def one_step(t, states, c, draws, i):
        """Step t of every chain, with its randomness ``draws[i]``: (states, counters, info)."""
        states, info = moved(t, states, draws, i)
        hi, lo = _add_u64(c.evals_hi, c.evals_lo, info["grad_evals"])
        return states, c._replace(evals_hi=hi, evals_lo=lo), info

    def check(states, c, t):
        """``c`` with step t recorded as the first bad one of each chain whose position is
        non-finite (not yet recorded). Called after every draw and at the end of a program,
        never per step: a pass over a large model's parameters cost 5 % of an H100's step
        (the draws kept are the same: a non-finite state stays non-finite)."""
        if stacked:
            ok, replica = replica_check(states.position)
        else:
            ok, replica = finite(states.position), c.bad_replica
        fresh = (c.bad_step < 0) & ~ok
        return c._replace(bad_step=jnp.where(fresh, t, c.bad_step),
                          bad_replica=jnp.where(fresh, replica, c.bad_replica))

    def accumulate(acc, info, fresh):
        return {k: jnp.asarray(info[k], jnp.float32) if spec[k] == "last" else
                jnp.where(fresh, 0.0, acc[k]) + jnp.asarray(info[k], jnp.float32)
                for k in stat_keys}

    def kept(t, done):
        """Whether the draw after step t is kept: t in the window and ``kernel.keeps(t)``
        (and ``done``: t ends a draw). One unbatched boolean: a real branch."""
        return (done & (t >= window[0]) & (t < window[1])
                & jnp.reshape(jnp.asarray(kernel.keeps(t), bool), ()))

    statistics_b = batch(statistics(problem, kernel), in_axes=(0, 0)) if stats else None

    def draw_statistics(states, t, done):
        """The drift statistics of every chain's draw after step t if it is kept, else
        zeros; a minibatch from each chain's own stream (:mod:`sgmc.run.stats`)."""
        keys_t = fold(fold(keys, STREAM), t)
        states = jax.lax.optimization_barrier(states)
        shapes = jax.eval_shape(statistics_b, states, keys_t)
        return jax.lax.cond(kept(t, done), statistics_b,
                            lambda s, k: jax.tree.map(lambda x: jnp.zeros(x.shape, x.dtype),
                                                      shapes), states, keys_t)

    def record_draw(states, c, acc, t, done=True):
        out = {}
        if store:
            out.update(position=draw(states), evals_hi=c.evals_hi, evals_lo=c.evals_lo,
                       stats=acc)
        if stats:
            out["draw_stats"] = draw_statistics(states, t, done)
        return out

    welford_b = batch(welford, in_axes=(0, 0))
    predict_b = None if predict is None else batch(predict, in_axes=0)

    def observe(m, states, t, done=True):
        """``m`` with predict(draw) added if the draw after step t is kept (:func:`kept`)."""
        if predict is None:
            return m
        return jax.lax.cond(kept(t, done), lambda m: welford_b(m, predict_b(draw(states))),
                            lambda m: m, m)

    return _Parts(states, counters, stat_zero, chunk, randomness, one_step, check, accumulate,
                  record_draw, outer, moments, observe, 0 if single else 1)


def _put(buf, row, slot, axis):
    return jax.tree.map(lambda b, x: jax.lax.dynamic_update_index_in_dim(b, x, slot, axis),
                        buf, row)


def _empty_buffer(template, slots, axis):
    """Zeros for ``slots`` rows like ``template``, the slot axis at ``axis`` (after the
    chains: draws reach the host as (chains, draws, ...), the run's layout, untransposed)."""
    return jax.tree.map(lambda x: jnp.zeros((*jnp.shape(x)[:axis], slots, *jnp.shape(x)[axis:]),
                                            jnp.result_type(x)), template)


@partial(jax.jit, static_argnames=("n_draws", "thin", "predict", "store", "unroll", "stats"))
def run_block(problem, kernel, states, counters, run_keys, t0, moments=None, window=None, *,
              n_draws, thin, predict=None, store=True, unroll=False, stats=False):
    """Run ``n_draws`` × ``thin`` steps of every chain from global step ``t0``, recording a
    draw after every ``thin`` steps. Returns (states, counters, buffer, moments) with the
    buffer's leaves shaped (chains, n_draws, ...) (none with ``store=False``), and
    ``moments`` (:class:`~sgmc.run.moments.Moments`, or None without ``predict``) updated
    at the kept draws (module docstring; ``window`` = (lo, hi), int32).

    ``unroll=True`` writes the block's steps one after another, with no loop: a program of
    n_draws × thin steps (``sample(..., unroll=True)`` keeps it short). On XLA:CPU a
    convolution's gradient inside any while loop runs 10–25× slower than outside one
    (jax-ml/jax#12868); without a loop it runs at full speed. The draws are the looped
    program's up to float rounding: the barriers keep every step apart, but XLA may still
    fuse the longer program's arithmetic differently (last-bit differences)."""
    p = _parts(problem, kernel, states, counters, run_keys, t0, moments, window, predict,
               store, stats)

    # Randomness is drawn for a chunk of K steps: K = m·thin spanning m whole draws (m
    # divides n_draws) when thin is small, else K divides thin and r = thin / K chunks make
    # one draw. All loops have static bounds (a `lax.scan` over `arange(n_draws)` collecting
    # the draws as its output measured ~20 % slower per step than writing them into slots).
    if thin <= p.chunk:
        m = _largest_divisor(n_draws, p.chunk // thin)
        k, r = m * thin, 1
    else:
        m, k = 1, _largest_divisor(thin, p.chunk)
        r = thin // k

    def steps(carry, t, n, draws, offset):
        def body(i, carry):
            states, c, acc = carry
            states, c, info = p.one_step(t + i, states, c, draws, offset + i)
            return states, c, p.accumulate(acc, info, False)

        return _loop(n, body, carry, unroll)

    def group(g, carry):
        states, c, acc, buf, mom = carry
        t_g = t0 + g * (m * thin)
        if r == 1:
            draws = p.randomness(t_g, k)

            def one_draw(j, carry):
                states, c, acc, buf, mom = carry
                states, c, acc = steps((states, c, acc), t_g + j * thin, thin, draws, j * thin)
                t_end = t_g + (j + 1) * thin - 1
                c = p.check(states, c, t_end)
                mom = p.observe(mom, states, t_end)
                row = p.record(states, c, acc, t_end)
                return states, c, p.stat_zero, _put(buf, row, g * m + j, p.draw_axis), mom

            return _loop(m, one_draw, carry, unroll)

        def chunk(i, inner):
            t_c = t_g + i * k
            return steps(inner, t_c, k, p.randomness(t_c, k), 0)

        states, c, acc = _loop(r, chunk, (states, c, acc), unroll)
        c = p.check(states, c, t_g + thin - 1)
        mom = p.observe(mom, states, t_g + thin - 1)
        row = p.record(states, c, acc, t_g + thin - 1)
        return states, c, p.stat_zero, _put(buf, row, g, p.draw_axis), mom

    buf = _empty_buffer(p.record(p.states, p.counters, p.stat_zero, t0, False), n_draws,
                        p.draw_axis)
    states, counters, _, buf, mom = _loop(n_draws // m, group,
                                          (p.states, p.counters, p.stat_zero, buf, p.moments),
                                          unroll)
    return p.outer(states), p.outer(counters), p.outer(buf), p.outer(mom)


@partial(jax.jit, static_argnames=("max_draws", "predict", "store", "stats"))
def run_steps(problem, kernel, states, counters, run_keys, t0, n_draws, thin, moments=None,
              window=None, *, max_draws, predict=None, store=True, stats=False):
    """Like :func:`run_block` with a traced number of draws and of steps per draw, into a
    buffer of ``max_draws`` slots: one program for the leftovers of a run."""
    p = _parts(problem, kernel, states, counters, run_keys, t0, moments, window, predict,
               store, stats)
    total, k = n_draws * thin, p.chunk

    # Chunks of k steps (the last one possibly partial). Draw j lives in slot
    # j = (t − t0) // thin and is overwritten at every step of its interval, so it ends
    # holding the interval's last state.
    def chunk(i, carry):
        t_c = t0 + i * k
        draws = p.randomness(t_c, k)

        def body(s, carry):
            states, c, acc, buf, mom = carry
            t = t_c + s
            states, c, info = p.one_step(t, states, c, draws, s)
            acc = p.accumulate(acc, info, (t - t0) % thin == 0)
            done = (t - t0 + 1) % thin == 0
            c = jax.lax.cond(done | (t == t0 + total - 1), lambda c: p.check(states, c, t),
                             lambda c: c, c)
            mom = p.observe(mom, states, t, done)
            row = p.record(states, c, acc, t, done)
            return states, c, acc, _put(buf, row, (t - t0) // thin, p.draw_axis), mom

        return jax.lax.fori_loop(0, jnp.minimum(k, total - i * k), body, carry)

    buf = _empty_buffer(p.record(p.states, p.counters, p.stat_zero, t0, False), max_draws,
                        p.draw_axis)
    states, counters, _, buf, mom = jax.lax.fori_loop(
        0, (total + k - 1) // k, chunk, (p.states, p.counters, p.stat_zero, buf, p.moments))
    return p.outer(states), p.outer(counters), p.outer(buf), p.outer(mom)


@jax.jit
def init_chains(problem, kernel, positions, keys):
    """Every chain's initial state: ``kernel.init`` over stacked positions and keys."""
    return jax.vmap(lambda p, k: kernel.init(problem, p, k))(positions, keys)
