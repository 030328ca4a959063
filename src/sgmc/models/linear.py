"""Bayesian linear regression with Gaussian prior and noise, and its exact posterior.

Model: y_i = x_iᵀθ + ε_i, ε_i ~ N(0, σ²), θ ~ N(0, s² I). The posterior is Gaussian with

    Σ = (XᵀX / σ² + I / s²)⁻¹,    μ = Σ Xᵀy / σ²,

which the tests use as ground truth (the SVRG-HMC paper's regression experiments use this
model with s = 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc.model.posterior import Posterior
from sgmc.models._common import GaussianLogPrior, check_xy, xy_data

__all__ = ["linear_regression", "linear_regression_posterior", "synthetic_linear_data"]


@dataclass(frozen=True)
class GaussianLoglik:
    """log N(y; xᵀθ, σ²) of one datum {"x": (d,), "y": ()}.

    A generalised linear model: ``predictor`` is linear in θ and the per-datum energy is
    ``predictor_loss(predictor(θ, datum), datum)`` (what lightweight SAGA relies on).
    """

    noise_std: float

    def predictor(self, theta: jax.Array, datum) -> jax.Array:
        return jnp.dot(datum["x"], theta)

    def predictor_loss(self, z: jax.Array, datum) -> jax.Array:
        var = self.noise_std ** 2
        return 0.5 * (datum["y"] - z) ** 2 / var + 0.5 * jnp.log(2 * jnp.pi * var)

    def __call__(self, theta: jax.Array, datum) -> jax.Array:
        return -self.predictor_loss(self.predictor(theta, datum), datum)


def linear_regression(X, y, noise_std: float = 1.0, prior_std: float = 1.0,
                      chunk_size: int = 1024, buffer_rows: int | None = None) -> Posterior:
    """The posterior of Bayesian linear regression as an :class:`sgmc.Posterior`.

    Args:
        X: features (N, d). Add a column of ones for an intercept.
        y: targets (N,).
        noise_std: σ > 0, the known noise standard deviation.
        prior_std: s > 0, the prior standard deviation of every coefficient.
        chunk_size: rows per chunk in full-data passes.
        buffer_rows: stream the data (:class:`sgmc.Stream`): the device holds this many
            rows at a time, and X — typically ``np.load(path, mmap_mode="r")`` — is never
            read whole. Default: all data in memory.
    """
    X, y = check_xy(X, y, streamed=buffer_rows is not None)
    sigma = check.positive("noise_std", noise_std)
    s = check.positive("prior_std", prior_std)
    return Posterior(GaussianLoglik(sigma), GaussianLogPrior(s),
                     xy_data(X, y.astype(np.float32), buffer_rows), chunk_size=chunk_size)


def linear_regression_posterior(X, y, noise_std: float = 1.0,
                                prior_std: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Exact posterior mean μ and covariance Σ (float64) of :func:`linear_regression`."""
    X, y = check_xy(X, y)
    precision = X.T @ X / noise_std ** 2 + np.eye(X.shape[1]) / prior_std ** 2
    cov = np.linalg.inv(precision)
    cov = 0.5 * (cov + cov.T)
    return cov @ (X.T @ y) / noise_std ** 2, cov


def synthetic_linear_data(num_data: int = 10_000, dim: int = 5, correlation: float = 0.5,
                          noise_std: float = 1.0, seed: int = 0):
    """Correlated Gaussian features (equicorrelation ``correlation``), θ* ~ N(0, I), y = Xθ* + ε.

    Returns ``(X, y, theta_true)`` as float64 NumPy arrays.
    """
    n = check.integer("num_data", num_data, lo=1)
    d = check.integer("dim", dim, lo=1)
    rho = check.real("correlation", correlation, lo=0.0, hi=1.0, hi_open=True)
    rng = np.random.default_rng(seed)
    corr = (1 - rho) * np.eye(d) + rho * np.ones((d, d))
    X = rng.standard_normal((n, d)) @ np.linalg.cholesky(corr).T
    theta = rng.standard_normal(d)
    y = X @ theta + noise_std * rng.standard_normal(n)
    return X, y, theta
