"""Underdamped Langevin dynamics: SGHMC (Chen et al. 2014) with two integrators.

Continuous dynamics with unit mass and friction D at temperature τ:
dθ = p dt,  dp = −∇U dt − D p dt + sqrt(2 D τ) dW.

``integrator="euler"`` — the SVRG-HMC paper's eq. (1)–(2) (Li et al.), semi-implicit
(symplectic) Euler, requires D h < 1:

    p_{k+1} = (1 − D h) p_k − h ∇̃U(θ_k) + sqrt(2 D h τ) ξ_k,
    θ_{k+1} = θ_k + h p_{k+1}.

``integrator="explicit"`` — explicit Euler–Maruyama, the EWSG paper's eq. (3) (Li, Wang, Zha
& Tao): the same momentum update, but the position moves with the *old* momentum,

    θ_{k+1} = θ_k + h p_k.

It is first order like "euler" but not symplectic: its stationary law is biased by O(h) in
the position (not only the momentum), and it needs a smaller step for the same accuracy.

``integrator="splitting"`` — the symmetric splitting of eq. (12)–(16) (Chen et al. 2015;
Leimkuhler & Shang 2016), second order, gradient at the half-step point θ':

    θ' = θ_k + (h/2) p_k,        p' = e^{−Dh/2} p_k,
    p'' = p' − h ∇̃U(θ') + sqrt(2 D h τ) ξ_k,
    p_{k+1} = e^{−Dh/2} p'',    θ_{k+1} = θ' + (h/2) p_{k+1}.

The momentum starts from its stationary law N(0, τ I) (``init_momentum="random"``, zero at
τ = 0, heavy-ball descent) or from p₀ = 0 (``init_momentum="zero"``, as in the SVRG-HMC
paper's Algorithms 1–4).

**Mass matrix.** With a preconditioner P = L Lᵀ (:mod:`sgmc.kernels.preconditioners`) the dynamics
have mass M = P⁻¹ and friction matrix C = D M (Chen, Fox & Guestrin 2014, eq. 9):
dθ = M⁻¹p dt, dp = −∇U dt − D p dt + √(2Dτ) M^{1/2} dW. The state holds the whitened
momentum q = Lᵀp (stationary law N(0, τ I)), so every integrator above runs unchanged in
z = L⁻¹θ: the kick reads q' = … − h Lᵀ∇̃U + σ√h ξ and every position move θ += c p reads
θ += c L q.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sgmc._pytree import pytree_dataclass, replace, static
from sgmc._tree import normal_like
from sgmc.contracts.estimator import Context
from sgmc.contracts.integrator import Dynamics
from sgmc.kernels.preconditioners import Identity
from sgmc.rng import as_rng

__all__ = ["INIT_MOMENTA", "INTEGRATORS", "INTEGRATOR_STEPS", "Underdamped",
           "UnderdampedState", "euler_step", "explicit_step", "splitting_step"]

IDENTITY = Identity()
INTEGRATORS = ("euler", "explicit", "splitting")  # the keys of INTEGRATOR_STEPS
INIT_MOMENTA = ("random", "zero")


class UnderdampedState(NamedTuple):
    position: Any
    momentum: Any
    est: Any


@pytree_dataclass
class Underdamped(Dynamics):
    """SGHMC dynamics with friction ``friction`` (D), the chosen integrator and initial
    momentum, and mass matrix ``preconditioner``⁻¹ (the state's momentum is whitened)."""

    friction: Any
    integrator: str = static("euler")
    init_momentum: str = static("random")
    preconditioner: Any = Identity()

    @property
    def rule_family(self) -> str:
        """sgmc.tune.rules has formulas for each integrator."""
        return self.integrator

    def unset(self) -> tuple[str, ...]:
        return ("friction",) if self.friction is None else ()

    def tuned(self, preconditioner: Any = None, friction: Any = None) -> Underdamped:
        out = self if preconditioner is None else replace(self, preconditioner=preconditioner)
        if friction is not None and self.friction is None:
            out = replace(out, friction=jnp.float32(friction))
        return out

    def init(self, problem, estimator, position, key, params):
        k_mom, k_est = jax.random.split(key)
        noise = normal_like(k_mom, position)
        scale = 0.0 if self.init_momentum == "zero" else jnp.sqrt(params.temperature)
        momentum = jax.tree.map(lambda z: scale * z, noise)
        return UnderdampedState(position, momentum, estimator.init(problem, position, k_est))

    def step(self, problem, estimator, state, batch, rng, params):
        return INTEGRATOR_STEPS[self.integrator](problem, estimator, state, batch, rng, params,
                                                 self.friction, self.preconditioner)


def _noise_scale(params, friction):
    """σ√h = √(2Dhτ): the standard deviation of the kick's noise."""
    fr, h, tau = friction, params.step_size, params.temperature
    return jnp.sqrt(2.0 * fr * h * tau)


def _kick_context(params, noise_scale, drift, offset, pre):
    """The kick's description for the estimator (:class:`Context`)."""
    return Context(t=params.t, step_size=params.step_size, temperature=params.temperature,
                   noise_scale=noise_scale, drift=drift, offset=offset, preconditioner=pre)


def euler_step(problem, estimator, state, batch, rng, params, friction, pre=IDENTITY,
               explicit=False):
    """Semi-implicit Euler (SVRG-HMC paper eq. 1–2); with ``explicit=True`` explicit
    Euler–Maruyama (EWSG paper eq. 3): the same kick, the position moved with the old
    momentum. ``pre``: the preconditioner (module docstring, "Mass matrix")."""
    r_est, r_noise = as_rng(rng).split()
    h, fr = params.step_size, friction
    noise_scale = _noise_scale(params, fr)
    noise = r_noise.normal_like(state.position)
    tmap = jax.tree.map
    drift = tmap(lambda p: (1.0 - fr * h) * p, state.momentum)
    ctx = _kick_context(params, noise_scale, drift, tmap(lambda p: h * fr * p, state.momentum),
                        pre)
    grad, est, n = estimator.estimate(problem, state.est, state.position, batch, r_est, ctx)
    p = tmap(lambda d, g, z: d - h * g + noise_scale * z, drift, pre.scale_t(grad), noise)
    # Semi-implicit Euler moves with the new momentum, explicit Euler with the old.
    moving = state.momentum if explicit else p
    theta = tmap(lambda x, p: x + h * p, state.position, pre.scale(moving))
    return UnderdampedState(theta, p, est), n


def explicit_step(problem, estimator, state, batch, rng, params, friction, pre=IDENTITY):
    """Explicit Euler–Maruyama (EWSG paper eq. 3): see :func:`euler_step`."""
    return euler_step(problem, estimator, state, batch, rng, params, friction, pre,
                      explicit=True)


def splitting_step(problem, estimator, state, batch, rng, params, friction, pre=IDENTITY):
    """The symmetric splitting of eq. (12)–(16) (module docstring): half drift, half
    friction decay, kick with the gradient at the half-step point, decay, half drift."""
    r_est, r_noise = as_rng(rng).split()
    h, fr = params.step_size, friction
    noise_scale = _noise_scale(params, fr)
    noise = r_noise.normal_like(state.position)
    tmap = jax.tree.map
    decay = jnp.exp(-0.5 * fr * h)
    half = tmap(lambda x, p: x + 0.5 * h * p, state.position, pre.scale(state.momentum))
    p1 = tmap(lambda p: decay * p, state.momentum)
    ctx = _kick_context(params, noise_scale, p1,
                        tmap(lambda p: (1.0 / decay - decay) * p, state.momentum), pre)
    grad, est, n = estimator.estimate(problem, state.est, half, batch, r_est, ctx)
    p = tmap(lambda p, g, z: decay * (p - h * g + noise_scale * z), p1, pre.scale_t(grad),
             noise)
    theta = tmap(lambda x, p: x + 0.5 * h * p, half, pre.scale(p))
    return UnderdampedState(theta, p, est), n


#: The underdamped integrators, each a pure function
#: ``(problem, estimator, state, batch, rng, params, friction, preconditioner) ->
#: (state, n_evals)``.
INTEGRATOR_STEPS = {"euler": euler_step, "explicit": explicit_step,
                    "splitting": splitting_step}
