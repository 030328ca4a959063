"""Bayesian logistic regression with a Gaussian prior.

Model: P(y_i = 1 | x_i, θ) = σ(x_iᵀθ), θ ~ N(0, s² I); labels y_i ∈ {0, 1}. Per-datum
log-likelihood y z − log(1 + eᶻ) with z = x_iᵀθ, computed stably with ``logaddexp``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc.model.posterior import Posterior
from sgmc.models._common import GaussianLogPrior, check_xy, xy_data

__all__ = ["logistic_regression", "synthetic_logistic_data"]


@dataclass(frozen=True)
class BernoulliLoglik:
    """log Bernoulli(y; σ(xᵀθ)) of one datum {"x": (d,), "y": ()}; a generalised linear
    model (see :class:`sgmc.models.linear.GaussianLoglik`)."""

    def predictor(self, theta: jax.Array, datum) -> jax.Array:
        return jnp.dot(datum["x"], theta)

    def predictor_loss(self, z: jax.Array, datum) -> jax.Array:
        return jnp.logaddexp(0.0, z) - datum["y"] * z

    def __call__(self, theta: jax.Array, datum) -> jax.Array:
        return -self.predictor_loss(self.predictor(theta, datum), datum)


def logistic_regression(X, y, prior_std: float = 1.0, chunk_size: int = 1024,
                        buffer_rows: int | None = None) -> Posterior:
    """The posterior of Bayesian logistic regression as an :class:`sgmc.Posterior`.

    Args:
        X: features (N, d). Add a column of ones for an intercept.
        y: labels (N,) in {0, 1}.
        prior_std: s > 0, the prior standard deviation of every coefficient.
        chunk_size: rows per chunk in full-data passes.
        buffer_rows: stream the data (:class:`sgmc.Stream`): the device holds this many
            rows at a time, and X — typically ``np.load(path, mmap_mode="r")`` — is never
            read whole. Default: all data in memory.
    """
    X, y = check_xy(X, y, y_dtype=None, streamed=buffer_rows is not None)
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("y must contain only the labels 0 and 1")
    s = check.positive("prior_std", prior_std)
    return Posterior(BernoulliLoglik(), GaussianLogPrior(s),
                     xy_data(X, y.astype(np.float32), buffer_rows), chunk_size=chunk_size)


def synthetic_logistic_data(num_data: int = 100_000, dim: int = 54, seed: int = 0):
    """Standard normal features, θ* ~ N(0, I/d), labels drawn from the model.

    Returns ``(X, y, theta_true)`` (y in {0, 1}).
    """
    n = check.integer("num_data", num_data, lo=1)
    d = check.integer("dim", dim, lo=1)
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    theta = rng.standard_normal(d) / np.sqrt(d)
    p = 1.0 / (1.0 + np.exp(-(X @ theta)))
    y = (rng.random(n) < p).astype(np.float64)
    return X, y, theta
