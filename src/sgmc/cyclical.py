"""Cyclical SG-MCMC (Zhang, Li, Zhang, Chen & Wilson 2020, "Cyclical Stochastic Gradient MCMC
for Bayesian Deep Learning", ICLR): one recipe over any sampler.

A run of K steps is cut into M cycles of L = ⌈K/M⌉ steps. The step size follows a cosine
within each cycle (the paper's eq. 1, with k = t + 1 for the 0-based step index t):

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
  c(t) = ½[cos(π mod(t, L)/L) + 1] ∈ (0, 1] applied to the step size the step is given
  (:meth:`CyclicalSampler.transition`): α_t = α₀ c(t) for the sampler, and inside
  :func:`sgmc.replica_exchange` each replica's own step size h_k (``step_sizes=``, else α₀)
  becomes h_k c(t). Since c ≤ 1, stability bounds checked on α₀ (SGHMC's friction · h < 1)
  hold at every step.
* **Estimators.** Uniform, SVRG and SAGA are run unchanged in both stages. EWSG's weights
  divide by the noise amplitude σ (undefined at τ = 0): in the exploration stage it falls
  back to the plain minibatch gradient of the same minibatch (the exploration stage is an
  optimiser, for which EWSG's kick matching has no meaning); its own state is carried
  through unchanged.
* **The cost** is the base sampler's at every step (exploration steps spend gradients too),
  so "equal gradient evaluations" comparisons count both stages.

:class:`CyclicalSampler` is a :class:`sgmc.Sampler` (a subclass with the cycle's fields), so
it meets the kernel contract (:class:`sgmc.kernel.Kernel`) and replica exchange's base
contract (:class:`sgmc.coupling.ReplicaBase`) as any sampler does.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import jax
import jax.numpy as jnp

from ._pytree import pytree_dataclass, replace, static
from .coupling.replica import ReplicaExchange
from .dynamics import StepParams
from .estimators import uniform
from .rng import Rng, as_rng
from .sampler import Sampler
from .schedules import Constant

__all__ = ["CyclicalSampler", "cosine_factor", "cyclical", "exploration_steps"]

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
    the cycle is static (changing it recompiles)."""

    num_cycles: int = static(1)
    num_steps: int = static(1)
    exploration: float = static(0.5)
    cycle_length: int = static(1)          # L = ⌈K/M⌉
    explore_steps: int = static(0)         # E: steps with mod(t, L) < E explore

    def keeps(self, t: jax.Array) -> jax.Array:
        """True in the sampling stage, mod(t, L) ≥ E: the draw after step t may be kept."""
        return jnp.mod(jnp.asarray(t, jnp.int32), self.cycle_length) >= self.explore_steps

    def factor(self, t: jax.Array) -> jax.Array:
        """The cosine factor c(t) ∈ (0, 1] (:func:`cosine_factor`)."""
        return cosine_factor(t, self.cycle_length)

    def stage(self, params: StepParams) -> StepParams:
        """Step t's (h, τ) given the base ones: h · c(t), and τ = 0 in the exploration stage."""
        t = params.t
        tau = jnp.where(self.keeps(t), params.temperature, jnp.zeros_like(params.temperature))
        return StepParams(params.step_size * self.factor(t), tau, t)

    def transition(self, problem, dyn_state, batch, rng: Rng, params: StepParams):
        """One base dynamics step with ``params`` the *base* (h, τ) — as ``Sampler.step``
        (``params(t)``, the base α₀ and τ, so ``init`` draws e.g. SGHMC's momentum at the
        sampler's τ) and replica exchange pass them — turned into the stage's by
        :meth:`stage`. An estimator
        undefined at τ = 0 (EWSG) uses the plain minibatch gradient while exploring."""
        p = self.stage(params)
        if not self.estimator.needs_temperature:
            return self.dynamics.step(problem, self.estimator, dyn_state, batch, rng, p)
        plain = uniform(self.estimator.sampling).with_batch_size(self.batch_size)
        # Draws inside a branch come from a raw key, live (sgmc.rng's rule 1: the driver
        # records and replays only the draws of the step's own trace).
        key = as_rng(rng).key()

        def explore(dyn):
            est = dyn.est
            new, n = self.dynamics.step(problem, plain, dyn._replace(est=()), batch, Rng(key),
                                        p)
            return new._replace(est=est), jnp.asarray(n, jnp.int32)

        def sample(dyn):
            new, n = self.dynamics.step(problem, self.estimator, dyn, batch, Rng(key), p)
            return new, jnp.asarray(n, jnp.int32)

        # t is unbatched (shared by chains and replicas), so this stays a real branch; EWSG's
        # state is small (never an O(N) table), so carrying it through the cond is cheap.
        return jax.lax.cond(self.keeps(params.t), sample, explore, dyn_state)

    def meta(self) -> dict:
        return {"cyclical": {"num_cycles": self.num_cycles, "num_steps": self.num_steps,
                             "exploration": self.exploration,
                             "cycle_length": self.cycle_length,
                             "exploration_steps": self.explore_steps}}


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


def _cyclical_sampler(sampler: Sampler, m: int, beta: float, k: int, length: int,
                      e: int) -> CyclicalSampler:
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
    fields = {f: getattr(sampler, f) for f in ("dynamics", "estimator", "step_size",
                                                "temperature", "batch_size")}
    return CyclicalSampler(**fields, name=f"c{sampler.name}", num_cycles=m, num_steps=k,
                           exploration=beta, cycle_length=length, explore_steps=e)


def cyclical(sampler: Any, num_cycles: int, exploration: float = 0.5, *,
             num_steps: int) -> Any:
    """Cyclical SG-MCMC over ``sampler`` (Zhang et al. 2020, Algorithm 1 and eq. 1):

        α_t = (α₀/2) · [cos(π · mod(t, L)/L) + 1],   L = ⌈K/M⌉,   t = 0, …, K − 1,

    exploration (τ = 0, draws not kept) while mod(t, L)/L < β, sampling (the base sampler's
    τ, draws kept) otherwise. cSGLD is ``cyclical(sgmc.sgld(α₀, ...), M, num_steps=K)``,
    cSGHMC the same over ``sgmc.sghmc``.

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

    Returns:
        a :class:`CyclicalSampler` named ``"c" + sampler.name`` (``"csgld"``, ...), or the
        replica exchange over one. Its draws are kept in the sampling stages only
        (:meth:`CyclicalSampler.keeps`); ``burn_in`` and ``thin`` apply on top.
    """
    m, beta, k, length, e = _check_cycle(num_cycles, exploration, num_steps)
    if isinstance(sampler, ReplicaExchange):
        # Each replica's step size h_k is multiplied by c(t) inside the base's transition,
        # so only the base is wrapped; its temperature field is the ladder's placeholder.
        base = _cyclical_sampler(sampler.sampler, m, beta, k, length, e)
        return replace(sampler, sampler=base,
                       name=sampler.rule.kernel_name(f"c{sampler.sampler.name}"))
    if not isinstance(sampler, Sampler):
        raise TypeError("sampler must be an sgmc sampler (sgmc.sgld/sghmc/psgld(...)) or "
                        f"sgmc.replica_exchange over one, got {type(sampler).__name__}")
    return _cyclical_sampler(sampler, m, beta, k, length, e)
