"""sgmc.tune.curvature against a posterior whose Hessian is known exactly: Bayesian linear
regression with known noise, ∇²U = XᵀX/σ² + I/s² everywhere (correlated predictors make
it far from diagonal and badly conditioned)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.tune import curvature

SIGMA, PRIOR_SD = 0.5, 3.0


def _problem(d=6, n=200, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, d))
    X = (z + 2.0 * z[:, :1]).astype(np.float32)  # a shared factor: correlated columns
    y = rng.normal(size=n).astype(np.float32)
    post = sgmc.Posterior(lambda w, r: -0.5 * ((r["y"] - r["x"] @ w) / SIGMA) ** 2,
                          lambda w: -0.5 * jnp.sum((w / PRIOR_SD) ** 2), {"x": X, "y": y},
                          chunk_size=64)  # several chunks and a remainder
    H = X.astype(np.float64).T @ X / SIGMA ** 2 + np.eye(d) / PRIOR_SD ** 2
    return post, H


def test_hessian_vector_products_are_exact():
    post, H = _problem()
    v = np.random.default_rng(1).normal(size=6).astype(np.float32)
    got = np.asarray(curvature.hvp(post, jnp.zeros(6), jnp.asarray(v)))
    np.testing.assert_allclose(got, H @ v, rtol=1e-4, atol=1e-3 * np.abs(H @ v).max())


def test_lanczos_gives_the_extreme_eigenvalues():
    post, H = _problem()
    want = np.linalg.eigvalsh(H)
    assert want[-1] / want[0] > 100  # badly conditioned
    lo, hi = curvature.extreme_eigenvalues(post, jnp.ones(6), num_iters=6)
    np.testing.assert_allclose([lo, hi], [want[0], want[-1]], rtol=1e-3)
    # Fewer iterations give inner bounds (Ritz values interlace).
    lo3, hi3 = curvature.extreme_eigenvalues(post, jnp.ones(6), num_iters=3)
    assert want[0] * (1 - 1e-4) <= lo3 and hi3 <= want[-1] * (1 + 1e-4)


def test_hutchinson_diagonal_within_its_standard_error():
    """Entry i has variance Σ_{j≠i} H_ij² / m: each estimate within 4 SE."""
    post, H = _problem()
    m = 64
    got = np.asarray(curvature.diagonal(post, jnp.zeros(6), num_probes=m, seed=3))
    se = np.sqrt((np.sum(H ** 2, axis=1) - np.diag(H) ** 2) / m)
    assert np.all(np.abs(got - np.diag(H)) <= 4 * se), (got, np.diag(H), se)


def test_arguments_are_checked():
    post, _ = _problem()
    with pytest.raises(ValueError, match="num_iters"):
        curvature.extreme_eigenvalues(post, jnp.zeros(6), num_iters=0)
    with pytest.raises(TypeError, match="problem must be"):
        curvature.hvp(lambda x: x, jnp.zeros(6), jnp.zeros(6))
