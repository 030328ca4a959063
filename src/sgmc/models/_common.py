"""Shared model parts: priors as value-hashable callables (so equal models share one
compiled program) and the checks of a design matrix and its targets."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from sgmc.model.stream import Stream


@dataclass(frozen=True)
class GaussianLogPrior:
    """log N(θ; 0, std² I), summed over every leaf of θ."""

    std: float

    def __call__(self, params) -> jax.Array:
        var = self.std ** 2
        total = 0.0
        for x in jax.tree.leaves(params):
            total = total - 0.5 * jnp.sum(x ** 2) / var - 0.5 * x.size * jnp.log(2 * jnp.pi * var)
        return total


def check_xy(X, y, y_dtype=np.float64, streamed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """X as a float64 (N, d) array and y as an (N,) array, or a ValueError naming the problem.

    ``streamed``: X is not converted (a memory map stays one, unread) and only its shape
    and dtype are checked; y (N numbers) is read.
    """
    X = np.asarray(X) if streamed else np.asarray(X, dtype=np.float64)
    if not np.issubdtype(X.dtype, np.number):
        raise TypeError(f"X must be numeric, got dtype {X.dtype}")
    y = np.asarray(y) if y_dtype is None else np.asarray(y, dtype=y_dtype)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (N, d), got shape {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},) to match X, got {y.shape}")
    return X, y


def xy_data(X, y, buffer_rows: int | None) -> dict | Stream:
    """A model's data {"x": float32 features, "y": targets as given}: in memory, or, with
    ``buffer_rows``, an :class:`sgmc.Stream` of them (X read B rows at a time)."""
    if buffer_rows is None:
        return {"x": np.asarray(X, np.float32), "y": y}
    return Stream({"x": X, "y": y}, buffer_rows)
