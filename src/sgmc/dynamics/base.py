"""The dynamics interface: one step of a (stochastic-gradient) diffusion discretisation.

A dynamics is a pytree dataclass with

* ``init(problem, estimator, position, key, params) -> state`` where the state is a
  NamedTuple with at least ``position`` and ``est`` (the estimator's state);
* ``step(problem, estimator, state, batch, key, params) -> (state, n_evals)``.

``params`` is a :class:`StepParams` with this step's step size and temperature, passed in
rather than stored so that schedules and replicas (each with its own h and τ) share one
implementation. Convention everywhere: the target is exp(−U/τ); τ = 0 gives the
deterministic (gradient-descent or heavy-ball) limit.
"""

from __future__ import annotations

from typing import NamedTuple

import jax

__all__ = ["StepParams"]


class StepParams(NamedTuple):
    """Per-step numbers chosen by the sampler (schedules) or the coupling (replicas).

    ``t`` is the 0-based step index, shared by all chains and replicas (unbatched), which
    periodic estimator work (SVRG snapshots) keys on.
    """

    step_size: jax.Array
    temperature: jax.Array
    t: jax.Array
