"""Drawing minibatch indices on the device.

Two schemes (:data:`~sgmc.estimators.base.SAMPLING_SCHEMES`): i.i.d. uniform indices with
replacement (no state), or consecutive slices of a random permutation, reshuffled when an
epoch cannot supply a full batch (state: the permutation and a cursor, O(N) int32). A
``batch_size`` of ``None`` means the full data: no indices are drawn.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from .._pytree import pytree_dataclass, static

__all__ = ["Batcher", "PermutationState"]


class PermutationState(NamedTuple):
    perm: jax.Array
    cursor: jax.Array


@pytree_dataclass
class Batcher:
    """Draws the minibatch of one step; ``batch_size=None`` draws nothing (full data)."""

    batch_size: int | None = static(None)
    sampling: str = static("replacement")

    def init(self, num_data: int, key: jax.Array):
        if self.batch_size is None or self.sampling == "replacement":
            return ()
        return PermutationState(jax.random.permutation(key, num_data).astype(jnp.int32),
                                jnp.zeros((), jnp.int32))

    def draw(self, state, key: jax.Array, num_data: int):
        if self.batch_size is None:
            return None, state
        b = self.batch_size
        if self.sampling == "replacement":
            return jax.random.randint(key, (b,), 0, num_data, dtype=jnp.int32), state
        # Reshuffle when fewer than b unused indices remain in this epoch.
        exhausted = state.cursor + b > num_data
        perm = jax.lax.cond(exhausted,
                            lambda: jax.random.permutation(key, num_data).astype(jnp.int32),
                            lambda: state.perm)
        cursor = jnp.where(exhausted, 0, state.cursor)
        idx = jax.lax.dynamic_slice_in_dim(perm, cursor, b)
        return idx, PermutationState(perm, cursor + b)
