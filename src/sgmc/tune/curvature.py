"""Curvature of a problem's energy at a point, without forming the d×d Hessian.

The building blocks of step-size rules and preconditioners: Hessian-vector products of the
full-data energy, H v = ∇²U(θ) v (forward-over-reverse differentiation of the chunked
full gradient: O(chunk · d) memory, the cost of about two gradient passes), the extreme
eigenvalues of H by the Lanczos iteration, and its diagonal by Hutchinson's estimator
diag(H) ≈ (1/m) Σ_k v_k ⊙ H v_k with Rademacher v_k (unbiased; Bekas, Kokiopoulou & Saad
2007).

Points and vectors are on the sampled scale (for a problem with constrained parameters,
``problem.unconstrain(theta)``).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from sgmc import _validate as check
from sgmc.model.oracle import Problem, require_problem

PyTree = Any

__all__ = ["diagonal", "extreme_eigenvalues", "hessian", "hvp", "lanczos"]


def hvp(problem: Problem, point: PyTree, vector: PyTree) -> PyTree:
    """H v = ∇²U(θ) v of the full-data energy at ``point`` (a pytree like ``point``)."""
    require_problem(problem)
    return jax.jvp(problem.full_grad, (point,), (vector,))[1]


def _flat_hvp(problem: Problem, point: PyTree):
    flat, unravel = ravel_pytree(point)
    dtype = flat.dtype

    @jax.jit
    def matvec(v):
        return ravel_pytree(hvp(problem, point, unravel(v.astype(dtype))))[0]

    return flat, matvec


def lanczos(matvec: Any, dim: int, num_iters: int = 30,
            seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Ritz values (ascending) and Ritz vectors (columns, d × k) of a symmetric operator
    ``matvec`` (flat float vectors of size ``dim``) after k = min(``num_iters``, dim) steps of
    the Lanczos iteration with full reorthogonalisation (twice, in float64 on the host:
    O(k · d) memory). The extreme Ritz values converge first: the largest from below, the
    smallest from above, so k ≥ d gives them to rounding and fewer give inner bounds."""
    k = min(check.integer("num_iters", num_iters, lo=1), dim)
    seed = check.integer("seed", seed, lo=0, hi=2**32 - 1)
    q = np.random.default_rng(seed).standard_normal(dim)
    basis = [q / np.linalg.norm(q)]
    alphas, betas = [], []
    for j in range(k):
        w = np.asarray(matvec(jnp.asarray(basis[j], jnp.float32)), np.float64)
        alphas.append(float(basis[j] @ w))
        for _ in range(2):  # full reorthogonalisation, twice: the basis stays orthonormal
            for b in basis:
                w -= (b @ w) * b
        beta = float(np.linalg.norm(w))
        if j == k - 1 or beta <= 1e-10 * max(1.0, abs(alphas[-1])):
            break
        betas.append(beta)
        basis.append(w / beta)
    m = len(alphas)
    tri = np.diag(alphas) + np.diag(betas[:m - 1], 1) + np.diag(betas[:m - 1], -1)
    ritz, vecs = np.linalg.eigh(tri)
    return ritz, np.stack(basis[:m], axis=1) @ vecs


def extreme_eigenvalues(problem: Problem, point: PyTree, num_iters: int = 30,
                        seed: int = 0) -> tuple[float, float]:
    """(λ_min, λ_max) of ∇²U(θ) by ``num_iters`` steps of :func:`lanczos` (λ_max converges
    from below, λ_min from above; ``num_iters`` ≥ d gives them to rounding)."""
    require_problem(problem)
    flat, matvec = _flat_hvp(problem, point)
    ritz, _ = lanczos(matvec, flat.size, num_iters, seed)
    return float(ritz[0]), float(ritz[-1])


def hessian(problem: Problem, point: PyTree) -> np.ndarray:
    """The full-data Hessian ∇²U(θ) as a dense d × d float64 array over the flattened
    position (``ravel_pytree`` order), from d Hessian-vector products (small d only)."""
    require_problem(problem)
    flat, matvec = _flat_hvp(problem, point)
    cols = jax.lax.map(matvec, jnp.eye(flat.size, dtype=flat.dtype))
    h = np.asarray(cols, np.float64).T
    return 0.5 * (h + h.T)


def diagonal(problem: Problem, point: PyTree, num_probes: int = 16,
             seed: int = 0) -> PyTree:
    """Hutchinson's estimate of diag(∇²U(θ)), a pytree like ``point``: the mean over
    ``num_probes`` Rademacher vectors v of v ⊙ H v. Unbiased, with variance
    Σ_{j≠i} H_ij² / num_probes for entry i (exact for a diagonal H)."""
    require_problem(problem)
    m = check.integer("num_probes", num_probes, lo=1)
    seed = check.integer("seed", seed, lo=0, hi=2**32 - 1)
    flat, matvec = _flat_hvp(problem, point)
    _, unravel = ravel_pytree(point)
    keys = jax.random.split(jax.random.key(seed), m)
    total = jnp.zeros_like(flat)
    for key in keys:
        v = jax.random.rademacher(key, flat.shape, flat.dtype)
        total = total + v * matvec(v)
    return unravel(total / m)
