"""The tuning contract (:class:`Tunable`): what :func:`sgmc.warmup` reads of a kernel.

The warm-up tunes one *base sampler* — a :class:`~sgmc.contracts.replica.ReplicaBase`: an
estimator, a dynamics (whose own tuning members are declared by
:class:`~sgmc.contracts.integrator.Integrator`), a step size and a temperature — and hands
the chosen step sizes back to the kernel that holds it. A plain sampler is its own base; a
replica-exchange coupling holds one base at K temperatures with K step sizes. A kernel that
declares these members is tuned by the warm-up with no change to :mod:`sgmc.tune`; one that
does not is refused with a message naming what it lacks.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["TUNABLE_MEMBERS", "Tunable"]


@runtime_checkable
class Tunable(Protocol):
    """A kernel :func:`sgmc.warmup` can tune (module docstring)."""

    #: Whether a kept draw holds every replica on an extra axis (the warm-up then reads the
    #: coldest replica's draws when it re-estimates the preconditioner from them).
    draw_replicas: bool

    def tuning_base(self) -> Any:
        """The base sampler whose dynamics and step size the warm-up chooses; raises
        TypeError, with what to do instead, when this kernel cannot be tuned as a whole
        (a cyclical schedule: warm up its base sampler, then wrap the tuned one)."""

    def tuning_temperatures(self) -> list[float]:
        """The temperature τ of each step size the warm-up chooses, at step 0."""

    def given_steps(self) -> list[float] | None:
        """The step sizes the user set (at step 0), one per temperature; None when the
        warm-up is to choose them."""

    def with_tuning(self, base: Any, steps: list[float], force: bool = False) -> Tunable:
        """This kernel over ``base`` (the tuned base sampler), with ``steps`` (one per
        temperature) where its step sizes are unset — or everywhere with ``force`` (the
        self-check's halved steps)."""


#: The members of :class:`Tunable` (for error messages).
TUNABLE_MEMBERS = ("draw_replicas", "tuning_base", "tuning_temperatures", "given_steps",
                   "with_tuning")
