"""The kernel contract: what :func:`sgmc.sample` runs, and nothing more.

A **kernel** is what the driver compiles into its loop: a sampler (:func:`sgmc.sgld`,
:func:`sgmc.sghmc`, ...) or a coupling of several (:func:`sgmc.replica_exchange`). The
driver knows a kernel only through the members of :class:`Kernel` — no probing for optional
attributes, no knowledge of estimators or models — so anything that implements them runs
with chains, thinning, checkpoints, streaming, meshes and counted cost for free.

The pieces a sampler is composed of have their own contracts, in the modules that hold them:

* :class:`sgmc.contracts.estimator.GradientEstimator` — how ∇U is estimated from a minibatch;
* :class:`sgmc.contracts.integrator.Integrator` — how the state moves given that estimate;
* :class:`sgmc.contracts.exchange.ExchangeRule` — how replicas exchange positions;
* :class:`sgmc.contracts.tunable.Tunable` — what :func:`sgmc.warmup` reads of a kernel.

``docs/architecture.md`` shows each with a worked example of adding a new one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol, runtime_checkable

import jax

from sgmc.rng import Rng

__all__ = ["KERNEL_MEMBERS", "REDUCTIONS", "Kernel", "Reduction", "check_info"]

PyTree = Any

#: How the driver reduces an ``info`` entry over the steps between two kept draws:
#: ``"total"`` — a per-chain running total over the whole run, kept in a 64-bit counter
#: (``grad_evals``, which every kernel reports); ``"sum"`` — summed over the draw's steps
#: (counts: accepted swaps); ``"last"`` — the value at the draw's last step (states: σ̂²).
REDUCTIONS = ("total", "sum", "last")
Reduction = Literal["total", "sum", "last"]


@runtime_checkable
class Kernel(Protocol):
    """One chain's Markov kernel, as the driver runs it.

    ``step`` must be a pure function of its arguments; its randomness comes only from
    ``rng`` (see :mod:`sgmc.rng` for the two rules that let the driver draw it ahead), and
    ``t``, the 0-based step index, is one unbatched number shared by all chains (periodic
    work keyed on it stays a real branch). The driver ``vmap``-s ``init`` and ``step`` over
    chains itself: a kernel describes one chain.
    """

    #: A short name, recorded in ``Result.meta["sampler"]`` and shown by the progress bar.
    name: str
    #: Rows of data one step reads (its minibatch size; None: the full data). The driver
    #: sizes blocks on streamed data by it.
    batch_size: int | None
    #: The number of replicas the state stacks on a leading axis (1 for a plain sampler),
    #: and which fields of the state are so stacked (a device mesh may split them).
    num_replicas: int
    replica_stacked: tuple[str, ...]
    #: The names of the schedule fields that must stay > 0 at every step (the others must
    #: be ≥ 0): e.g. a replica-exchange correction F_t, which divides σ̂². The driver checks
    #: every schedule a kernel holds on the run's steps before compiling.
    positive_schedules: tuple[str, ...] = ()
    #: The run length the kernel's schedules were built for (a cyclical schedule's K), or
    #: None (any): ``sgmc.sample`` warns when it runs another number of steps.
    run_length: int | None = None

    def init(self, problem: Any, position: PyTree, key: jax.Array) -> Any:
        """The state of one chain started at ``position``."""

    def step(self, problem: Any, state: Any, rng: Rng, t: jax.Array) -> tuple[Any, dict]:
        """Step t: (new state, info), where info holds the keys of :attr:`info_spec`."""

    def draw(self, state: Any) -> PyTree:
        """What a kept draw records of a state (a position, or the coldest replica's)."""

    def keeps(self, t: jax.Array) -> jax.Array:
        """Whether a draw taken right after step t (0-based) may be kept: True for every
        t, except for kernels with stages whose states are not draws (the exploration
        stage of a cyclical schedule). A pure function of t, traced (``jnp``) in the loop
        and evaluated on the host for the run's plan; burn-in and thinning apply on top."""

    @property
    def info_spec(self) -> Mapping[str, Reduction]:
        """Every key ``step``'s info holds and how it is reduced (:data:`REDUCTIONS`);
        ``"grad_evals": "total"`` (per-example gradient evaluations) is required."""

    def init_evals(self, problem: Any) -> int:
        """Per-example gradient evaluations ``init`` spends (a SAGA table, say)."""

    def check(self, problem: Any, position: PyTree, num_chains: int) -> None:
        """Validate against a problem and one position before anything is compiled."""

    def meta(self) -> dict:
        """Static facts recorded in ``Result.meta`` (e.g. which replicas a draw holds)."""


#: The members a kernel must have (the protocol's, for error messages).
KERNEL_MEMBERS = ("name", "batch_size", "num_replicas", "replica_stacked",
                  "positive_schedules", "run_length", "init", "step",
                  "draw", "keeps", "info_spec", "init_evals", "check", "meta")


def check_info(kernel: Kernel, info: Mapping[str, Any]) -> None:
    """Raise if a step's info does not hold exactly the keys the kernel declares."""
    spec = dict(kernel.info_spec)
    if spec.get("grad_evals") != "total":
        raise TypeError(f"{kernel.name}: info_spec must declare 'grad_evals': 'total'")
    bad = {k: v for k, v in spec.items() if v not in REDUCTIONS}
    if bad:
        raise TypeError(f"{kernel.name}: unknown reductions {bad}; use one of {REDUCTIONS}")
    if set(info) != set(spec):
        raise TypeError(f"{kernel.name}: step's info has keys {sorted(info)} but info_spec "
                        f"declares {sorted(spec)}")
