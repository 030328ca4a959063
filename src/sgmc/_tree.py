"""Small pytree helpers used by the dynamics (positions may be any pytree of arrays)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

PyTree = Any


def normal_like(key: jax.Array, tree: PyTree) -> PyTree:
    """Independent standard normal draws shaped like ``tree``.

    All leaves come from ONE flat draw cut into pieces: XLA:CPU compiles each
    ``random.normal`` separately (about a second apiece), so one draw per leaf made a
    four-leaf network's step take 5 s to compile. A single leaf is drawn directly.
    """
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    if len(leaves) == 1:
        x = leaves[0]
        return jax.tree_util.tree_unflatten(treedef, [jax.random.normal(key, x.shape, x.dtype)])
    dtype = jnp.result_type(*leaves)
    flat = jax.random.normal(key, (sum(x.size for x in leaves),), dtype)
    draws, start = [], 0
    for x in leaves:
        draws.append(flat[start:start + x.size].reshape(x.shape).astype(x.dtype))
        start += x.size
    return jax.tree_util.tree_unflatten(treedef, draws)


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
