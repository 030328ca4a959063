"""Preconditioned SGLD (Li, Chen, Carlson & Carin 2016), a baseline of the EWSG paper.

RMSprop preconditioner from the per-datum mean gradient ḡ = ∇̃U / (wN) (wN = N for a
posterior; 1 for an objective, whose U is already a mean over the data, and for data-free
problems), with α = 0.99 and λ = 1e-5 by default:

    V_{k+1} = α V_k + (1 − α) ḡ ⊙ ḡ,    G = 1 / (λ + sqrt(V_{k+1})),
    θ_{k+1} = θ_k − h G ⊙ ∇̃U(θ_k) + sqrt(2 h τ G) ⊙ ξ_k.

The Γ(θ) correction term (derivative of G) is dropped, as is common practice and as in the
paper's own experiments; it vanishes as α → 1. ḡ here includes the prior gradient / N.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sgmc._pytree import pytree_dataclass
from sgmc._tree import zeros_like
from sgmc.contracts.estimator import Context
from sgmc.contracts.integrator import Dynamics
from sgmc.kernels import preconditioners
from sgmc.rng import as_rng

__all__ = ["PSGLD", "PSGLDState"]


class PSGLDState(NamedTuple):
    position: Any
    square_avg: Any
    est: Any


@pytree_dataclass
class PSGLD(Dynamics):
    """pSGLD dynamics with RMSprop decay ``alpha`` and regulariser ``eps`` (λ)."""

    alpha: Any
    eps: Any

    #: Overdamped (sgmc.tune.rules' Langevin formulas) in the metric it adapts itself.
    rule_family = "langevin"
    metric = "adaptive"

    def settled_metric(self, mean_square: Any) -> preconditioners.Preconditioner:
        """G = 1/(λ + √V): what the running average settles to where E[ḡ²] = V."""
        eps = float(self.eps)
        return preconditioners.diagonal(jax.tree.map(
            lambda v: np.asarray(1.0 / (eps + np.sqrt(np.asarray(v, np.float64))), np.float32),
            mean_square))

    def init(self, problem, estimator, position, key, params):
        return PSGLDState(position, zeros_like(position), estimator.init(problem, position, key))

    def step(self, problem, estimator, state, batch, rng, params):
        r_est, r_noise = as_rng(rng).split()
        h, tau = params.step_size, params.temperature
        # No kick is described: the preconditioned noise √(2hτG) is not one EWSG's weights
        # were derived for (the psgld factory refuses such estimators).
        ctx = Context(t=params.t, step_size=h, temperature=tau)
        grad, est, n = estimator.estimate(problem, state.est, state.position, batch, r_est, ctx)
        # ḡ = ∇̃U / (w N): the per-datum mean (w N = N for a posterior, streamed or not;
        # 1 for an objective, whose gradient is already a mean, and without data).
        per_datum = 1.0 / max(problem.data_weight * problem.data_rows, 1.0)
        v = jax.tree.map(lambda v, g: self.alpha * v + (1.0 - self.alpha) * (g * per_datum) ** 2,
                         state.square_avg, grad)
        precond = jax.tree.map(lambda v: 1.0 / (self.eps + jnp.sqrt(v)), v)
        noise = r_noise.normal_like(state.position)
        position = jax.tree.map(
            lambda x, g, G, z: x - h * G * g + jnp.sqrt(2.0 * h * tau * G) * z,
            state.position, grad, precond, noise)
        return PSGLDState(position, v, est), n
