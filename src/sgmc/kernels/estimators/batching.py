"""Drawing minibatch indices on the device.

Two schemes (:data:`~sgmc.contracts.estimator.SAMPLING_SCHEMES`): i.i.d. uniform indices with
replacement (no state), or without replacement within an epoch: an epoch is ⌊N/b⌋ batches,
consecutive slices of a pseudo-random permutation of 0..N−1 that is new every epoch (the
last N mod b positions of an epoch's order are skipped). The permutation is never stored:
index i of epoch e is π_e(i), a keyed Feistel network on the smallest even number of bits
covering N, with cycle-walking to stay below N, so the state is a seed, the epoch and a
cursor — O(1) per chain — and a batch costs O(b). A ``batch_size`` of ``None`` means the
full data: no indices are drawn.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sgmc._pytree import pytree_dataclass, static
from sgmc.rng import as_rng

__all__ = ["Batcher", "PermutationState"]


class PermutationState(NamedTuple):
    seed: jax.Array    # (2,) uint32: keys every epoch's permutation
    epoch: jax.Array   # int32
    cursor: jax.Array  # int32: position of the next batch in this epoch's order


_ROUNDS = 6


def _mix(x: jax.Array) -> jax.Array:
    """A 32-bit integer hash (the MurmurHash3 finaliser): every output bit depends on
    every input bit."""
    x = x ^ (x >> 16)
    x = x * np.uint32(0x85EBCA6B)
    x = x ^ (x >> 13)
    x = x * np.uint32(0xC2B2AE35)
    return x ^ (x >> 16)


def permute(i: jax.Array, n: int, seed: jax.Array, epoch: jax.Array) -> jax.Array:
    """π(i) for a pseudo-random permutation π of 0..n−1 keyed by (seed, epoch).

    A balanced Feistel network is a bijection of [0, 4^h) for any round function; applying
    it again until the value falls below n (cycle-walking) restricts it to a bijection of
    [0, n). As 4^h < 4n, under four applications are needed on average.
    """
    half = max(1, math.ceil(math.log2(max(n, 2)) / 2))
    mask = np.uint32(2**half - 1)
    base = _mix(seed[0] ^ _mix(seed[1] + epoch.astype(jnp.uint32) * np.uint32(0x9E3779B9)))
    keys = [_mix(base + np.uint32(r + 1)) for r in range(_ROUNDS)]

    def encrypt(x):
        left, right = x >> half, x & mask
        for k in keys:
            left, right = right, left ^ (_mix(right ^ k) & mask)
        return (left << half) | right

    x = encrypt(i.astype(jnp.uint32))
    x = jax.lax.while_loop(lambda x: jnp.any(x >= n),
                           lambda x: jnp.where(x >= n, encrypt(x), x), x)
    return x.astype(jnp.int32)


@pytree_dataclass
class Batcher:
    """Draws the minibatch of one step; ``batch_size=None`` draws nothing (full data)."""

    batch_size: int | None = static(None)
    sampling: str = static("replacement")

    def init(self, num_data: int, key: jax.Array):
        if self.batch_size is None or self.sampling == "replacement":
            return ()
        return PermutationState(jax.random.bits(key, (2,), jnp.uint32),
                                jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))

    def draw(self, state, rng, num_data: int):
        """(indices, state): this step's minibatch, from ``rng`` (an :class:`sgmc.rng.Rng`)
        or, by epoch permutation, from the state."""
        if self.batch_size is None:
            return None, state
        b = self.batch_size
        if self.sampling == "replacement":
            return as_rng(rng).randint((b,), 0, num_data, dtype=jnp.int32), state
        new_epoch = state.cursor + b > num_data
        epoch = state.epoch + new_epoch.astype(jnp.int32)
        cursor = jnp.where(new_epoch, 0, state.cursor)
        idx = permute(cursor + jnp.arange(b, dtype=jnp.int32), num_data, state.seed, epoch)
        return idx, PermutationState(state.seed, epoch, cursor + b)
