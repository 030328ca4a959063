"""The integrator contract (:class:`Integrator`): one step of a (stochastic-gradient)
diffusion discretisation.

An integrator (a "dynamics") is a pytree dataclass with

* ``init(problem, estimator, position, key, params) -> state`` where the state is a
  NamedTuple with at least ``position`` and ``est`` (the estimator's state);
* ``step(problem, estimator, state, batch, rng, params) -> (state, n_evals)``: it asks
  ``estimator.estimate(problem, state.est, point, batch, rng_est, ctx)`` for the gradient
  at the point it chooses, filling the :class:`~sgmc.contracts.estimator.Context` ``ctx``, and
  draws its noise from ``rng`` (an :class:`sgmc.rng.Rng`).

``params`` is a :class:`StepParams` with this step's step size and temperature, passed in
rather than stored so that schedules and replicas (each with its own h and τ) share one
implementation. Convention everywhere: the target is exp(−U/τ); τ = 0 gives the
deterministic (gradient-descent or heavy-ball) limit.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax

__all__ = ["Integrator", "StepParams"]


class StepParams(NamedTuple):
    """Per-step numbers chosen by the sampler (schedules) or the coupling (replicas).

    ``t`` is the 0-based step index, shared by all chains and replicas (unbatched), which
    periodic estimator work (SVRG snapshots) keys on.
    """

    step_size: jax.Array
    temperature: jax.Array
    t: jax.Array


@runtime_checkable
class Integrator(Protocol):
    """The contract every dynamics meets (see the module docstring)."""

    def init(self, problem: Any, estimator: Any, position: Any, key: jax.Array,
             params: StepParams) -> Any: ...

    def step(self, problem: Any, estimator: Any, state: Any, batch: jax.Array | None,
             rng: Any, params: StepParams) -> tuple[Any, jax.Array]: ...
