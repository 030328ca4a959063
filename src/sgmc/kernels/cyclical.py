"""Cyclical SG-MCMC (Zhang, Li, Zhang, Chen & Wilson 2020, "Cyclical Stochastic Gradient MCMC
for Bayesian Deep Learning", ICLR): one recipe over any sampler.

A run of K steps is cut into M cycles of L = ⌈K/M⌉ steps. The step size α — the learning
rate, for SGHMC (below) — follows a cosine within each cycle (the paper's eq. 1, with
k = t + 1 for the 0-based step index t):

    α_t = (α₀/2) · [cos(π · mod(t, L) / L) + 1],

large at a cycle's start (to escape a mode) and small at its end (to sample it finely). The
first fraction β (``exploration``) of every cycle, the steps with mod(t, L)/L < β, is the
**exploration** stage: the base dynamics run at temperature τ = 0 — the noise-free optimiser
limit (SGD for SGLD, heavy-ball momentum for SGHMC, RMSprop-like for pSGLD) — and their states
are not draws. The rest is the **sampling** stage: the base sampler with its own temperature,
whose draws may be kept (the paper's Algorithm 1, "collect samples" in the sampling stage
only). So :meth:`CyclicalSampler.keeps` is ``mod(t, L) ≥ E`` with E the number of exploration
steps per cycle, and the driver drops the draws after exploration steps as it drops burn-in.

Design (the choices the paper leaves to an implementation):

* **The run length K.** The cycle length needs K, which a kernel never sees (``sgmc.sample``
  gets ``num_steps``), so :func:`cyclical` requires it as ``num_steps=`` (keyword-only): pass
  the same ``num_steps`` to :func:`sgmc.sample`. A run of other length still works — the
  schedule is periodic, so a longer run simply continues with more cycles of L steps and a
  shorter one stops inside a cycle. When K is not a multiple of M the last cycle is the
  shorter remainder (as with the paper's ⌈K/M⌉). ``cycle_length=`` is not offered: it is
  the paper's derived quantity, and ``num_cycles`` with ``num_steps`` say the same thing in
  the paper's own terms.
* **α₀ is the base sampler's step size**, which must be a constant (a float or
  ``schedules.constant``): the cosine replaces the schedule, so a decaying or cyclical base
  schedule is refused rather than silently composed. The cosine enters as a factor
  c(t) = ½[cos(π mod(t, L)/L) + 1] ∈ (0, 1] (:func:`cosine_factor`) on the step the base
  dynamics are given (:meth:`CyclicalSampler.transition`), as the paper's α_t = α₀ c(t) —
  on the learning rate, by default (next section). Inside :func:`sgmc.replica_exchange` each
  replica's own step size h_k (``step_sizes=``, else α₀) is the base h below. The stability
  bounds checked on α₀ (SGHMC's friction · h < 1) hold at every step.
* **Estimators.** Uniform, SVRG and SAGA are run unchanged in both stages. EWSG's weights
  divide by the noise amplitude σ (undefined at τ = 0): in the exploration stage it falls
  back to the plain minibatch gradient of the same minibatch (the exploration stage is an
  optimiser, for which EWSG's kick matching has no meaning); its own state is carried
  through unchanged.
* **The cost** is the base sampler's at every step (exploration steps spend gradients too),
  so "equal gradient evaluations" comparisons count both stages.

**What follows the cosine (``scale=``).** The paper's α_k is a *learning rate* η: the
coefficient of −∇̃U in the position's change over one step. For SGLD and pSGLD that is the
step size h (θ ← θ − h∇̃U + …), so ``scale="learning_rate"`` (the default) and
``scale="step_size"`` are one schedule, h_t = c(t) h, computed the same way (the same bits).
For SGHMC the learning rate is h²: the paper's cSGHMC is SGHMC in the form of Chen, Fox &
Guestrin (2014), eq. (15) with β̂ = 0 and temperature τ — the update of the authors'
reference code (``ruqizhang/csgmcmc``, ``experiments/cifar_csghmc.py``, noise in the
sampling stage only):

    v ← (1 − α) v − η_t ∇̃U(θ) + N(0, 2 α η_t τ),   θ ← θ + v,   η_t = c(t) η₀,

the momentum decay α fixed. sgmc's SGHMC (:mod:`sgmc.kernels.dynamics.underdamped`: step size h
multiplies ∇̃U in the kick, friction D, per-step decay D h) is that update with v = h p,
η = h², α = D h (multiply its Euler momentum update by h). So ``"learning_rate"`` runs step t,
with c = c(t) and the base h (α₀, or replica k's h_k) and D (the sampler's friction), as

    h_t = √c · h,    D_t = D / √c,    hence  D_t h_t = D h = α,   η_t = h_t² = c · h²,

which in each integrator reads (p the momentum sgmc carries, ξ ~ N(0, I)):

* ``"euler"``:     p' = (1 − α) p − h_t ∇̃U(θ) + √(2ατ) ξ,   θ' = θ + h_t p';  with
  v = h_t p this is eq. (15) exactly: v' = (1 − α) v − η_t ∇̃U(θ) + √(2αη_tτ) ξ, θ' = θ + v';
* ``"explicit"``:  the same p', and θ' = θ + h_t p (θ' = θ + v, the old velocity);
* ``"splitting"``: θ½ = θ + (h_t/2) p,  p' = e^{−α/2} [e^{−α/2} p − h_t ∇̃U(θ½) + √(2ατ) ξ],
  θ' = θ½ + (h_t/2) p': the momentum decays by e^{−α} per step whatever c.

In the exploration stage (τ = 0) that is heavy-ball SGD with learning rate η_t and momentum
1 − α, the paper's exploration; in the sampling stage the kick's noise √(2ατ) on p
(√(2αη_tτ) on v) is the paper's at the base sampler's τ. ``scale="step_size"`` is the form
sgmc ran before: h_t = c h with D fixed, so the decay D h_t = c α fades with the step and
η_t = c² h² follows the *square* of the cosine.

*The end of a cycle.* c(t) = sin²(π(L − mod(t, L))/2L) ≥ sin²(π/2L) ≥ 1/L² > 0: the paper's
cosine, with k = t + 1, stops one step short of 0. So h_t ≥ h/L > 0 and D_t ≤ L·D are finite
at every step and D_t h_t = (D/√c)(h√c) is α to float32 rounding (tested at L = 10⁶); no
floor on c is needed, and none is applied.

*What is carried between steps.* sgmc carries the momentum p, the reference code the
velocity v. Per step they agree (v = h_t p); where η changes they differ by the factor
h_{t−1}/h_t = √(c(t−1)/c(t)) on the carried state — 1 + O(1/L) inside a cycle; at a restart
the reference code's v, of the size of the cycle's last (tiny) step, starts the new cycle
almost at rest, where sgmc's p keeps its sampling-stage size. Carrying p keeps the momentum
at its stationary law N(0, τ), which does not depend on h, as h changes; carrying v would
heat it as η falls through a sampling stage.

*SGNHT* (:func:`sgmc.sgnht`): the learning rate is h², so h_t = √c · h as for SGHMC, and its
diffusion A and thermostat ξ are left alone: the injected noise 2Ahτ and the decay ξh then
both scale with h_t, so the thermostat's balance point ξ* ≈ A + hB/(2τ) holds at every h.
Rescaling A by 1/√c as SGHMC's D would move that balance every step, faster than ξ adapts,
and heat the momentum. The per-step decay ξ h_t is therefore not fixed (SGNHT is not in the
paper). Other dynamics take h_t = c h under either scale.

:class:`CyclicalSampler` is a :class:`sgmc.Sampler` (a subclass with the cycle's fields), so
it meets the kernel contract (:class:`sgmc.contracts.kernel.Kernel`) and replica exchange's base
contract (:class:`sgmc.kernels.coupling.ReplicaBase`) as any sampler does.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

import jax
import jax.numpy as jnp

from sgmc._pytree import pytree_dataclass, replace, static
from sgmc.kernels.coupling.replica import ReplicaExchange
from sgmc.kernels.dynamics import NoseHoover, StepParams, Underdamped
from sgmc.kernels.estimators import uniform
from sgmc.kernels.sampler import Sampler
from sgmc.rng import Rng, as_rng
from sgmc.schedules import Constant

__all__ = ["SCALES", "CyclicalSampler", "cosine_factor", "cyclical", "exploration_steps"]

#: What the cosine multiplies (``cyclical(..., scale=)``; the module docstring).
SCALES = ("learning_rate", "step_size")

PyTree = Any


def cosine_factor(t: jax.Array, cycle_length: int) -> jax.Array:
    """c(t) = ½[cos(π · mod(t, L) / L) + 1], so α_t = α₀ c(t) is Zhang et al. 2020, eq. (1)
    with k = t + 1. The phase mod(t, L) is taken in integers before the division, so it is
    exact for every int32 t (a float32 modulo loses whole steps past 2²⁴). c is computed as
    sin²(π · (L − mod(t, L)) / 2L), the same number, to keep float32's relative precision at
    the end of a cycle, where c → 0: there cos + 1 cancels, and cos near π/2 turns the
    rounding of its argument into relative errors of 10⁻⁵ (L = 1000)."""
    rest = cycle_length - jnp.mod(jnp.asarray(t, jnp.int32), cycle_length)   # in 1 … L
    return jnp.sin((0.5 * jnp.pi / cycle_length) * rest.astype(jnp.float32)) ** 2


def exploration_steps(cycle_length: int, exploration: float) -> int:
    """E, the number of j ∈ {0, …, L − 1} with j / L < β: the exploration steps of a cycle
    (the paper's test r(k) < β, with r = mod(k − 1, L)/L). Computed to agree with that float
    comparison exactly (β·L rounded up can be off by one: 0.3 · 10 = 3.0000000000000004)."""
    e = min(cycle_length, max(0, math.ceil(exploration * cycle_length)))
    while e > 0 and (e - 1) / cycle_length >= exploration:
        e -= 1
    while e < cycle_length and e / cycle_length < exploration:
        e += 1
    return e


@pytree_dataclass
class CyclicalSampler(Sampler):
    """A sampler run on the cyclical schedule of Zhang et al. 2020; see the module docstring
    and :func:`cyclical`. ``step_size`` holds the base step size α₀ (a constant schedule);
    the cycle and ``scale`` are static (changing them recompiles)."""

    num_cycles: int = static(1)
    num_steps: int = static(1)
    exploration: float = static(0.5)
    cycle_length: int = static(1)          # L = ⌈K/M⌉
    explore_steps: int = static(0)         # E: steps with mod(t, L) < E explore
    scale: str = static("learning_rate")   # one of SCALES

    def tuning_base(self) -> Sampler:
        """Not tunable as a whole: the cycle rescales whatever step the warm-up would pick."""
        raise TypeError(f"warmup tunes a plain sampler, got {type(self).__name__}: warm up "
                        "the base sampler, then wrap the tuned one (e.g. "
                        "sgmc.cyclical(tuned, num_cycles, num_steps=K))")

    @property
    def run_length(self) -> int:
        """K: the cycles were cut for a run of this many steps (the kernel contract)."""
        return self.num_steps

    def keeps(self, t: jax.Array) -> jax.Array:
        """True in the sampling stage, mod(t, L) ≥ E: the draw after step t may be kept."""
        return jnp.mod(jnp.asarray(t, jnp.int32), self.cycle_length) >= self.explore_steps

    def factor(self, t: jax.Array) -> jax.Array:
        """The cosine factor c(t) ∈ (0, 1] (:func:`cosine_factor`)."""
        return cosine_factor(t, self.cycle_length)

    @property
    def sqrt_step(self) -> bool:
        """Whether the step size follows √c(t) rather than c(t): the learning rate is
        scaled (``scale="learning_rate"``) and is h², as for momentum dynamics (SGHMC,
        SGNHT)."""
        return self.scale == "learning_rate" and isinstance(self.dynamics,
                                                            (Underdamped, NoseHoover))

    def stage(self, params: StepParams) -> StepParams:
        """Step t's (h, τ) given the base ones: h · √c(t) where the learning rate h² follows
        the cosine (:attr:`sqrt_step`), h · c(t) otherwise; τ = 0 in the exploration stage."""
        t = params.t
        tau = jnp.where(self.keeps(t), params.temperature, jnp.zeros_like(params.temperature))
        c = self.factor(t)
        return StepParams(params.step_size * (jnp.sqrt(c) if self.sqrt_step else c), tau, t)

    def dynamics_at(self, t: jax.Array) -> Any:
        """The dynamics step t runs: for SGHMC with ``scale="learning_rate"`` the friction
        D / √c(t), so the per-step momentum decay D_t h_t = D h stays the paper's fixed α
        (c ≥ sin²(π/2L) > 0, so this is finite); the base dynamics otherwise."""
        if self.sqrt_step and isinstance(self.dynamics, Underdamped):
            return replace(self.dynamics,
                           friction=self.dynamics.friction / jnp.sqrt(self.factor(t)))
        return self.dynamics

    def transition(self, problem, dyn_state, batch, rng: Rng, params: StepParams):
        """One base dynamics step with ``params`` the *base* (h, τ) — as ``Sampler.step``
        (``params(t)``, the base α₀ and τ, so ``init`` draws e.g. SGHMC's momentum at the
        sampler's τ) and replica exchange pass them — turned into the stage's by
        :meth:`stage`, with the dynamics of :meth:`dynamics_at`. An estimator
        undefined at τ = 0 (EWSG) uses the plain minibatch gradient while exploring."""
        p, dynamics = self.stage(params), self.dynamics_at(params.t)
        if not self.estimator.needs_temperature:
            return dynamics.step(problem, self.estimator, dyn_state, batch, rng, p)
        plain = uniform(self.estimator.sampling).with_batch_size(self.batch_size)
        # Draws inside a branch come from a raw key, live (sgmc.rng's rule 1: the driver
        # records and replays only the draws of the step's own trace).
        key = as_rng(rng).key()

        def explore(dyn):
            est = dyn.est
            new, n = dynamics.step(problem, plain, dyn._replace(est=()), batch, Rng(key), p)
            return new._replace(est=est), jnp.asarray(n, jnp.int32)

        def sample(dyn):
            new, n = dynamics.step(problem, self.estimator, dyn, batch, Rng(key), p)
            return new, jnp.asarray(n, jnp.int32)

        # t is unbatched (shared by chains and replicas), so this stays a real branch; EWSG's
        # state is small (never an O(N) table), so carrying it through the cond is cheap.
        return jax.lax.cond(self.keeps(params.t), sample, explore, dyn_state)

    def meta(self) -> dict:
        return {"cyclical": {"num_cycles": self.num_cycles, "num_steps": self.num_steps,
                             "exploration": self.exploration,
                             "cycle_length": self.cycle_length,
                             "exploration_steps": self.explore_steps, "scale": self.scale,
                             "per_step": self._per_step()}}

    def _per_step(self) -> str:
        """The step's (h, friction) in words, for the run's metadata."""
        if not self.sqrt_step:
            return "h·c(t)"
        if isinstance(self.dynamics, Underdamped):
            return "h·√c(t), friction D/√c(t)"
        return "h·√c(t)"


def _check_cycle(num_cycles, exploration, num_steps) -> tuple[int, float, int, int, int]:
    """Validated (M, β, K, L, E), before anything is compiled."""
    for name, v in (("num_cycles", num_cycles), ("num_steps", num_steps)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be an integer, got {v!r}")
    m, k = int(num_cycles), int(num_steps)
    if m < 1:
        raise ValueError(f"num_cycles must be ≥ 1, got {m}")
    if k < m:
        raise ValueError(f"num_steps must be ≥ num_cycles (a cycle needs at least one step), "
                         f"got num_steps={k}, num_cycles={m}")
    if isinstance(exploration, bool) or not isinstance(exploration, numbers.Real):
        raise TypeError(f"exploration must be a number in [0, 1), got {exploration!r}")
    beta = float(exploration)
    if not 0.0 <= beta < 1.0:
        raise ValueError(f"exploration must lie in [0, 1) (the fraction β of each cycle "
                         f"spent exploring), got {beta}")
    length = -(-k // m)
    e = exploration_steps(length, beta)
    if e >= length:
        raise ValueError(f"exploration={beta} leaves no sampling step in a cycle of "
                         f"{length} steps (num_steps={k}, num_cycles={m}); lower exploration "
                         "or num_cycles")
    return m, beta, k, length, e


def _check_scale(scale: Any) -> str:
    """``scale`` validated: one of :data:`SCALES`."""
    if not isinstance(scale, str) or scale not in SCALES:
        raise ValueError("scale must be 'learning_rate' (the paper's: the learning rate "
                         "follows the cosine, h² for SGHMC with its momentum decay fixed) or "
                         f"'step_size' (the step size h follows it, friction fixed), got "
                         f"{scale!r}")
    return scale


def _cyclical_sampler(sampler: Sampler, m: int, beta: float, k: int, length: int,
                      e: int, scale: str) -> CyclicalSampler:
    if isinstance(sampler, CyclicalSampler):
        raise TypeError("sampler is already cyclical; wrap the base sampler once")
    if sampler.step_size is None:
        raise ValueError("the base sampler's step size is α₀ and must be set: pass "
                         f"step_size=... to sgmc.{sampler.name.split('-')[0]}(...) (or run "
                         "sgmc.warmup on the base sampler first, then wrap it)")
    if not isinstance(sampler.step_size, Constant):
        raise ValueError("the cyclical schedule replaces the base sampler's step-size "
                         "schedule, so the base step size (α₀) must be a constant, got "
                         f"{type(sampler.step_size).__name__}")
    # Every field of the base Sampler carries over (derived from its definition, so a field
    # added to Sampler is never dropped here); the name is the cyclical one.
    fields = {f.name: getattr(sampler, f.name) for f in dataclasses.fields(Sampler)
              if f.name != "name"}
    return CyclicalSampler(**fields, name=f"c{sampler.name}", num_cycles=m, num_steps=k,
                           exploration=beta, cycle_length=length, explore_steps=e,
                           scale=scale)


def cyclical(sampler: Any, num_cycles: int, exploration: float = 0.5, *,
             num_steps: int, scale: str = "learning_rate") -> Any:
    """Cyclical SG-MCMC over ``sampler`` (Zhang et al. 2020, Algorithm 1 and eq. 1):

        α_t = (α₀/2) · [cos(π · mod(t, L)/L) + 1] = α₀ c(t),   L = ⌈K/M⌉,   t = 0, …, K − 1,

    exploration (τ = 0, draws not kept) while mod(t, L)/L < β, sampling (the base sampler's
    τ, draws kept) otherwise. cSGLD is ``cyclical(sgmc.sgld(α₀, ...), M, num_steps=K)``,
    cSGHMC the same over ``sgmc.sghmc``: by default (``scale="learning_rate"``) the
    paper's, the learning rate η = h² following the cosine and the per-step momentum decay
    α = D h fixed, i.e. step t runs with

        h_t = √c(t) · h,   D_t = D / √c(t)        (D_t h_t = D h = α,  h_t² = c(t) h²)

    for the base step size h and friction D — in the "euler" integrator exactly Chen et al.
    (2014) eq. (15), v ← (1 − α) v − η_t ∇̃U + N(0, 2αη_tτ), θ ← θ + v, for v = h_t p; the
    same (h_t, D_t) in "explicit" and "splitting" (module docstring, which also covers
    SGNHT). For SGLD and pSGLD the learning rate is h itself: h_t = c(t) h under either
    scale.

    Args:
        sampler: ``sgmc.sgld``, ``sgmc.sghmc`` (any integrator) or ``sgmc.psgld`` with any
            estimator, its step size a constant α₀; or a :func:`sgmc.replica_exchange` over
            one, whose replicas then each run the cycle on their own step size (the same as
            ``replica_exchange(cyclical(base, ...), ...)``).
        num_cycles: M ≥ 1.
        exploration: β ∈ [0, 1), the fraction of each cycle spent exploring (0: sample
            throughout on the cosine step size). Must leave at least one sampling step per
            cycle.
        num_steps: K ≥ M, the run's length: pass the same ``num_steps`` to
            :func:`sgmc.sample` (see the module docstring for other lengths).
        scale: what c(t) multiplies. ``"learning_rate"`` (default, the paper's): the
            learning rate — for SGHMC h_t = √c h with friction D/√c, for SGNHT h_t = √c h,
            for SGLD and pSGLD h_t = c h. ``"step_size"``: h_t = c h for every sampler, the
            friction fixed (sgmc's cSGHMC before this option: the momentum decay D h_t
            fades with the step).

    Returns:
        a :class:`CyclicalSampler` named ``"c" + sampler.name`` (``"csgld"``, ...), or the
        replica exchange over one. Its draws are kept in the sampling stages only
        (:meth:`CyclicalSampler.keeps`); ``burn_in`` and ``thin`` apply on top. Its
        ``meta()`` (the run's metadata) records the cycle and ``scale``.

    Raises:
        ValueError: ``num_cycles`` < 1, ``num_steps`` < ``num_cycles``, ``exploration``
            outside [0, 1) or leaving no sampling step, ``scale`` not one of
            ``"learning_rate"``, ``"step_size"``, or the base step size unset or not a
            constant — all before anything is compiled.
        TypeError: a non-integer ``num_cycles``/``num_steps``, a sampler that is not an
            sgmc sampler (or is already cyclical).
    """
    m, beta, k, length, e = _check_cycle(num_cycles, exploration, num_steps)
    scale = _check_scale(scale)
    if isinstance(sampler, ReplicaExchange):
        # Each replica's step size h_k is scaled by c(t) inside the base's transition,
        # so only the base is wrapped; its temperature field is the ladder's placeholder.
        base = _cyclical_sampler(sampler.sampler, m, beta, k, length, e, scale)
        return replace(sampler, sampler=base,
                       name=sampler.rule.kernel_name(f"c{sampler.sampler.name}"))
    if not isinstance(sampler, Sampler):
        raise TypeError("sampler must be an sgmc sampler (sgmc.sgld/sghmc/psgld(...)) or "
                        f"sgmc.replica_exchange over one, got {type(sampler).__name__}")
    return _cyclical_sampler(sampler, m, beta, k, length, e, scale)
