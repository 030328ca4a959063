"""Preconditioners: a constant positive-definite P (≈ the posterior covariance), held as a
factor L with P = L Lᵀ, for SGLD and SGHMC with any estimator, integrator or coupling.

With P, Langevin dynamics runs in the whitened coordinates z = L⁻¹θ, where the target's
curvature Lᵀ ∇²U L is close to the identity (Girolami & Calderhead 2011, eq. 9 with a constant
metric, so no Γ term; Li, Chen, Carlson & Carin 2016, eq. 3 with G = P constant):

    SGLD:   θ_{k+1} = θ_k − h P ∇̃U(θ_k) + √(2hτ) L ξ_k,

and SGHMC with mass matrix M = P⁻¹ (Chen, Fox & Guestrin 2014, eq. 9 with friction C = D M,
so dp = −∇U dt − D p dt + √(2Dτ) M^{1/2} dW and θ̇ = M⁻¹ p) is unit-mass SGHMC in z with the
whitened momentum q = Lᵀ p ~ N(0, τ I), which is what the state holds:

    q_{k+1} = (1 − Dh) q_k − h Lᵀ ∇̃U(θ_k) + √(2Dhτ) ξ_k,    θ_{k+1} = θ_k + h L q_{k+1}

(Euler; the explicit and splitting integrators likewise, with every position move θ += c L q).
Every kick is isotropic in whitened coordinates, which is the noise covariance EWSG's weights
need (:mod:`sgmc.kernels.estimators.ewsg`). Variance reduction is untouched: the estimators estimate
∇U(θ), a linear image of ∇_z U.

Four forms (the factor is a pytree leaf: a new P does not recompile):

* :class:`Identity` — P = I, the plain samplers (bitwise the same draws);
* :class:`Diagonal` — L = diag(s), a pytree like the position (O(d));
* :class:`Dense` — L lower-triangular (Cholesky of P) on the flattened position (small d);
* :class:`LowRank` — P = S^{1/2}(I + U diag(e) Uᵀ)S^{1/2} with S diagonal and U (d × r)
  orthonormal: a diagonal corrected in r directions (large d, O(d r)).

Build them from a covariance with :func:`identity`, :func:`diagonal`, :func:`dense`,
:func:`low_rank`, or estimate them: :func:`sgmc.warmup` does so from curvature, and
:func:`from_draws` from warm-up draws (Stan's regularised windowed estimate).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from sgmc._pytree import pytree_dataclass

__all__ = ["Dense", "Diagonal", "Identity", "LowRank", "Preconditioner", "dense", "diagonal",
           "from_draws", "identity", "low_rank"]

PyTree = Any


class Preconditioner:
    """The four maps a dynamics needs, each linear in a pytree like the position.

    * :meth:`scale` — v ↦ L v (a whitened vector to model coordinates);
    * :meth:`scale_t` — g ↦ Lᵀ g (a gradient to whitened coordinates);
    * :meth:`unscale` — θ ↦ L⁻¹ θ;
    * :meth:`precondition` — g ↦ P g = L Lᵀ g.
    """

    kind: str = "preconditioner"

    def scale(self, v: PyTree) -> PyTree:
        raise NotImplementedError  # pragma: no cover

    def scale_t(self, g: PyTree) -> PyTree:
        raise NotImplementedError  # pragma: no cover

    def unscale(self, x: PyTree) -> PyTree:
        raise NotImplementedError  # pragma: no cover

    def precondition(self, g: PyTree) -> PyTree:
        return self.scale(self.scale_t(g))

    def matrix(self, like: PyTree) -> np.ndarray:
        """P as a dense d × d array for a position shaped like ``like`` (for tests and
        reports; O(d²))."""
        flat, unravel = ravel_pytree(like)
        eye = jnp.eye(flat.size, dtype=flat.dtype)
        cols = jax.vmap(lambda e: ravel_pytree(self.precondition(unravel(e)))[0])(eye)
        return np.asarray(cols).T


@pytree_dataclass
class Identity(Preconditioner):
    """P = I: every map returns its argument itself (no arithmetic, bitwise unchanged)."""

    kind = "identity"

    def scale(self, v):
        return v

    def scale_t(self, g):
        return g

    def unscale(self, x):
        return x

    def precondition(self, g):
        return g


@pytree_dataclass
class Diagonal(Preconditioner):
    """P = diag(s²), ``s`` a pytree like the position (standard deviations)."""

    s: Any
    kind = "diagonal"

    def scale(self, v):
        return jax.tree.map(jnp.multiply, self.s, v)

    scale_t = scale

    def unscale(self, x):
        return jax.tree.map(jnp.divide, x, self.s)


def _flat(fn):
    """Lift a map on flat vectors to pytrees like the position."""
    def lifted(tree):
        flat, unravel = ravel_pytree(tree)
        return unravel(fn(flat).astype(flat.dtype))
    return lifted


@pytree_dataclass
class Dense(Preconditioner):
    """P = L Lᵀ with ``chol`` = L lower-triangular, on the flattened position
    (``jax.flatten_util.ravel_pytree`` order)."""

    chol: Any
    kind = "dense"

    def scale(self, v):
        return _flat(lambda f: self.chol @ f)(v)

    def scale_t(self, g):
        return _flat(lambda f: self.chol.T @ f)(g)

    def unscale(self, x):
        return _flat(lambda f: jax.scipy.linalg.solve_triangular(self.chol, f, lower=True))(x)


@pytree_dataclass
class LowRank(Preconditioner):
    """P = S^{1/2}(I + U diag(e) Uᵀ)S^{1/2}: ``s`` = the diagonal's square root (flat, d),
    ``basis`` = U (d × r, orthonormal columns), ``factor`` = √(1 + e) − 1 (r), so that
    L = S^{1/2}(I + U diag(factor) Uᵀ) and L Lᵀ = P."""

    s: Any
    basis: Any
    factor: Any
    kind = "low_rank"

    def _middle(self, f, a):  # (I + U diag(a) Uᵀ) f
        return f + self.basis @ (a * (self.basis.T @ f))

    def scale(self, v):
        return _flat(lambda f: self.s * self._middle(f, self.factor))(v)

    def scale_t(self, g):
        return _flat(lambda f: self._middle(self.s * f, self.factor))(g)

    def unscale(self, x):
        # L⁻¹ = (I + U diag(a) Uᵀ)⁻¹ S^{-1/2}, with
        # (I + U diag(a) Uᵀ)⁻¹ = I + U diag(1/(1 + a) − 1) Uᵀ (orthonormal U)
        inv = 1.0 / (1.0 + self.factor) - 1.0
        return _flat(lambda f: self._middle(f / self.s, inv))(x)


def identity() -> Identity:
    """P = I (the default of every sampler)."""
    return Identity()


def _positive(name: str, x) -> np.ndarray:
    a = np.asarray(x, np.float64)
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        raise ValueError(f"{name} must be finite and > 0 everywhere (a covariance's diagonal)")
    return a


def diagonal(variances: PyTree) -> Diagonal:
    """P = diag(variances), a pytree like the position (e.g. posterior variances)."""
    return Diagonal(jax.tree.map(
        lambda v: jnp.asarray(np.sqrt(_positive("variances", v)), jnp.float32), variances))


def dense(covariance: Any) -> Dense:
    """P = ``covariance`` (d × d, symmetric positive definite, over the flattened position)."""
    c = np.asarray(covariance, np.float64)
    if c.ndim != 2 or c.shape[0] != c.shape[1]:
        raise ValueError(f"covariance must be a square d × d matrix, got shape {c.shape}")
    if not np.all(np.isfinite(c)) or not np.allclose(c, c.T, rtol=1e-6,
                                                    atol=1e-12 * np.abs(c).max()):
        raise ValueError("covariance must be finite and symmetric")
    try:
        chol = np.linalg.cholesky(c)
    except np.linalg.LinAlgError:
        raise ValueError("covariance must be positive definite (its Cholesky factorisation "
                         "failed)") from None
    return Dense(jnp.asarray(chol, jnp.float32))


def low_rank(variances: Any, basis: Any, eigenvalues: Any) -> LowRank:
    """P = S^{1/2}(I + U diag(λ − 1) Uᵀ)S^{1/2}: the diagonal S = diag(``variances``) (flat,
    d), corrected to relative variance λ_j > 0 along the orthonormal columns u_j of
    ``basis`` (d × r) in the S-whitened coordinates."""
    s = np.sqrt(_positive("variances", np.ravel(variances)))
    u = np.asarray(basis, np.float64)
    lam = _positive("eigenvalues", np.ravel(eigenvalues))
    if u.ndim != 2 or u.shape != (s.size, lam.size):
        raise ValueError(f"basis must be d × r = {s.size} × {lam.size}, got {u.shape}")
    if not np.allclose(u.T @ u, np.eye(lam.size), atol=1e-5):
        raise ValueError("basis must have orthonormal columns")
    return LowRank(jnp.asarray(s, jnp.float32), jnp.asarray(u, jnp.float32),
                   jnp.asarray(np.sqrt(lam) - 1.0, jnp.float32))


def from_draws(draws: PyTree, kind: str = "dense", rank: int = 10) -> Preconditioner:
    """A preconditioner from warm-up draws (a pytree with a leading draw axis; merge any
    chain axis into it first), regularised towards a small multiple of the identity as Stan's
    windowed adaptation does: Σ̂ ← n/(n + 5) Σ̂ + 10⁻³ · 5/(n + 5) I (Stan Reference Manual, "HMC
    algorithm parameters"). ``kind``: ``"diagonal"``, ``"dense"`` or ``"low_rank"`` (the
    diagonal corrected along the ``rank`` leading directions of the diagonally scaled
    covariance)."""
    leaves = jax.tree.leaves(draws)
    if not leaves:
        raise ValueError("draws must be a pytree of arrays with a leading draw axis")
    n = int(np.shape(leaves[0])[0])
    flat = np.asarray(jax.vmap(lambda row: ravel_pytree(row)[0])(draws), np.float64)
    flat = flat.reshape(n, -1)
    if n < 3:
        raise ValueError(f"from_draws needs at least 3 draws, got {n}")
    cov = np.atleast_2d(np.cov(flat, rowvar=False))
    cov = n / (n + 5.0) * cov + 1e-3 * 5.0 / (n + 5.0) * np.eye(cov.shape[0])
    like = jax.tree.map(lambda x: x[0], draws)
    if kind == "dense":
        return dense(cov)
    if kind == "diagonal":
        return diagonal(ravel_pytree(like)[1](jnp.asarray(np.diag(cov), jnp.float32)))
    if kind == "low_rank":
        var = np.diag(cov)
        corr = cov / np.sqrt(np.outer(var, var))
        lam, vec = np.linalg.eigh(corr)
        order = np.argsort(-np.abs(np.log(np.maximum(lam, 1e-12))))[:min(rank, lam.size)]
        return low_rank(var, vec[:, order], np.maximum(lam[order], 1e-6))
    raise ValueError(f"kind must be one of 'diagonal', 'dense', 'low_rank', got {kind!r}")
