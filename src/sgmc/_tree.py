"""Small pytree helpers used by the dynamics (positions may be any pytree of arrays)."""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp

from sgmc.rng import Rng

PyTree = Any


def normal_like(key: jax.Array, tree: PyTree) -> PyTree:
    """Independent standard normal draws shaped like ``tree`` (see :meth:`Rng.normal_like`)."""
    return Rng(key).normal_like(tree)


def all_finite(tree: PyTree) -> jax.Array:
    """True if every element of every leaf is finite."""
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]))


def zeros_like(tree: PyTree) -> PyTree:
    return jax.tree.map(jnp.zeros_like, tree)


def as_float_tree(tree: PyTree) -> PyTree:
    """Convert every leaf to a floating JAX array (integers become float32)."""
    def conv(x):
        x = jnp.asarray(x)
        return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.float32)
    return jax.tree.map(conv, tree)


# Both are compiled, one program per tree structure: eager, each leaf's slice or broadcast
# was a dispatch of its own (~0.1 ms a leaf on a CPU), on every ``sample`` call.
@jax.jit
def first_point(tree: PyTree) -> PyTree:
    """Chain 0's point of a tree stacked on a leading chain axis: ``x[0]`` for each leaf."""
    return jax.tree.map(lambda x: x[0], tree)


@partial(jax.jit, static_argnums=1)
def broadcast_point(tree: PyTree, n: int) -> PyTree:
    """``n`` copies of the point ``tree`` stacked on a new leading axis."""
    return jax.tree.map(lambda x: jnp.broadcast_to(x, (n, *jnp.shape(x))), tree)
