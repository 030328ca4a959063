"""A run's state to and from checkpoint arrays (the file format is :mod:`sgmc.io.checkpoint`).

What a checkpoint holds of a run: the settings, every chain's kernel state and counters as
a flat list of leaves (restored into the structure ``kernel.init`` gives, so no code is
stored), where the kept draws are (a draws folder, :mod:`sgmc.io.folder`) and how many count,
and the chain-stacked positions' tree structure (JSON, for rebuilding that structure
without the user's init).
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sgmc._tree import first_point
from sgmc.errors import CheckpointError
from sgmc.io import checkpoint as ckpt
from sgmc.io.serial import leaf_names, tree_from_spec, tree_like, tree_spec
from sgmc.run.loop import Counters, drawn, init_chains
from sgmc.run.moments import Moments
from sgmc.run.plan import chain_keys
from sgmc.run.preflight import predict_output
from sgmc.run.signals import ByIdentity

__all__ = ["Settings", "fill", "header", "position_spec", "position_template", "restore"]

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
    #: The run's identity (a random hex string, empty without checkpoint or stream_to),
    #: written in its checkpoints and its draws folder: a checkpoint resumes only with the
    #: draws of its own run, not those a later run on the same path wrote.
    run_id: str = ""

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
    order = leaf_names(like)
    if order != list(names) and sorted(order) == sorted(names):
        # The state's leaves are stored in the run's order; a template of another order
        # would put every array in another's place.
        raise CheckpointError(
            f"like= holds the run's arrays in another order ({', '.join(order)}; the run's: "
            f"{', '.join(names)}): pass the run's own init (the same class, with its fields "
            "in the same order), so that the stored state fits")
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


@partial(jax.jit, static_argnames=("predict",))
def _predict_at(problem: Any, kernel: Any, state: Any, predict: ByIdentity) -> jax.Array:
    return predict(drawn(problem, kernel)(state))


def predict_probe(problem: Any, kernel: Any, states: Any, predict: Any) -> dict:
    """``predict`` at chain 0's draw, summarised (:func:`sgmc.io.checkpoint.summary`): what
    tells the run's ``predict`` from another function of the same output shape on resume."""
    state = first_point(states)
    return ckpt.summary(jax.device_get(_predict_at(problem, kernel, state, ByIdentity(predict))))


def header(run: Any, states: Any, t0: int, count: int, folder: str | None,
           moments: Any, num_leaves: int) -> dict:
    """The header of a checkpoint of ``run`` (a :class:`sgmc.run.host.Run`) at step ``t0``
    with ``count`` kept draws in ``folder`` and ``num_leaves`` state arrays: its settings,
    where it stands, and what the run that resumes it must reproduce — the fingerprint of
    the problem and the sampler, the model probe at chain 0's position, and ``predict``'s
    output and value there."""
    problem, sampler = run.given
    settings = {k: v for k, v in run.settings._asdict().items() if k != "checkpoint"}
    predict = None if moments is None else {
        "shape": list(moments.mean.shape[1:]), "dtype": str(moments.mean.dtype),
        "probe": predict_probe(problem, sampler, states, run.predict)}
    point = ckpt.probe_point(states.position, run.position_spec)
    return {"settings": settings, "positions": run.position_spec, "t0": t0, "kept": count,
            "draws_folder": folder, "predict": predict, "num_state_leaves": num_leaves,
            "compile_time": run.compile_time,
            "sampling_time": run.sampling_time,
            "fingerprint": dict(ckpt.fingerprint(problem, sampler),
                                probe=ckpt.probe(problem, point))}


def restore(path: str, header: dict, arrays: dict, problem: Any, sampler: Any,
            like: PyTree = None, predict: Any = None) -> tuple[Settings, Any, Any, Any]:
    """(settings, states, counters, moments) of the checkpoint at ``path`` (its header and
    verified arrays, :func:`sgmc.io.checkpoint.read`), after checking that ``problem``,
    ``sampler`` and ``predict`` are the run's: the fingerprint, then — once the state is
    rebuilt — the model probe and ``predict``'s output shape and value at chain 0's draw.

    Raises:
        CheckpointError: naming what differs.
    """
    found = ckpt.fingerprint(problem, sampler)
    for what in ("problem", "sampler"):
        if header["fingerprint"][what] != found[what]:
            raise CheckpointError(
                f"{path} was written by a run of a different {what} (its model, data or "
                "settings differ); resume with the problem and sampler the run started with")
    settings = Settings(**dict(header["settings"], checkpoint=path))
    positions = position_template(header["positions"], like, path)
    template = jax.eval_shape(init_chains, problem, sampler, positions,
                              chain_keys(settings)[0])
    stored = header.get("predict")
    if (stored is None) != (predict is None):
        raise CheckpointError(
            f"{path} was written by a run {'with' if stored else 'without'} predict=...; "
            f"resume it {'with the same' if stored else 'without'} predict")
    moments = None
    if predict is not None:
        if not callable(predict):
            raise TypeError(f"predict must be a function of one draw returning an array, "
                            f"got {type(predict).__name__}")
        out = predict_output(problem, sampler, template, predict)
        if (list(out.shape), str(Moments.dtype(out))) != (stored["shape"], stored["dtype"]):
            raise CheckpointError(
                f"{path} holds the moments of a predict of shape {stored['shape']} "
                f"({stored['dtype']}); this predict gives {list(out.shape)} ({out.dtype}): "
                "resume with the run's predict")
        moments = Moments.template(settings.num_chains, out)
    template = (template, Counters.template(settings.num_chains), moments)
    states, counters, moments = fill(template, [arrays[f"state/{i}"] for i in
                                                 range(header["num_state_leaves"])], path)
    # Same names, another body: the model's energy and gradient at the stored position.
    probe = header["fingerprint"].get("probe")
    if probe is None:
        raise CheckpointError(f"{path} has no model probe (written by an older sgmc): it "
                              "cannot be checked against this problem")
    differs = ckpt.probe_mismatch(probe, ckpt.probe(
        problem, ckpt.probe_point(states.position, header["positions"])))
    if differs:
        raise CheckpointError(f"{path} was written by a run of a different model: {differs}; "
                              "resume with the problem the run started with")
    if predict is not None:
        differs = ckpt.summary_mismatch(stored["probe"], predict_probe(problem, sampler,
                                                                       states, predict))
        if differs:
            raise CheckpointError(
                f"{path} was written by a run with another predict: its value at the "
                f"checkpoint's draw (chain 0) differs: {differs}. Its moments so far are "
                "of the run's predict, and would mix with this one's: resume with the "
                "run's predict")
    return settings, states, counters, moments


def draws_folder(path: str, header: dict) -> str:
    """Where the kept draws of the checkpoint at ``path`` are: the folder its header names,
    relative to the checkpoint (so that the two move together)."""
    return os.path.join(os.path.dirname(os.path.abspath(path)), header["draws_folder"])
