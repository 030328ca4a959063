"""Block planning: how a run's steps are cut into compiled blocks.

Burn-in runs as draws at the run's ``thin`` that are dropped on the host, so burn-in blocks
are full blocks of the one static-length program (:func:`sgmc.run.loop.run_block`), and a
block may hold burn-in draws followed by kept ones. The draws do not depend on the plan.

Draw j (0-based, burn-in's included) is taken right after the 0-based step

    t_j = burn_in mod thin + thin·(j + 1) − 1,

and it is *kept* when it follows burn-in and the kernel allows it:

    kept(j) = [t_j ≥ burn_in] ∧ kernel.keeps(t_j).

The kernel's rule is evaluated on the host for the draws after burn-in (:func:`keep_mask`)
before anything runs, so the number of kept draws, and where each block's kept draws are
(:func:`kept_in`), are known in advance; draws that are not kept are dropped on the host,
as burn-in's are.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sgmc.run.cache import signature

__all__ = ["BLOCK_BYTES", "BLOCK_SECONDS", "MIN_BLOCK_STEPS", "MIN_BLOCK_STEPS_ACCELERATOR",
           "PRNG_IMPLS", "TARGET_BLOCKS",
           "Block", "block_plan", "chain_keys", "default_block_size", "default_draws_per_block",
           "draw_steps", "draws_after", "draws_for_seconds", "keep_mask", "kept_by", "kept_in",
           "stored_mask", "stored_total"]

#: Upper bound on the device memory of one block's draw buffer.
BLOCK_BYTES = 64 * 2**20
#: Blocks per run when the user does not choose (progress granularity).
TARGET_BLOCKS = 20
#: ... but no fewer steps per block than this (when the run has them) on a CPU, and
#: :data:`MIN_BLOCK_STEPS_ACCELERATOR` on a GPU or TPU: there a block boundary cost 1–2.4 ms
#: of the device's time on an H100 (the CNN's ten draws ran 4 % faster in one block of 400
#: steps than in two), where a CPU block boundary costs microseconds.
MIN_BLOCK_STEPS = 256
MIN_BLOCK_STEPS_ACCELERATOR = 1024
#: After the first block, default blocks are cut to about this many seconds, so that a
#: Ctrl-C is answered (and a crash loses) at most that much work.
BLOCK_SECONDS = 1.0


class Block(NamedTuple):
    """One compiled call: ``draws`` draws of ``steps`` steps each; ``full`` runs the
    static-length program; the first ``drop`` draws are burn-in (dropped on the host), and
    so are those of the others that the kernel's ``keeps`` refuses (:func:`kept_in`)."""

    draws: int
    steps: int
    full: bool
    drop: int


