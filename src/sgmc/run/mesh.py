"""Placing a run on a device mesh: chains (and replicas) on mesh axes, data replicated or split.

``sample(..., mesh=mesh)`` takes a :class:`jax.sharding.Mesh` with an axis named
``"chains"`` and optionally ones named ``"replicas"`` and ``"data"`` — built by
``Mesh(devices, names)`` or by ``jax.make_mesh(shape, names)``, whose axes are *explicit* by
default: sgmc runs on the same devices with the axes as *auto* (:func:`auto_axes`).
Every chain's state (and the PRNG keys and counters) is sharded over ``"chains"`` on its
leading axis; a replica-exchange sampler's replica-stacked state is additionally sharded
over ``"replicas"``. The problem's data are replicated, or, with a ``"data"`` axis, their rows are
split over it: full passes (SVRG snapshots, control-variate anchors, full-batch gradients)
then sum each device's rows locally and add the parts (an all-reduce), and minibatch
gradients gather their rows from wherever they live. The block programs are the same
``jit``-compiled loops as on one device: XLA's SPMD partitioner splits them along the chain
axis (no communication: chains are independent) and inserts the collectives that a swap
between replicas on different devices, or a split full pass, needs. Only the thinned draws
leave the devices, gathered once per block.

Several hosts: call ``jax.distributed.initialize()`` in every process first and build the
mesh over ``jax.devices()`` (all hosts' devices); every process derives the same initial
states and keys from the seed and places them through the host (:func:`put`), and the draws
of every block are gathered to every process (``multihost_utils.process_allgather``).
Every process writes its own checkpoints and streamed draws: on a shared file system give
each its own path (e.g. ``f"run-{jax.process_index()}.ckpt"``).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

CHAINS, REPLICAS, DATA = "chains", "replicas", "data"


def check_mesh(mesh: Any, num_chains: int, sampler: Any, problem: Any) -> None:
    """Validate ``mesh`` for a run of ``num_chains`` chains of ``sampler``."""
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh, got {type(mesh).__name__}")
    names = tuple(mesh.axis_names)
    unknown = [a for a in names if a not in (CHAINS, REPLICAS, DATA)]
    if CHAINS not in names or unknown:
        raise ValueError(f"mesh must have an axis named {CHAINS!r} and may have ones named "
                         f"{REPLICAS!r} and {DATA!r}; got axes {names}")
    n_dev = mesh.shape[CHAINS]
    if num_chains % n_dev:
        raise ValueError(f"num_chains ({num_chains}) must be a multiple of the mesh's "
                         f"{CHAINS!r} axis size ({n_dev})")
    if REPLICAS in names:
        k = sampler.num_replicas
        if k == 1:
            raise ValueError(f"the mesh has a {REPLICAS!r} axis but the sampler is not a "
                             "replica-exchange coupling")
        if k % mesh.shape[REPLICAS]:
            raise ValueError(f"the number of replicas ({k}) must be a multiple of the mesh's "
                             f"{REPLICAS!r} axis size ({mesh.shape[REPLICAS]})")
    if DATA in names:
        if problem.stream is not None or not problem.has_data:
            raise ValueError(f"a {DATA!r} mesh axis needs a problem with in-memory data")
        if problem.data_rows % mesh.shape[DATA]:
            raise ValueError(f"the number of data ({problem.data_rows}) must be a multiple of "
                             f"the mesh's {DATA!r} axis size ({mesh.shape[DATA]})")


def auto_axes(mesh: Mesh) -> Mesh:
    """``mesh`` with every axis of type Auto (the same devices and names). sgmc places its
    arrays with NamedShardings and lets XLA's partitioner split the block programs; over
    Explicit axes (``jax.make_mesh``'s default) JAX's sharding-in-types would instead ask
    every gather of minibatch rows from chain-sharded indices for an explicit output
    sharding (a ShardingTypeError)."""
    types = tuple(getattr(mesh, "axis_types", ()))
    if all(t == AxisType.Auto for t in types):
        return mesh
    return Mesh(mesh.devices, mesh.axis_names, axis_types=(AxisType.Auto,) * len(types))


def split_data(mesh: Mesh, problem: Any) -> tuple[Any, Any]:
    """(problem, its sharding): with a ``"data"`` axis the problem sums its full passes per
    part (``data_shards``) and its data rows are split over that axis; else replicated."""
    replicated = NamedSharding(mesh, P())
    if DATA not in mesh.axis_names:
        return problem, replicated
    problem = problem.split_rows(mesh.shape[DATA])
    sharding = jax.tree.map(lambda _: replicated, problem)
    object.__setattr__(sharding, "data", jax.tree.map(
        lambda _: NamedSharding(mesh, P(DATA)), problem.data))
    return problem, sharding


def shardings(mesh: Mesh, sampler: Any, states: Any) -> tuple[Any, NamedSharding]:
    """How a run's states sit on ``mesh``: (states, per-chain arrays) shardings — the
    states' as a prefix tree (see module docstring)."""
    chains = NamedSharding(mesh, P(CHAINS))
    state_sharding: Any = chains
    if REPLICAS in mesh.axis_names:
        # Replica-stacked parts of the coupling's state are split over both axes.
        both = NamedSharding(mesh, P(CHAINS, REPLICAS))
        state_sharding = type(states)(**{
            k: both if k in sampler.replica_stacked else chains for k in states._fields})
    return state_sharding, chains


def put(tree: Any, sharding: Any) -> Any:
    """``jax.device_put(tree, sharding)`` that also works when the mesh spans several
    processes. There JAX places only host values (or uncommitted arrays) that are the same
    on every process; the values placed here — initial states, keys, counters — are, since
    every process derives them from the same seed, but they sit on this process's device.
    So they go through the host first (keys as their raw data)."""
    if jax.process_count() == 1:
        return jax.device_put(tree, sharding)

    def host(x):
        if not isinstance(x, jax.Array) or not x.is_fully_addressable:
            return x  # already global, or a host value
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            return _HostKeys(np.asarray(jax.random.key_data(x)), jax.random.key_impl(x))
        return np.asarray(x)

    def place(x, s):
        if isinstance(x, _HostKeys):
            return jax.random.wrap_key_data(jax.device_put(x.data, s), impl=x.impl)
        return jax.device_put(x, s)

    leaves, treedef = jax.tree.flatten(tree)
    shards = jax.tree.leaves(jax.tree.broadcast(sharding, tree))
    return jax.tree.unflatten(treedef, [place(host(x), s) for x, s in
                                        zip(leaves, shards, strict=True)])


class _HostKeys(NamedTuple):
    data: np.ndarray
    impl: Any


def to_host(x: jax.Array) -> np.ndarray:
    """A (possibly sharded, possibly multi-host) array as one NumPy array."""
    if getattr(x, "is_fully_addressable", True):
        return np.asarray(x)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))
