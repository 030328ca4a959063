"""Bayesian multi-class logistic (softmax) regression with a Gaussian prior.

Model: P(y_i = k | x_i, Θ) = softmax(x_iᵀΘ)_k with Θ ∈ R^{d×K}, Θ ~ N(0, s² I), labels
y_i ∈ {0, …, K−1}. A generalised linear model with a K-vector predictor, so lightweight SAGA
stores K numbers per datum.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc.model.posterior import Posterior
from sgmc.models._common import GaussianLogPrior, check_xy, xy_data

__all__ = ["softmax_regression"]


@dataclass(frozen=True)
class CategoricalLoglik:
    """log softmax(xᵀΘ)_y of one datum {"x": (d,), "y": () int}."""

    def predictor(self, theta: jax.Array, datum) -> jax.Array:
        return jnp.dot(datum["x"], theta)

    def predictor_loss(self, z: jax.Array, datum) -> jax.Array:
        return jax.nn.logsumexp(z) - jnp.take(z, datum["y"])

    def __call__(self, theta: jax.Array, datum) -> jax.Array:
        return -self.predictor_loss(self.predictor(theta, datum), datum)


def softmax_regression(X, y, num_classes: int | None = None, prior_std: float = 1.0,
                       chunk_size: int = 1024, buffer_rows: int | None = None) -> Posterior:
    """The posterior of Bayesian softmax regression; parameters are a (d, K) matrix.

    Args:
        X: features (N, d). Add a column of ones for intercepts.
        y: integer labels (N,) in {0, …, K−1}.
        num_classes: K (default: max(y) + 1).
        prior_std: s > 0, the prior standard deviation of every weight.
        chunk_size: rows per chunk in full-data passes.
        buffer_rows: stream the data (:class:`sgmc.Stream`): the device holds this many
            rows at a time, and X — typically ``np.load(path, mmap_mode="r")`` — is never
            read whole. Default: all data in memory.
    """
    X, y = check_xy(X, y, y_dtype=None, streamed=buffer_rows is not None)
    if not np.issubdtype(y.dtype, np.integer) and not np.all(np.mod(y, 1) == 0):
        raise ValueError("y must contain integer class labels")
    k = int(y.max()) + 1 if num_classes is None else check.integer("num_classes", num_classes,
                                                                     lo=2)
    if y.min() < 0 or y.max() >= k:
        raise ValueError(f"y must contain labels in [0, {k - 1}] (num_classes = {k})")
    s = check.positive("prior_std", prior_std)
    return Posterior(CategoricalLoglik(), GaussianLogPrior(s),
                     xy_data(X, y.astype(np.int32), buffer_rows), chunk_size=chunk_size)
