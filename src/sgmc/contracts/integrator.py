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

**What the warm-up reads.** :func:`sgmc.warmup` chooses a dynamics' step size, friction and
metric through four more members, declared here with their defaults in :class:`Dynamics`
(subclass it): ``rule_family`` (which closed-form rules of :mod:`sgmc.tune.rules` the
dynamics follow; None: not tunable, the step must be given), ``unset()`` (hyper-parameters
left for the warm-up), ``tuned(preconditioner, friction)`` (the dynamics with them set) and
``settled_metric(v)`` (for dynamics that adapt their own metric, what it settles to). A new
dynamics that declares them is tuned by the warm-up with no change to :mod:`sgmc.tune`.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax

__all__ = ["METRICS", "RULE_FAMILIES", "Dynamics", "Integrator", "StepParams"]

#: The families of step-size rules :mod:`sgmc.tune.rules` holds: overdamped Langevin and
#: the three underdamped integrators (:mod:`sgmc.kernels.dynamics.underdamped`).
RULE_FAMILIES = ("langevin", "euler", "explicit", "splitting")
#: How a dynamics' metric is chosen: ``"constant"`` — a preconditioner P that the warm-up
#: picks from the curvature at the mode and sets with ``tuned``; ``"adaptive"`` — the
#: dynamics adapt their own (pSGLD's running RMSprop), and the warm-up sizes the step for
#: what it settles to (``settled_metric``).
METRICS = ("constant", "adaptive")


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

    #: Which step-size rules apply (one of :data:`RULE_FAMILIES`); None: not tunable.
    rule_family: str | None
    #: How its metric is chosen (one of :data:`METRICS`).
    metric: str
    #: The friction D (None: unset, or first-order dynamics that have none).
    friction: Any
    #: The constant metric P it moves with (None: the identity, or an adaptive metric).
    preconditioner: Any

    def unset(self) -> tuple[str, ...]:
        """Its hyper-parameters left for the warm-up to choose (e.g. ``("friction",)``)."""

    def tuned(self, preconditioner: Any = None, friction: Any = None) -> Integrator:
        """A copy with the constant metric ``preconditioner`` (when given and ``metric`` is
        ``"constant"``) and ``friction`` (when given and the friction is unset) set."""

    def settled_metric(self, mean_square: Any) -> Any:
        """For ``metric == "adaptive"``: the constant preconditioner its metric settles to
        where the per-datum gradient's mean square is ``mean_square`` (a tree)."""


class Dynamics:
    """The defaults of :class:`Integrator`'s tuning members: not tunable (the step size must
    be given), a constant metric, nothing unset, and ``tuned`` sets the preconditioner when
    the dynamics has one."""

    rule_family: str | None = None
    metric: str = "constant"
    friction: Any = None
    preconditioner: Any = None

    def unset(self) -> tuple[str, ...]:
        return ()

    def tuned(self, preconditioner: Any = None, friction: Any = None):
        if preconditioner is None or self.metric != "constant":
            return self
        return dataclasses.replace(self, preconditioner=preconditioner)

    def settled_metric(self, mean_square: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has a constant metric")
