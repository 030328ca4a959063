"""Placing a run on a device mesh: chains (and replicas) on mesh axes, data replicated.

``sample(..., mesh=mesh)`` takes a :class:`jax.sharding.Mesh` with an axis named
``"chains"`` and optionally one named ``"replicas"``. Every chain's state (and the PRNG keys
and counters) is sharded over ``"chains"`` on its leading axis; a replica-exchange sampler's
replica-stacked state is additionally sharded over ``"replicas"``; the problem (its data) is
replicated. The block programs are the same ``jit``-compiled loops as on one device: XLA's
SPMD partitioner splits them along the chain axis (no communication: chains are
independent) and inserts the collectives that a swap between replicas on different devices
needs. Only the thinned draws leave the devices, gathered once per block.

Several hosts: call ``jax.distributed.initialize()`` in every process first and build the
mesh over ``jax.devices()`` (all hosts' devices); the draws of every block are then gathered
to every process (``multihost_utils.process_allgather``).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

CHAINS, REPLICAS = "chains", "replicas"


def check_mesh(mesh: Any, num_chains: int, sampler: Any) -> None:
    """Validate ``mesh`` for a run of ``num_chains`` chains of ``sampler``."""
    if not isinstance(mesh, Mesh):
        raise TypeError(f"mesh must be a jax.sharding.Mesh, got {type(mesh).__name__}")
    names = tuple(mesh.axis_names)
    unknown = [a for a in names if a not in (CHAINS, REPLICAS)]
    if CHAINS not in names or unknown:
        raise ValueError(f"mesh must have an axis named {CHAINS!r} and may have one named "
                         f"{REPLICAS!r}; got axes {names}")
    n_dev = mesh.shape[CHAINS]
    if num_chains % n_dev:
        raise ValueError(f"num_chains ({num_chains}) must be a multiple of the mesh's "
                         f"{CHAINS!r} axis size ({n_dev})")
    if REPLICAS in names:
        k = getattr(sampler, "num_replicas", None)
        if k is None:
            raise ValueError(f"the mesh has a {REPLICAS!r} axis but the sampler is not a "
                             "replica-exchange coupling")
        if k % mesh.shape[REPLICAS]:
            raise ValueError(f"the number of replicas ({k}) must be a multiple of the mesh's "
                             f"{REPLICAS!r} axis size ({mesh.shape[REPLICAS]})")


def shardings(mesh: Mesh, sampler: Any, states: Any) -> tuple[Any, Any, NamedSharding]:
    """How a run sits on ``mesh``: (problem, states, per-chain arrays) shardings — the
    states' as a prefix tree (see module docstring)."""
    chains = NamedSharding(mesh, P(CHAINS))
    state_sharding: Any = chains
    if REPLICAS in mesh.axis_names:
        # Replica-stacked parts of the coupling's state are split over both axes.
        both = NamedSharding(mesh, P(CHAINS, REPLICAS))
        state_sharding = type(states)(**{
            k: both if k in sampler.replica_stacked else chains for k in states._fields})
    return NamedSharding(mesh, P()), state_sharding, chains


def to_host(x: jax.Array) -> np.ndarray:
    """A (possibly sharded, possibly multi-host) array as one NumPy array."""
    if getattr(x, "is_fully_addressable", True):
        return np.asarray(x)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(x, tiled=True))
