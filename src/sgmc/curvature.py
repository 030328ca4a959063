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

from . import _validate as check
from .problem import Problem

PyTree = Any

__all__ = ["diagonal", "extreme_eigenvalues", "hvp"]


def _check(problem: Any) -> None:
    if not isinstance(problem, Problem):
        raise TypeError("problem must be an sgmc.Posterior or sgmc.Objective, got "
                        f"{type(problem).__name__}")


def hvp(problem: Problem, point: PyTree, vector: PyTree) -> PyTree:
    """H v = ∇²U(θ) v of the full-data energy at ``point`` (a pytree like ``point``)."""
    _check(problem)
    return jax.jvp(problem.full_grad, (point,), (vector,))[1]


def _flat_hvp(problem: Problem, point: PyTree):
    flat, unravel = ravel_pytree(point)
    dtype = flat.dtype

    @jax.jit
    def matvec(v):
        return ravel_pytree(hvp(problem, point, unravel(v.astype(dtype))))[0]

    return flat, matvec


def extreme_eigenvalues(problem: Problem, point: PyTree, num_iters: int = 30,
                        seed: int = 0) -> tuple[float, float]:
    """(λ_min, λ_max) of ∇²U(θ) by ``num_iters`` steps of the Lanczos iteration (with full
    reorthogonalisation, in float64 on the host: O(num_iters · d) memory). The extreme
    Ritz values converge first: λ_max from below, λ_min from above, so ``num_iters`` ≥ d
    gives them to rounding and fewer give inner bounds."""
    _check(problem)
    k = check.integer("num_iters", num_iters, lo=1)
    seed = check.integer("seed", seed, lo=0, hi=2**32 - 1)
    flat, matvec = _flat_hvp(problem, point)
    d = flat.size
    k = min(k, d)
    q = np.random.default_rng(seed).standard_normal(d)
    basis = [q / np.linalg.norm(q)]
    alphas, betas = [], []
    for j in range(k):
        w = np.asarray(matvec(jnp.asarray(basis[j])), np.float64)
        alphas.append(float(basis[j] @ w))
        for _ in range(2):  # full reorthogonalisation, twice: the basis stays orthonormal
            for b in basis:
                w -= (b @ w) * b
        beta = float(np.linalg.norm(w))
        if j == k - 1 or beta <= 1e-10 * max(1.0, abs(alphas[-1])):
            break
        betas.append(beta)
        basis.append(w / beta)
    tri = np.diag(alphas) + np.diag(betas[:len(alphas) - 1], 1) + np.diag(
        betas[:len(alphas) - 1], -1)
    ritz = np.linalg.eigvalsh(tri)
    return float(ritz[0]), float(ritz[-1])


def diagonal(problem: Problem, point: PyTree, num_probes: int = 16,
             seed: int = 0) -> PyTree:
    """Hutchinson's estimate of diag(∇²U(θ)), a pytree like ``point``: the mean over
    ``num_probes`` Rademacher vectors v of v ⊙ H v. Unbiased, with variance
    Σ_{j≠i} H_ij² / num_probes for entry i (exact for a diagonal H)."""
    _check(problem)
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
