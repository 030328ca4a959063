"""A run's state to and from checkpoint arrays (the file format is :mod:`sgmc.io.checkpoint`).

What a checkpoint holds of a run: the settings, every chain's kernel state and counters as
a flat list of leaves (restored into the structure ``kernel.init`` gives, so no code is
stored), where the kept draws are (a draws folder, :mod:`sgmc.io.folder`) and how many count,
and the chain-stacked positions' tree structure (JSON, for rebuilding that structure
without the user's init).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sgmc.errors import CheckpointError
from sgmc.io.serial import leaf_names, tree_from_spec, tree_like, tree_spec

__all__ = ["Settings", "fill", "position_spec", "position_template"]

PyTree = Any


class Settings(NamedTuple):
    """A run's settings, as validated by :func:`sgmc.sample` (stored in checkpoints)."""

    num_steps: int
    burn_in: int
    thin: int
    seed: int
    num_chains: int
    prng: str
    draws_per_block: int
    checkpoint: str | None
    checkpoint_every: int | None
    stream_to: str | None
    #: After the first block, blocks are cut to about this many seconds
    #: (:data:`sgmc.run.plan.BLOCK_SECONDS`) when they take more than twice that;
    #: None keeps ``draws_per_block`` (the user chose it, or the data stream).
    block_seconds: float | None = None
    #: False: no draw is stored (``sample(..., store_draws=False)``; the predictive moments
    #: and the final state are the run's outcome).
    store_draws: bool = True
    #: The spread of the chains' starts around one ``init`` (``sample(..., init_spread=)``);
    #: recorded, not needed to resume (the states are in the checkpoint).
    init_spread: float = 0.0
    #: Full blocks compiled without loops (``sample(..., unroll=True)``); the draws are the
    #: same either way.
    unroll: bool = False
    #: Record the drift statistics of every kept draw (:mod:`sgmc.run.stats`) and check
    #: them at the end (``sample(..., diagnose=True)``); False for ``minimize`` and for
    #: checkpoints written before they existed.
    diagnose: bool = False

    @property
    def num_draws(self) -> int:
        """Draws taken after burn-in (those ``kernel.keeps`` refuses included)."""
        return (self.num_steps - self.burn_in) // self.thin


def position_spec(positions: PyTree) -> dict:
    """The chain-stacked positions' structure, shapes and dtypes (JSON), for checkpoints,
    with every leaf's name (its path, in JAX's leaf order).

    Positions of dicts, lists and tuples are rebuilt from this alone
    (:func:`position_template`); other pytrees (namedtuples, dataclasses, Equinox modules,
    Flax NNX states) only from a template of their structure (``rebuilt`` is False)."""
    names: list[str] = []
    spec, order = tree_spec(positions, names)
    jax_names = [""] * len(order)
    for k, i in enumerate(order):
        jax_names[i] = names[k]
    leaves = jax.tree.leaves(positions)
    out = {"spec": spec, "order": order, "shapes": [list(x.shape) for x in leaves],
           "dtypes": [str(x.dtype) for x in leaves], "names": jax_names}
    out["rebuilt"] = jax.tree.structure(_rebuilt(out)) == jax.tree.structure(positions)
    return out


def _node_types(spec: Any) -> set[str]:
    """Names of the pytree node types in a tree description that are not dicts, lists,
    tuples or None (:func:`sgmc.io.serial.encode_tree`)."""
    (kind, body), = spec.items()
    if kind == "node":
        name = "dicts with keys that are not strings" if body["type"] == "builtins.dict" \
            else body["type"]
        return {name}.union(*(_node_types(c) for c in body["children"]))
    if kind == "dict":
        return set().union(*(_node_types(c) for c in body.values()))
    if kind in ("list", "tuple"):
        return set().union(*(_node_types(c) for c in body))
    return set()


def _rebuilt(spec: dict) -> PyTree:
    """Shapes and dtypes of the positions, in the structure the description alone gives."""
    leaves = [jax.ShapeDtypeStruct(tuple(s), jnp.dtype(d))
              for s, d in zip(spec["shapes"], spec["dtypes"], strict=True)]
    return tree_from_spec(spec["spec"], spec["order"], leaves)


def position_template(spec: dict, like: PyTree = None, path: str = "the checkpoint"
                      ) -> PyTree:
    """Shapes and dtypes of the positions described by :func:`position_spec`: in the
    structure of ``like`` (a pytree of one position's structure, e.g. the run's ``init``;
    its leaves are not read) when given, each leaf matched by its name, else rebuilt from
    the description (dicts, lists, tuples).

    Raises:
        CheckpointError: the positions need a template and ``like`` is None, or ``like``
            does not fit them.
    """
    if like is None:
        if spec.get("rebuilt", True) is False:
            kinds = sorted(_node_types(spec["spec"])) or ["namedtuples"]
            raise CheckpointError(
                f"{path} holds positions of {', '.join(kinds)}, which a checkpoint cannot "
                "rebuild by itself: pass like=init (any pytree of the positions' structure) "
                "to sgmc.resume")
        return _rebuilt(spec)
    leaves = [jax.ShapeDtypeStruct(tuple(s), jnp.dtype(d))
              for s, d in zip(spec["shapes"], spec["dtypes"], strict=True)]
    names = spec.get("names") or leaf_names(_rebuilt(spec))
    try:
        return tree_like(like, names, leaves, path)
    except ValueError as err:
        raise CheckpointError(str(err)) from None


def fill(template: PyTree, leaves: list[np.ndarray], path: str) -> PyTree:
    """``template``'s structure with the stored leaves, which must match its shapes."""
    want = jax.tree.leaves(template)
    if len(want) != len(leaves) or any(
            tuple(w.shape) != x.shape or jnp.dtype(w.dtype) != x.dtype
            for w, x in zip(want, leaves, strict=False)):
        raise CheckpointError(f"{path}: the stored sampler state does not fit this problem "
                              "and sampler (different shapes)")
    return jax.tree.unflatten(jax.tree.structure(template), [jnp.asarray(x) for x in leaves])