def default_draws_per_block(total_draws: int, cap: int, thin: int = 1,
                            min_steps: int = MIN_BLOCK_STEPS) -> int:
    """About 1/20 of the draws (burn-in's included) per block, but at least ``min_steps``
    steps (of ``thin`` steps per draw) and at most ``cap`` draws: if
    possible a divisor of ``total_draws`` within a factor 2 of that, so that every block is
    full and one compiled program runs them all (a partial block compiles a second program).
    The floor keeps a short run in a few calls: each costs ~2 ms on a GPU (dispatch, the
    host's copy of its draws), a 10-step run cut in 20ths cost 19 ms where its steps cost 0.1."""
    floor = -(-min_steps // thin)
    target = max(1, min(cap, total_draws, max(total_draws // TARGET_BLOCKS, floor)))
    lo, hi = (target + 1) // 2, min(cap, 2 * target)
    near = [d for i in range(1, math.isqrt(total_draws) + 1) if total_draws % i == 0
            for d in (i, total_draws // i) if lo <= d <= hi]
    return min(near, key=lambda d: (abs(math.log(d / target)), -d)) if near else target


def default_block_size(total_draws: int, thin: int, bytes_per_draw: int, problem: Any,
                       batch_size: int | None, cap: int | None = None) -> int:
    """Draws per block when the user does not choose (``sample``, ``minimize``):
    :func:`default_draws_per_block`, with a block's draws taking at most :data:`BLOCK_BYTES`
    (``bytes_per_draw``: one draw of every chain), at most ``cap`` draws, and, with streamed
    data, at most about buffer_rows / batch_size steps: a block's minibatches come from one
    buffer of rows, which they then barely reuse (:mod:`sgmc.model.stream`). Blocks have at
    least :data:`MIN_BLOCK_STEPS` steps on a CPU, :data:`MIN_BLOCK_STEPS_ACCELERATOR` elsewhere."""
    caps = [BLOCK_BYTES // max(bytes_per_draw, 1)] + ([] if cap is None else [cap])
    if problem.stream is not None:
        caps.append(problem.data_rows // (batch_size or problem.data_rows) // thin)
    min_steps = (MIN_BLOCK_STEPS if jax.default_backend() == "cpu"
                 else MIN_BLOCK_STEPS_ACCELERATOR)
    return default_draws_per_block(total_draws, max(1, min(caps)), thin, min_steps)


def block_plan(burn_in: int, num_draws: int, thin: int, trailing: int,
               draws_per_block: int, start: int = 0) -> list[Block]:
    """The run's blocks, in order (module docstring), from step ``start`` (0, or where an
    earlier block of any plan ended). Only the leftovers run in the program of traced
    length: the ``burn_in % thin`` steps before the first draw, a partial last block, and
    the steps after the last draw. With ``thin = 1`` that is at most the partial block,
    which the default block size avoids when it can.
    """
    burn_draws, head = divmod(burn_in, thin)
    total = burn_draws + num_draws
    plan = [Block(1, head, False, 1)] if head and start < head else []
    first = max(0, start - head) // thin  # draws (burn-in's included) done before start
    for d in range(first, total, draws_per_block):
        n = min(draws_per_block, total - d)
        plan.append(Block(n, thin, n == draws_per_block, max(0, burn_draws - d)))
    if trailing and start <= head + thin * total:
        plan.append(Block(1, trailing, False, 1))
    return plan


def _draws_by(step: int, burn_in: int, num_draws: int, thin: int) -> tuple[int, int]:
    """(draws taken by the end of step ``step``, burn-in's included; burn-in draws): draw j
    is taken after step ``burn_in % thin + thin·(j + 1)``."""
    burn_draws, head = divmod(burn_in, thin)
    return min(max(0, step - head) // thin, burn_draws + num_draws), burn_draws


def kept_by(step: int, burn_in: int, num_draws: int, thin: int,
            mask: np.ndarray | None = None) -> int:
    """Draws per chain kept by the end of step ``step``: those after burn-in, or, given
    :func:`keep_mask`'s ``mask``, those it marks."""
    done, burn_draws = _draws_by(step, burn_in, num_draws, thin)
    if mask is not None:
        return int(np.count_nonzero(mask[:max(0, done - burn_draws)]))
    return max(0, done - burn_draws)


#: Steps whose ``keeps`` is evaluated at once on the host (bounds the host memory it takes).
_KEEPS_CHUNK = 2**22


def draw_steps(burn_in: int, num_draws: int, thin: int, first: int = 0,
               stop: int | None = None) -> np.ndarray:
    """The 0-based step after which each draw j in [first, stop) is taken, burn-in's
    included (default: all of them): t_j = burn_in mod thin + thin·(j + 1) − 1 (int64)."""
    burn_draws, head = divmod(burn_in, thin)
    j = np.arange(first, burn_draws + num_draws if stop is None else stop, dtype=np.int64)
    return head + thin * (j + 1) - 1


def keep_mask(kernel: Any, burn_in: int, num_draws: int, thin: int) -> np.ndarray:
    """Which of the ``num_draws`` draws after burn-in are kept: keeps(t_j) for j ≥
    burn_in // thin, with t_j from :func:`draw_steps` (burn-in's draws are never kept, and
    take no memory here: a run of 2³¹ steps, nearly all burn-in, needs a mask of its few
    draws). ``kernel.keeps`` (:meth:`~sgmc.contracts.kernel.Kernel.keeps`) is called on
    int32 arrays of steps (as traced in the loop, so that the host and the loop agree), a
    few million at a time."""
    burn_draws = burn_in // thin
    mask = np.zeros(num_draws, bool)
    for a in range(0, num_draws, _KEEPS_CHUNK):
        t = draw_steps(burn_in, num_draws, thin, burn_draws + a,
                       burn_draws + min(a + _KEEPS_CHUNK, num_draws))
        got = np.asarray(_keeps_at(kernel, jnp.asarray(t, jnp.int32)))
        if got.shape not in ((), t.shape):
            raise TypeError(f"keeps(t) must return one bool per step (shape {t.shape}), "
                            f"got shape {got.shape}")
        mask[a:a + len(t)] = np.broadcast_to(got.astype(bool), t.shape)
    return mask


def _keeps_at(kernel: Any, t: jax.Array) -> Any:
    """``kernel.keeps(t)``; for a pytree kernel compiled once per kernel structure (eager,
    ~0.25 ms a call), its hyper-parameters arguments; eagerly otherwise, or when the
    compiled call fails (so that the error is its own)."""
    if signature(kernel) is not None:
        try:
            return _keeps_jit(kernel, t)
        except Exception:  # called again below: its own error, as before
            pass
    return kernel.keeps(t)


@jax.jit
def _keeps_jit(kernel: Any, t: jax.Array) -> jax.Array:
    return kernel.keeps(t)


def kept_in(block: Block, t0: int, burn_in: int, thin: int,
            mask: np.ndarray) -> np.ndarray:
    """Indices, within ``block`` (which starts at step ``t0``), of the draws it keeps: its
    draws after its ``drop`` first ones that :func:`keep_mask`'s ``mask`` marks. The
    blocks of leftover steps (before the first draw, after the last) keep none."""
    if block.drop >= block.draws:
        return np.zeros(0, np.int64)
    # The block's first draw after burn-in, as an index of the mask (which starts there).
    first = (t0 - burn_in % thin) // thin - burn_in // thin
    local = mask[first + block.drop:first + block.draws]
    return block.drop + np.flatnonzero(local)


def draws_after(step: int, burn_in: int, num_draws: int, thin: int) -> int:
    """Draws (burn-in's included) still to take after step ``step``."""
    done, burn_draws = _draws_by(step, burn_in, num_draws, thin)
    return burn_draws + num_draws - done


def draws_for_seconds(seconds_per_draw: float, target: float, remaining: int) -> int:
    """Draws per block so that a block takes about ``target`` seconds at the measured speed:
    preferably a divisor of the ``remaining`` draws in [n/2, n] (every block full, one
    compiled program), else n."""
    n = max(1, min(remaining, int(target / max(seconds_per_draw, 1e-12))))
    near = [d for i in range(1, math.isqrt(remaining) + 1) if remaining % i == 0
            for d in (i, remaining // i) if (n + 1) // 2 <= d <= n]
    return max(near) if near else n


# -- the run's keys and which of its draws are stored -------------------------------------
#: Pseudo-random generators: threefry (JAX's default: reproducible on every backend and
#: under any sharding) or rbg (XLA's RngBitGenerator for the bits; its bits may differ
#: across backends, and JAX draws a vmapped batch of rbg keys from the batch's first key,
#: so a step's randomness is not drawn ahead with other steps' — the draws would depend on
#: the block size — which makes rbg slower than threefry here).
PRNG_IMPLS = {"threefry": "threefry2x32", "rbg": "rbg"}


def chain_keys(settings: Any) -> tuple[jax.Array, jax.Array]:
    """(init keys, run keys), one per chain: chain c uses ``split(key(seed), chains)[c]``,
    itself split into an initialisation key and a run key; step t uses
    ``fold_in(run_key, t)``, so the draws do not depend on how the run is cut into blocks.

    The splits run as one compiled program (eagerly, the vmapped split took ~1 ms, and a
    run asks for its keys three times), and the last few answers are remembered (keys are
    immutable arrays): the same bits as the eager splits."""
    key = (int(settings.seed), int(settings.num_chains), settings.prng)
    with _KEYS_LOCK:
        found = _KEYS.get(key)
        if found is not None:
            _KEYS.move_to_end(key)
            return found
    impl = PRNG_IMPLS[settings.prng]
    found = _split_keys(jax.random.key(settings.seed, impl=impl), settings.num_chains)
    with _KEYS_LOCK:
        _KEYS[key] = found
        while len(_KEYS) > _KEYS_SIZE:
            _KEYS.popitem(last=False)
    return found


#: chain_keys' last answers by (seed, chains, prng); a run asks three times.
_KEYS: OrderedDict = OrderedDict()
_KEYS_SIZE = 8
_KEYS_LOCK = threading.Lock()


@partial(jax.jit, static_argnames=("num_chains",))
def _split_keys(key: jax.Array, num_chains: int) -> tuple[jax.Array, jax.Array]:
    keys = jax.random.split(key, num_chains)
    pairs = jax.vmap(jax.random.split)(keys)
    return pairs[:, 0], pairs[:, 1]


def stored_mask(kernel: Any, settings: Any, kept: np.ndarray | None = None
                ) -> np.ndarray | None:
    """Which of the run's draws after burn-in are stored — the kept ones
    (:func:`sgmc.run.plan.keep_mask`, or ``kept`` when it was computed already; their
    drift statistics alone without store_draws) — or None when nothing per draw is."""
    if not (settings.store_draws or settings.diagnose):
        return None
    if kept is not None:
        return kept
    return keep_mask(kernel, settings.burn_in, settings.num_draws, settings.thin)


def stored_total(mask: np.ndarray | None) -> int:
    """Draws per chain a finished run stores, from :func:`stored_mask`."""
    return 0 if mask is None else int(np.count_nonzero(mask))
