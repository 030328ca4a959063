"""Step-size (and temperature) schedules: h_t as a function of the step index t = 0, 1, ...

A schedule is a small pytree whose numbers are leaves (changing them does not recompile).
Samplers accept a float (a constant schedule) or any schedule here. The injected noise is
always computed from the *current* h_t, so a decaying step size keeps the chain at the
right temperature (a pitfall of the public reference code, ALGORITHMS.md §3).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from . import _validate as check
from ._pytree import pytree_dataclass, static

__all__ = ["Schedule", "as_schedule", "constant", "cyclical", "from_function",
           "polynomial_decay"]


class Schedule:
    """Base class: ``schedule(t) -> h_t`` for an integer step index t (traced or not)."""

    def __call__(self, t: jax.Array) -> jax.Array:  # pragma: no cover - abstract
        raise NotImplementedError

    def max_value(self) -> float:
        """The largest value the schedule takes (used to validate stability bounds)."""
        raise NotImplementedError  # pragma: no cover


@pytree_dataclass
class Constant(Schedule):
    """h_t = value."""

    value: Any

    def __call__(self, t: jax.Array) -> jax.Array:
        return jnp.asarray(self.value, jnp.float32)

    def max_value(self) -> float:
        return float(self.value)


@pytree_dataclass
class PolynomialDecay(Schedule):
    """h_t = a (b + t)^(−γ) (Welling & Teh 2011), with γ ∈ (0.5, 1] for SGLD's guarantees."""

    a: Any
    b: Any
    gamma: Any

    def __call__(self, t: jax.Array) -> jax.Array:
        return self.a * (self.b + jnp.asarray(t, jnp.float32)) ** (-self.gamma)

    def max_value(self) -> float:
        return float(self.a) * float(self.b) ** (-float(self.gamma))


@pytree_dataclass
class Cyclical(Schedule):
    """Cosine cycles (Zhang et al. 2020, cSG-MCMC; used by cVR-reSGHMC):

    h_t = (h₀ / 2) · (cos(π · (t mod L) / L) + 1),  L = cycle_length.
    """

    h0: Any
    cycle_length: Any

    def __call__(self, t: jax.Array) -> jax.Array:
        frac = jnp.mod(jnp.asarray(t, jnp.float32), self.cycle_length) / self.cycle_length
        return 0.5 * self.h0 * (jnp.cos(jnp.pi * frac) + 1.0)

    def max_value(self) -> float:
        return float(self.h0)


@pytree_dataclass
class FromFunction(Schedule):
    """h_t = fn(t) for a user function (static: a new function object compiles anew)."""

    fn: Callable = static()
    bound: float | None = static(None)

    def __call__(self, t: jax.Array) -> jax.Array:
        return jnp.asarray(self.fn(t), jnp.float32)

    def max_value(self) -> float:
        if self.bound is None:
            raise ValueError("this schedule has no known maximum; pass max_value= to "
                             "schedules.from_function to validate stability bounds")
        return float(self.bound)


def from_function(fn: Callable, max_value: float | None = None) -> FromFunction:
    """A schedule from any JAX-traceable ``fn(t) -> h_t``.

    ``max_value`` (the largest h_t) lets samplers check stability bounds such as
    friction · h < 1 for SGHMC's Euler form; without it those checks raise.
    """
    check.callable_("fn", fn)
    if max_value is not None:
        max_value = check.positive("max_value", max_value)
    return FromFunction(fn, max_value)


def constant(value: float) -> Constant:
    """A constant schedule h_t = value (value > 0)."""
    return Constant(check.positive("step_size", value))


def polynomial_decay(a: float, b: float = 1.0, gamma: float = 0.55) -> PolynomialDecay:
    """h_t = a (b + t)^(−gamma); a > 0, b > 0, gamma ∈ [0, 1]."""
    return PolynomialDecay(check.positive("a", a), check.positive("b", b),
                           check.real("gamma", gamma, lo=0.0, hi=1.0))


def cyclical(h0: float, cycle_length: int) -> Cyclical:
    """Cosine-cyclical step size starting each cycle at h0 and decaying towards 0."""
    return Cyclical(check.positive("h0", h0),
                    float(check.integer("cycle_length", cycle_length, lo=1)))


def as_schedule(value: float | Schedule, name: str = "step_size") -> Schedule:
    """A float becomes a constant schedule (validated > 0); schedules pass through."""
    if isinstance(value, Schedule):
        return value
    if callable(value):
        raise TypeError(f"{name} must be a float or an sgmc schedule; wrap a function with "
                        "sgmc.schedules.from_function(fn, max_value=...)")
    return Constant(check.positive(name, value))
