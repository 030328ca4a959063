"""The exchange-rule contract (:class:`ExchangeRule`): how the replicas of
:func:`sgmc.replica_exchange` exchange positions after their dynamics step (``rule=...``);
the built-in rules are in :mod:`sgmc.kernels.coupling.rules`.

A rule is asked, at each exchange attempt, for a permutation of the replica
slots: ``rule.attempt(problem, position, key, ctx)`` returns an :class:`Exchange` (the
permutation, which adjacent pairs were attempted and which accepted, the per-example
evaluations spent). ``position`` holds the replicas' positions stacked on a leading axis;
``key`` is a raw PRNG key (the attempt runs inside a ``lax.cond`` branch, so a rule draws with
``jax.random`` on it, never through an :class:`sgmc.rng.Rng`); ``ctx`` (:class:`ExchangeContext`)
carries what the coupling knows at this step: the temperatures, t, the attempt's index, σ̂² of
this step and the swap-energy estimator with its per-replica states. The rule is stateless:
everything that persists (σ̂², energy anchors, labels) lives in the coupling's state, and the
coupling applies the permutation to the positions, the energy states and the labels.

A rule that sets ``uses_energy = True`` (the Metropolis rule) makes the coupling maintain the
swap energies for it: σ̂² measurements, ``cv_energy`` anchor refreshes and no attempt before
σ̂² is measured (see :mod:`sgmc.kernels.coupling.replica`). :class:`Rule` is a base class with the
defaults (no energy, a ladder of increasing positive temperatures, no projection), so a new
rule only writes :meth:`~ExchangeRule.attempt`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import jax

from sgmc.schedules import Schedule, as_schedule

__all__ = ["PAIR_SCHEDULES", "Exchange", "ExchangeContext", "ExchangeRule", "Rule"]

PyTree = Any

#: Which adjacent pairs a Metropolis attempt tests (K > 2; with K = 2 the one pair, always).
PAIR_SCHEDULES = ("even_odd", "stochastic")


class ExchangeContext(NamedTuple):
    """What the coupling passes a rule at an exchange attempt (step t)."""

    temperature: jax.Array   # (K,) τ of each slot at step t
    t: jax.Array             # the step index (int32)
    attempt: jax.Array       # 0-based index of this attempt: (t + 1) // swap_every − 1
    variance: jax.Array      # (K − 1,) σ̂² of Ũ_k − Ũ_{k+1} for this attempt (0: unmeasured)
    energy: Any = None       # the coupling's swap-energy estimator (sgmc.kernels.coupling.energy)
    energy_state: Any = None  # its states, stacked over replicas
    energy_batch: int = 1    # minibatch size of the swap energies


class Exchange(NamedTuple):
    """A rule's answer: ``perm`` (K,) int32, slot i takes the replica of slot ``perm[i]``;
    ``accepted`` and ``attempted`` (K − 1,) bool per adjacent pair (counted in ``res.info``);
    ``evals`` the per-example evaluations spent (int32)."""

    perm: jax.Array
    accepted: jax.Array
    attempted: jax.Array
    evals: jax.Array


@runtime_checkable
class ExchangeRule(Protocol):
    """A pluggable exchange rule (module docstring)."""

    #: Whether the rule reads the swap energies (``ctx.energy``, ``ctx.variance``): the
    #: coupling then measures σ̂², refreshes ``cv_energy`` anchors and waits for σ̂².
    uses_energy: bool

    def ladder(self, temperatures: Sequence) -> tuple[Schedule, ...]:
        """Validate the temperature ladder (floats or schedules) and return it as schedules;
        raise ValueError for one the rule does not support."""

    def kernel_name(self, sampler_name: str) -> str:
        """The coupled kernel's name (``Result.meta["sampler"]``), e.g. ``"resgld"``."""

    def check(self, problem: Any) -> None:
        """Validate against the problem before compiling."""

    def project(self, position: PyTree) -> PyTree:
        """Map the stacked positions into the feasible set after every dynamics step (before
        the attempt; identity without one)."""

    def attempt(self, problem: Any, position: PyTree, key: jax.Array,
                ctx: ExchangeContext) -> Exchange:
        """The exchange at this attempt (module docstring)."""


class Rule:
    """Defaults for a new rule (subclass it in a :func:`sgmc.pytree.pytree_dataclass`): no
    swap energies, temperatures positive and strictly increasing, no projection."""

    uses_energy = False

    def ladder(self, temperatures: Sequence) -> tuple[Schedule, ...]:
        temps = tuple(as_schedule(v, "temperatures") for v in temperatures)
        start = [float(s(0)) for s in temps]
        if any(b <= a for a, b in itertools.pairwise(start)):
            raise ValueError(f"temperatures must be strictly increasing, got {start}")
        return temps

    def kernel_name(self, sampler_name: str) -> str:
        return f"re{sampler_name}"

    def check(self, problem) -> None:
        return None

    def project(self, position):
        return position
