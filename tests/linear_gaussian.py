"""Exact reference numbers for samplers on a conjugate linear-regression posterior.

For U(θ) = ½ (θ − μ)ᵀ A (θ − μ) + const (the linear-regression posterior, A its precision) a
stochastic-gradient step is a *linear* recursion in the centred state with additive noise:
gradient noise e of covariance V (minibatch with replacement: V = (N²/n) Cov_i ∇L_i(μ)) and
injected Gaussian noise. Its stationary covariance C solves the discrete Lyapunov equation
C = F C Fᵀ + G W Gᵀ exactly. This gives each sampler's *known bias* at a finite step size —
discretisation and gradient noise together — to set honest test tolerances. The one
approximation: V is taken at μ; its variation over the posterior is O(d/N) relative.
"""

from __future__ import annotations

import arviz as az
import numpy as np
from scipy.linalg import solve_discrete_lyapunov


def gradient_noise_cov(X, y, mu, noise_std, batch_size):
    """Cov of the minibatch gradient estimate at μ: (N²/n) Cov_i(∇L_i(μ)) (with replacement)."""
    if batch_size is None:
        return np.zeros((X.shape[1], X.shape[1]))
    n_data = X.shape[0]
    g = -((y - X @ mu) / noise_std**2)[:, None] * X
    return n_data**2 / batch_size * np.cov(g.T, bias=True)


def _transition(step, d):
    """F and G of z' = F z + G w from a linear one-step map step(θ, p, w) -> (θ', p')."""
    def apply(z, w):
        th, p = step(z[:d], z[d:], w)
        return np.concatenate([th, p])
    F = np.stack([apply(e, np.zeros(d)) for e in np.eye(2 * d)], axis=1)
    G = np.stack([apply(np.zeros(2 * d), e) for e in np.eye(d)], axis=1)
    return F, G


def predicted_cov(kind, A, V, h, temperature=1.0, friction=None, precond=None):
    """Stationary covariance of θ for ``kind`` in {"sgld", "euler", "explicit", "splitting"}.

    ``precond`` (a vector G) turns SGLD into pSGLD with that preconditioner held fixed.
    """
    d = A.shape[0]
    eye = np.eye(d)
    if kind == "sgld":
        G = np.diag(np.ones(d) if precond is None else precond)
        F = eye - h * G @ A
        return solve_discrete_lyapunov(F, h**2 * G @ V @ G + 2 * h * temperature * G)
    D = friction
    # w = −h e + sqrt(2 D h τ) ξ: everything random that enters the momentum kick.
    W = h**2 * V + 2 * D * h * temperature * eye
    if kind == "euler":
        def step(th, p, w):
            p = (1 - D * h) * p - h * A @ th + w
            return th + h * p, p
    elif kind == "explicit":
        def step(th, p, w):
            return th + h * p, (1 - D * h) * p - h * A @ th + w
    elif kind == "splitting":
        c = np.exp(-D * h / 2)
        def step(th, p, w):
            th = th + h / 2 * p
            p = c * (c * p - h * A @ th + w)
            return th + h / 2 * p, p
    else:
        raise ValueError(kind)
    F, G = _transition(step, d)
    C = solve_discrete_lyapunov(F, G @ W @ G.T)
    return C[:d, :d]


def whitened_cov(cov, ref_cov):
    """Σ^{-1/2} C Σ^{-1/2} (all eigenvalues 1 when C = Σ)."""
    L = np.linalg.cholesky(ref_cov)
    Li = np.linalg.inv(L)
    return Li @ cov @ Li.T


def moment_check(draws, mu, sigma, pred_cov, z_mean=4.0, k_cov=3.0):
    """Compare draws (chains, draws, d) with the exact posterior (μ, Σ) and the prediction.

    Returns a dict with the scores and tolerances:

    * ``mean_err``: worst |mean_j − μ_j| / sd_j (posterior sd units); tolerance
      ``z_mean · max_j ŝd_j / (sd_j √ESS_j)`` — a z-score bound on the Monte Carlo error of a
      mean (the linear model's stationary mean is exactly μ for all three samplers, so there
      is no bias term).
    * ``cov_err``: ‖Σ^{-½} Ĉ Σ^{-½} − Σ^{-½} C_pred Σ^{-½}‖₂ against ``k_cov · √(d / ESS)``,
      where √(d/ESS) is half the spectral radius of the sampling error of a d-dimensional
      sample covariance of unit-variance data (semicircle edge 2√(d/ESS)), and ESS is the
      smallest ESS of the squared whitened coordinates.
    * ``bias``: ‖Σ^{-½} C_pred Σ^{-½} − I‖₂, the sampler's known bias at this step size;
      the distance to the exact posterior is allowed ``bias + k_cov √(d/ESS)``.
    """
    # float64: numpy's float32 reduction over a strided axis is a naive running sum, whose
    # rounding error over ~1e6 draws is a sizeable fraction of a posterior sd.
    draws = np.asarray(draws, dtype=np.float64)
    d = draws.shape[-1]
    flat = draws.reshape(-1, d)
    ess_mean = np.array([float(az.ess(draws[..., j])) for j in range(d)])
    sd = np.sqrt(np.diag(sigma))
    mean_err = np.abs(flat.mean(0) - mu) / sd
    mean_tol = z_mean * flat.std(0) / sd / np.sqrt(ess_mean)
    Li = np.linalg.inv(np.linalg.cholesky(sigma))
    z = (draws - mu) @ Li.T
    ess_sq = min(float(az.ess(z[..., j] ** 2)) for j in range(d))
    M_hat = Li @ np.cov(flat.T) @ Li.T
    M_pred = Li @ pred_cov @ Li.T
    mc = k_cov * np.sqrt(d / ess_sq)
    return {
        "mean_err": mean_err, "mean_tol": mean_tol,
        "cov_err_pred": np.linalg.norm(M_hat - M_pred, 2),
        "cov_err_exact": np.linalg.norm(M_hat - np.eye(d), 2),
        "bias": np.linalg.norm(M_pred - np.eye(d), 2),
        "mc_tol": mc, "ess_sq": ess_sq, "ess_mean": ess_mean,
        "eig_hat": np.linalg.eigvalsh(M_hat), "eig_pred": np.linalg.eigvalsh(M_pred),
    }


def control_variate_noise_cov(X, sigma, noise_std, batch_size):
    """Covariance of the SVRG/SAGA gradient noise for linear regression, averaged over the
    stationary law: with Δ = θ − (anchor) the noise is (N/n)Σ_B x_i x_iᵀΔ/σ² − XᵀXΔ/σ², whose
    covariance given Δ is (N²/n) Cov_i(x_i x_iᵀ Δ)/σ⁴. Averaging over Δ ~ N(0, 2Σ) — anchor and
    state as independent posterior draws, the far-apart limit (an upper bound in practice):

        V = (N²/n) · [ (1/N) Σ_i 2 (x_iᵀ Σ x_i) x_i x_iᵀ − 2 M Σ M ] / σ⁴,  M = XᵀX / N.
    """
    n_data = X.shape[0]
    M = X.T @ X / n_data
    q = np.einsum("ij,jk,ik->i", X, sigma, X)
    second = 2 * (X * q[:, None]).T @ X / n_data
    return n_data**2 / batch_size * (second - 2 * M @ sigma @ M) / noise_std**4
