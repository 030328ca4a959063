"""Overdamped Langevin dynamics: SGLD (Welling & Teh 2011), and SGD/GD at τ = 0.

Euler–Maruyama discretisation of dθ = −∇U dt + sqrt(2τ) dW (Welling & Teh 2011, eq. 4):

    θ_{k+1} = θ_k − h ∇̃U(θ_k) + sqrt(2 h τ) ξ_k,    ξ_k ~ N(0, I),

and with a preconditioner P = L Lᵀ (:mod:`sgmc.kernels.preconditioners`; Girolami & Calderhead 2011,
eq. 9 with a constant metric)

    θ_{k+1} = θ_k − h P ∇̃U(θ_k) + sqrt(2 h τ) L ξ_k,

the plain step in the whitened coordinates z = L⁻¹θ, whose kick EWSG weighs.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sgmc._pytree import pytree_dataclass
from sgmc.contracts.estimator import Context
from sgmc.contracts.integrator import Dynamics
from sgmc.kernels.preconditioners import Identity
from sgmc.rng import as_rng

__all__ = ["Langevin", "LangevinState"]


class LangevinState(NamedTuple):
    position: Any
    est: Any


@pytree_dataclass
class Langevin(Dynamics):
    """Overdamped Langevin (SGLD) dynamics with a constant ``preconditioner`` P."""

    preconditioner: Any = Identity()

    rule_family = "langevin"  # sgmc.tune.rules' overdamped formulas

    def init(self, problem, estimator, position, key, params):
        return LangevinState(position, estimator.init(problem, position, key))

    def step(self, problem, estimator, state, batch, rng, params):
        r_est, r_noise = as_rng(rng).split()
        h, tau = params.step_size, params.temperature
        scale = jnp.sqrt(2.0 * h * tau)
        pre = self.preconditioner
        # The kicked variable is z = L⁻¹θ (θ itself without a preconditioner).
        ctx = Context(t=params.t, step_size=h, temperature=tau, noise_scale=scale,
                      drift=pre.unscale(state.position), preconditioner=pre)
        grad, est, n_evals = estimator.estimate(problem, state.est, state.position, batch,
                                                r_est, ctx)
        noise = pre.scale(r_noise.normal_like(state.position))
        position = jax.tree.map(lambda x, g, z: x - h * g + scale * z,
                                state.position, pre.precondition(grad), noise)
        return LangevinState(position, est), n_evals
