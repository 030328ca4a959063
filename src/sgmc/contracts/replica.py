"""What replica exchange (:func:`sgmc.replica_exchange`) reads of its base sampler
(:class:`ReplicaBase`); :class:`sgmc.kernels.sampler.Sampler` has it all."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax

from sgmc.contracts.integrator import StepParams
from sgmc.rng import Rng
from sgmc.schedules import Schedule

__all__ = ["BASE_MEMBERS", "ReplicaBase"]


@runtime_checkable
class ReplicaBase(Protocol):
    """What replica exchange uses of its base sampler (an :class:`sgmc.Sampler` has it all);
    the sampler must also be a dataclass with a ``temperature`` field (the ladder replaces it).
    """

    name: str
    batch_size: int | None
    step_size: Schedule   # the default step size of every replica
    temperature: Any      # replaced by the ladder
    estimator: Any        # ``needs_temperature``; handed to ``dynamics.init``
    dynamics: Any         # ``init(problem, estimator, position, key, StepParams)``
    batcher: Any          # ``init(num_data, key)``, ``draw(state, rng, num_data)``

    def transition(self, problem: Any, dyn_state: Any, batch: Any, rng: Rng,
                   params: StepParams) -> tuple[Any, jax.Array]:
        """One dynamics step on a given minibatch with given (h, τ)."""

    def init_evals(self, problem: Any) -> int:
        """Per-example gradient evaluations of one replica's init."""

    def check(self, problem: Any, position: Any, num_chains: int) -> None:
        """Validate against a problem (``num_chains`` counts every replica)."""


#: The members of :class:`ReplicaBase` (for error messages).
BASE_MEMBERS = ("name", "batch_size", "step_size", "temperature", "estimator", "dynamics",
                "batcher", "transition", "init_evals", "check")
