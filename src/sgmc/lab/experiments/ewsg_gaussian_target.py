"""The target and the chain runner of ``ewsg-gaussian`` (Li, Wang, Zha & Tao, EWSG, Sec. 5.1),
shared by :mod:`~sgmc.lab.experiments.ewsg_gaussian` and
:mod:`~sgmc.lab.experiments.ewsg_best_m` (and re-exported by the first).

V(θ) = Σ_{i=1}^{n} ½‖θ − c_i‖² with c_i ~ N(0, I₂): a posterior with a flat prior whose exact
law at τ = 1 is N(c̄, I/n); the accuracy of a sampler is the KL divergence between the
Gaussian fitted over many independent chains and that law.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax.numpy as jnp
import numpy as np

from sgmc import Posterior, diagnostics, sample

__all__ = ["INTEGRATOR", "kl_curve", "problem", "run_one"]

#: The integrator of SGHMC and EWSG here: the paper's eq. (3).
INTEGRATOR = "explicit"


@dataclass(frozen=True)
class _Quadratic:
    """log-likelihood −½‖θ − c‖² of one centre c (θ one 2-vector: the sum is over its last
    axis only, so a stack of per-chain starting points is not mistaken for one point)."""

    def __call__(self, theta, c):
        return -0.5 * jnp.sum((theta - c) ** 2, axis=-1)


def _flat(theta):
    return jnp.zeros((), theta.dtype)


def problem(n: int, seed: int):
    """The paper's 2-D Gaussian target: ``(posterior, exact mean c̄, exact covariance I/n)``
    for V(θ) = Σ_i ½‖θ − c_i‖² with n centres c_i ~ N(0, I₂) drawn from ``seed``."""
    centres = np.random.default_rng(seed).standard_normal((n, 2))
    return Posterior(_Quadratic(), _flat, centres), centres.mean(0), np.eye(2) / n


def kl_curve(draws: np.ndarray, mu, sigma) -> np.ndarray:
    """KL of the Gaussian fitted over chains at every draw; draws (chains, draws, 2)."""
    x = np.asarray(draws, np.float64)
    return np.array([diagnostics.gaussian_kl(x[:, k], mu, sigma) for k in range(x.shape[1])])


def run_one(post, sampler, evals_per_step, n, passes, chains, seed, points=30):
    """``chains`` independent chains from θ = 0 for ``passes`` data passes (by
    ``evals_per_step`` evaluations a step, data size ``n``), thinned to ``points`` draws per
    chain; returns the :class:`sgmc.Result`."""
    steps = math.ceil(passes * n / evals_per_step)
    thin = max(1, steps // points)
    return sample(post, sampler, jnp.zeros(2), num_steps=thin * points, num_chains=chains,
                  thin=thin, seed=seed, progress=False)
