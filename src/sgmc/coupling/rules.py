"""The exchange-rule contract (:class:`ExchangeRule`): how two replicas exchange positions
after their dynamics step, in :func:`sgmc.replica_exchange` with ``rule=...``.

A rule sees the replicas' positions after the step (stacked on a leading replica axis) and
returns a permutation of the replica slots, whether it exchanged, and the per-example
evaluations it spent. :class:`~sgmc.coupling.replica.GreedyRule` (GD×LD / SGD×SGLD, Dong &
Tong, Alg. 1–2) implements it. The bias-corrected Metropolis swap of reSGLD / VR-reSGLD
(Deng et al., eq. 4 with the correction of eq. 5) is the coupling's default (``rule=None``)
and is not (yet) an object of this contract: it reads the coupling's energy estimator and
σ̂² table, which live in the coupling's state.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax

__all__ = ["ExchangeRule"]


@runtime_checkable
class ExchangeRule(Protocol):
    """A pluggable exchange rule (module docstring)."""

    def check(self, problem: Any) -> None:
        """Validate against the problem before compiling."""

    def project(self, position: Any) -> Any:
        """Map the replicas' positions into the feasible set (identity without one)."""

    def exchange(self, problem: Any, position: Any,
                 rng: Any) -> tuple[jax.Array, jax.Array, Any]:
        """(permutation of the replica slots, exchanged?, evaluations spent)."""
