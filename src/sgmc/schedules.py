"""Step-size (and temperature) schedules: h_t as a function of the step index t = 0, 1, ...

A schedule is a small pytree whose numbers are leaves (changing them does not recompile).
Samplers accept a float (a constant schedule) or any schedule here. The injected noise is
always computed from the *current* h_t, so a decaying step size keeps the chain at the
right temperature (the public reference code of the VR-reSGLD paper, Deng et al. 2021, does not
rescale the noise when the learning rate decays).

Before a run is compiled, ``sgmc.sample`` evaluates every schedule the sampler holds on the
run's steps (:func:`sgmc.run.preflight.check_schedules`) and refuses a NaN, inf or
negative value (or 0 for a swap correction), naming the schedule and the first bad step.
The built-in schedules compute in float32 from the step index, which float32 holds exactly
up to 2²⁴ steps; past that a period's boundary (:class:`Geometric`) may be off by a few steps
(by at most t·2⁻²⁴ at step t). :class:`Cyclical` takes its phase t mod L in integers, exact
for every int32 t (as :func:`sgmc.cyclical` does).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, static

__all__ = ["Schedule", "as_schedule", "constant", "cyclical", "from_function", "geometric",
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

    The phase t mod L is taken in int32 before the division (a float32 t loses whole steps
    past 2²⁴, and with them the phase); the same values as a float32 phase below 2²⁴.
    """

    h0: Any
    cycle_length: Any       # an integer leaf

    def __call__(self, t: jax.Array) -> jax.Array:
        length = jnp.asarray(self.cycle_length).astype(jnp.int32)
        phase = jnp.mod(jnp.asarray(t, jnp.int32), length)
        frac = phase.astype(jnp.float32) / length.astype(jnp.float32)
        return 0.5 * self.h0 * (jnp.cos(jnp.pi * frac) + 1.0)

    def max_value(self) -> float:
        return float(self.h0)


@pytree_dataclass
class Geometric(Schedule):
    """A value multiplied by ``rate`` once every ``every`` steps between ``start`` and ``stop``
    (the VR-reSGLD paper's per-epoch annealing, Sec. 5.2: τ_k = τ₀/1.02^k during burn-in,
    F_k = F₀·1.02^k with it, η_k = η₀·0.984^k after 200 of 500 epochs):

        h_t = value · rate^{k(t)},  k(t) = ⌊(min(max(t, start), stop) − start) / every⌋.

    Before ``start`` and after ``stop`` the value is held. All numbers are leaves.
    """

    value: Any
    rate: Any
    every: Any
    start: Any
    stop: Any

    def __call__(self, t: jax.Array) -> jax.Array:
        t = jnp.clip(jnp.asarray(t, jnp.float32), self.start, self.stop)
        k = jnp.floor((t - self.start) / self.every)
        return jnp.asarray(self.value, jnp.float32) * jnp.asarray(self.rate, jnp.float32) ** k

    def max_value(self) -> float:
        if float(self.rate) <= 1.0:
            return float(self.value)
        k = (float(self.stop) - float(self.start)) // float(self.every)
        return float(self.value) * float(self.rate) ** k  # inf without a stop


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
                    int(check.integer("cycle_length", cycle_length, lo=1)))


def geometric(value: float, rate: float, every: int, start: int = 0,
              stop: int | None = None) -> Geometric:
    """h_t = value · rate^k with k the number of whole ``every``-step periods completed between
    ``start`` and min(t, ``stop``) (see :class:`Geometric`).

    Args:
        value: h at t ≤ start (> 0).
        rate: factor per period (> 0; < 1 decays, > 1 grows).
        every: steps per period (≥ 1), e.g. the steps of one data pass.
        start: first step of the annealing (≥ 0).
        stop: step after which h is held (> start), None: never.
    """
    v, r = check.positive("value", value), check.positive("rate", rate)
    e = check.integer("every", every, lo=1)
    a = check.integer("start", start, lo=0)
    b = float("inf") if stop is None else float(check.integer("stop", stop, lo=a + 1))
    return Geometric(v, r, float(e), float(a), b)


def as_schedule(value: float | Schedule, name: str = "step_size") -> Schedule:
    """A float becomes a constant schedule (validated > 0); schedules pass through."""
    if isinstance(value, Schedule):
        return value
    if callable(value):
        raise TypeError(f"{name} must be a float or an sgmc schedule; wrap a function with "
                        "sgmc.schedules.from_function(fn, max_value=...)")
    return Constant(check.positive(name, value))
