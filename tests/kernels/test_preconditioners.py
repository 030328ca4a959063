"""Constant preconditioners (:mod:`sgmc.kernels.preconditioners`): their algebra, and SGLD / SGHMC
(every integrator, the variance-reduced and EWSG estimators, replica exchange) run with them
against the exact posterior of a badly conditioned, correlated linear regression.

Tolerances are derived as in ``test_gaussian_posterior`` (``linear_gaussian.moment_check``):
Monte Carlo error from the effective sample size, plus the sampler's known bias at its step
size, computed exactly in the *whitened* coordinates z = L⁻¹θ. With P = L Lᵀ the
preconditioned samplers are the plain ones run on z, whose curvature is A_w = Lᵀ A L and whose
minibatch-gradient noise covariance is V_w = Lᵀ V L; the discrete Lyapunov equation of that
linear recursion gives the stationary covariance C_w, i.e. C = L C_w Lᵀ for θ. For P = Σ
(A_w = I) and exact gradients SGLD's is C_w = I / (1 − h/2) exactly.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

import sgmc
from linear_gaussian import (
    control_variate_noise_cov,
    gradient_noise_cov,
    moment_check,
    predicted_cov,
)
from sgmc.kernels import preconditioners as pc

# ---------------------------------------------------------------------------------------------
# Algebra
# ---------------------------------------------------------------------------------------------

TREE = {"a": jnp.zeros(3), "b": jnp.zeros((2, 2))}   # d = 7, ravel order: a then b
FLAT = jnp.zeros(5)


def _spd(d, seed, cond=100.0):
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    return q @ np.diag(np.geomspace(1.0, cond, d)) @ q.T


def _forms(like):
    """(name, preconditioner, the covariance P it was built from) for each form."""
    flat, unravel = ravel_pytree(like)
    d = flat.size
    rng = np.random.default_rng(d)
    cov = _spd(d, seed=d)
    var = rng.uniform(0.5, 3.0, d)
    u, _ = np.linalg.qr(rng.standard_normal((d, 2)))
    lam = np.array([4.0, 0.25])
    sq = np.sqrt(var)
    low = sq[:, None] * (np.eye(d) + u @ np.diag(lam - 1.0) @ u.T) * sq[None, :]
    return [
        ("identity", pc.identity(), np.eye(d)),
        ("diagonal", pc.diagonal(unravel(jnp.asarray(var, jnp.float32))), np.diag(var)),
        ("dense", pc.dense(cov), cov),
        ("low_rank", pc.low_rank(var, u, lam), low),
    ]


def _cases():
    for lname, like in (("tree", TREE), ("flat", FLAT)):
        for name, p, cov in _forms(like):
            yield pytest.param(like, p, cov, id=f"{name}-{lname}")


def _rand(like, seed):
    flat, unravel = ravel_pytree(like)
    return unravel(jax.random.normal(jax.random.key(seed), flat.shape)), flat.size


def _vec(tree):
    return np.asarray(ravel_pytree(tree)[0], np.float64)


# float32 factors: relative accuracy ~1e-6 per entry, a few ulps after a triangular solve
# with condition number 100.
RTOL, ATOL = 2e-5, 2e-5


@pytest.mark.parametrize(("like", "p", "cov"), list(_cases()))
def test_algebra(like, p, cov):
    v, d = _rand(like, 1)
    g, _ = _rand(like, 2)
    # matrix() is the covariance the preconditioner was built from.
    np.testing.assert_allclose(p.matrix(like), cov, rtol=RTOL, atol=ATOL * np.abs(cov).max())
    # unscale inverts scale (and scale inverts unscale).
    np.testing.assert_allclose(_vec(p.unscale(p.scale(v))), _vec(v), rtol=RTOL, atol=1e-4)
    np.testing.assert_allclose(_vec(p.scale(p.unscale(v))), _vec(v), rtol=RTOL, atol=1e-4)
    # scale_t is the transpose of scale: ⟨L v, g⟩ = ⟨v, Lᵀ g⟩ ...
    lhs = _vec(p.scale(v)) @ _vec(g)
    rhs = _vec(v) @ _vec(p.scale_t(g))
    assert abs(lhs - rhs) <= 1e-5 * (np.linalg.norm(_vec(p.scale(v))) * np.linalg.norm(_vec(g))
                                     + 1.0), (lhs, rhs)
    # ... checked as matrices too: L from scale's columns, Lᵀ from scale_t's.
    unravel = ravel_pytree(like)[1]
    eye = np.eye(d, dtype=np.float32)
    L = np.stack([_vec(p.scale(unravel(jnp.asarray(e)))) for e in eye], axis=1)
    Lt = np.stack([_vec(p.scale_t(unravel(jnp.asarray(e)))) for e in eye], axis=1)
    np.testing.assert_allclose(Lt, L.T, rtol=RTOL, atol=1e-6 * np.abs(L).max())
    np.testing.assert_allclose(L @ L.T, cov, rtol=RTOL, atol=ATOL * np.abs(cov).max())
    # precondition = scale ∘ scale_t, and its output keeps the position's structure.
    pg = p.precondition(g)
    assert jax.tree.structure(pg) == jax.tree.structure(like)
    assert all(a.shape == b.shape for a, b in
               zip(jax.tree.leaves(pg), jax.tree.leaves(like), strict=True))
    np.testing.assert_allclose(_vec(pg), _vec(p.scale(p.scale_t(g))), rtol=RTOL, atol=1e-5)
    np.testing.assert_allclose(_vec(pg), cov @ _vec(g), rtol=1e-4, atol=1e-4 * np.abs(cov).max())


def test_identity_returns_its_argument():
    p = pc.identity()
    for f in (p.scale, p.scale_t, p.unscale, p.precondition):
        assert f(TREE) is TREE


def _reg_cov(cov_hat, n):
    """from_draws' documented regularisation (Stan's)."""
    return n / (n + 5.0) * cov_hat + 1e-3 * 5.0 / (n + 5.0) * np.eye(cov_hat.shape[0])


@pytest.mark.parametrize("like", [TREE, FLAT], ids=["tree", "flat"])
def test_from_draws_recovers_covariance(like):
    """Draws of N(0, C): the sample covariance's entry (i, j) has standard error
    √((C_ii C_jj + C_ij²)/n); every entry must be within 5 SE (plus the documented shrinkage
    bias 5/(n + 5)·|C_ij| + 10⁻³·5/(n + 5)), and the estimate must equal the documented
    regularised sample covariance (to float32 rounding)."""
    flat, unravel = ravel_pytree(like)
    d, n = flat.size, 20_000
    C = _spd(d, seed=7, cond=30.0)
    x = np.random.default_rng(0).standard_normal((n, d)) @ np.linalg.cholesky(C).T
    draws = jax.vmap(unravel)(jnp.asarray(x, jnp.float32))
    se = np.sqrt((np.outer(np.diag(C), np.diag(C)) + C ** 2) / n)
    shrink = 5.0 / (n + 5.0) * (np.abs(C) + 1e-3)
    expected = _reg_cov(np.cov(np.asarray(x, np.float32).astype(np.float64), rowvar=False), n)
    for kind in ("dense", "diagonal", "low_rank"):
        P = pc.from_draws(draws, kind=kind, rank=d).matrix(like)
        target = C if kind != "diagonal" else np.diag(np.diag(C))
        err = np.abs(P - target)
        tol = 5 * se + shrink
        if kind == "diagonal":
            tol = np.where(np.eye(d) > 0, tol, 1e-12)
            np.testing.assert_allclose(P, np.diag(np.diag(expected)), rtol=1e-5, atol=1e-12)
        else:
            np.testing.assert_allclose(P, expected, rtol=1e-4, atol=1e-5 * np.abs(C).max())
        assert np.all(err <= tol), (kind, (err / tol).max())
    # A rank-r low-rank estimate is exact along its r corrected directions only: still
    # symmetric positive definite with the estimated variances' diagonal scale.
    lr = pc.from_draws(draws, kind="low_rank", rank=2).matrix(like)
    assert np.all(np.linalg.eigvalsh(0.5 * (lr + lr.T)) > 0)


def test_validation_errors():
    d = 4
    with pytest.raises(ValueError, match="positive definite"):
        pc.dense(np.diag([1.0, 1.0, -1.0, 1.0]))
    with pytest.raises(ValueError, match="positive definite"):
        pc.dense(np.ones((d, d)) * 0 + np.outer(np.arange(1.0, 5.0), np.arange(1.0, 5.0)) -
                 1e-3 * np.eye(d))
    with pytest.raises(ValueError, match="symmetric"):
        pc.dense(np.eye(d) + np.triu(np.ones((d, d)), 1))
    with pytest.raises(ValueError, match="square"):
        pc.dense(np.ones((3, 4)))
    with pytest.raises(ValueError, match="> 0"):
        pc.diagonal(np.array([1.0, 0.0, 2.0]))
    with pytest.raises(ValueError, match="> 0"):
        pc.diagonal({"a": np.array([1.0, -2.0])})
    with pytest.raises(ValueError, match="> 0"):
        pc.diagonal(np.array([1.0, np.nan]))
    u = np.linalg.qr(np.random.default_rng(0).standard_normal((d, 2)))[0]
    with pytest.raises(ValueError, match="orthonormal"):
        pc.low_rank(np.ones(d), 2.0 * u, [2.0, 0.5])
    with pytest.raises(ValueError, match="orthonormal"):
        pc.low_rank(np.ones(d), np.ones((d, 2)) / 2.0, [2.0, 0.5])
    with pytest.raises(ValueError, match="> 0"):
        pc.low_rank(np.ones(d), u, [2.0, -0.5])
    with pytest.raises(ValueError, match="> 0"):
        pc.low_rank(np.r_[np.ones(d - 1), 0.0], u, [2.0, 0.5])
    with pytest.raises(ValueError, match="basis"):
        pc.low_rank(np.ones(d), u[:, :1], [2.0, 0.5])
    draws = jnp.asarray(np.random.default_rng(1).standard_normal((50, d)), jnp.float32)
    with pytest.raises(ValueError, match="kind"):
        pc.from_draws(draws, kind="full")
    with pytest.raises(ValueError, match="at least 3"):
        pc.from_draws(draws[:2])
    with pytest.raises(TypeError, match="preconditioner"):
        sgmc.sgld(0.1, preconditioner=np.eye(d))
    with pytest.raises(TypeError, match="preconditioner"):
        sgmc.sghmc(0.1, friction=1.0, preconditioner="dense")


# ---------------------------------------------------------------------------------------------
# Sampling: a badly conditioned, correlated linear-regression posterior
# ---------------------------------------------------------------------------------------------

N, D = 1_000, 5
# A flat prior (precision 1e-12 against curvature ≥ 960): the problem is then exactly the
# regression on X, and its reparameterisation z = L⁻¹θ is the regression on X L (the prior in
# z, of precision ≤ 1e-12·‖LᵀL‖, negligible too) — an exact twin for the plain samplers.
PRIOR_STD = 1e6


@pytest.fixture(scope="module")
def target():
    """Features with scales 1 … 30 along random axes: posterior precision eigenvalues
    ≈ 9.6e2 … 8.8e5 (condition number ≈ 920), correlations up to |ρ| ≈ 0.93."""
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((D, D)))
    X = rng.standard_normal((N, D)) @ np.diag(np.geomspace(1.0, 30.0, D)) @ q.T
    y = X @ rng.standard_normal(D) + rng.standard_normal(N)
    # The problem holds the data in float32; at condition number ~1e3 rounding X moves μ by
    # ~0.05 posterior sd, so the exact posterior is that of the rounded data.
    X, y = X.astype(np.float32).astype(np.float64), y.astype(np.float32).astype(np.float64)
    mu, sigma = sgmc.models.linear_regression_posterior(X, y, prior_std=PRIOR_STD)
    A = np.linalg.inv(sigma)
    assert 500 < np.linalg.cond(A) < 2_000
    return {"post": sgmc.models.linear_regression(X, y, prior_std=PRIOR_STD), "X": X, "y": y,
            "mu": mu, "sigma": sigma, "A": A, "init": jnp.asarray(mu, jnp.float32)}


def _factor(p, d=D):
    """L (float64) of a preconditioner on a flat position of size d, from scale's columns."""
    eye = jnp.eye(d, dtype=jnp.float32)
    return np.asarray(jax.vmap(p.scale)(eye), np.float64).T


def _low_rank_from(sigma, rank):
    """The low-rank form of Σ: its diagonal, corrected along the ``rank`` eigenvectors of the
    correlation matrix whose eigenvalues are farthest from 1 (exactly Σ when rank = d)."""
    var = np.diag(sigma)
    corr = sigma / np.sqrt(np.outer(var, var))
    lam, vec = np.linalg.eigh(corr)
    order = np.argsort(-np.abs(np.log(lam)))[:rank]
    return pc.low_rank(var, vec[:, order], lam[order])


def _preconditioner(t, form):
    if form == "dense":
        return pc.dense(t["sigma"])
    if form == "diagonal":
        return pc.diagonal(jnp.asarray(np.diag(t["sigma"]), jnp.float32))
    if form == "low_rank_full":
        return _low_rank_from(t["sigma"], D)
    if form == "low_rank_2":
        return _low_rank_from(t["sigma"], 2)
    raise ValueError(form)


def _predict(t, p, kind, h, friction=None, V=None):
    """Stationary covariance of θ: the plain sampler's Lyapunov prediction on the whitened
    problem (A_w = Lᵀ A L, V_w = Lᵀ V L), mapped back by L."""
    L = _factor(p)
    Aw = L.T @ t["A"] @ L
    Vw = np.zeros((D, D)) if V is None else L.T @ V @ L
    Cw = predicted_cov(kind, Aw, Vw, h, friction=friction)
    return L @ Cw @ L.T


def _whitened_bias(t, cov):
    Li = np.linalg.inv(np.linalg.cholesky(t["sigma"]))
    return np.linalg.norm(Li @ cov @ Li.T - np.eye(D), 2)


def _check(t, res, pred_lo, pred_hi=None, sharpness=0.2):
    """Mean within Monte Carlo error (the stationary mean is exactly μ: linear target), the
    whitened covariance Σ^{-½} Ĉ Σ^{-½} within the known bias + 3√(d/ESS) of I, and within
    3√(d/ESS) of the prediction — or, for a bracketing pair of predictions (gradient noise
    between none and an upper bound), within the bracket's width + 3√(d/ESS) of the lower
    one."""
    r = moment_check(res.samples, t["mu"], t["sigma"], pred_lo)
    assert r["mc_tol"] < sharpness, r          # the budget buys a sharp test
    assert np.all(r["mean_err"] <= r["mean_tol"]), r
    if pred_hi is None:
        assert r["cov_err_pred"] <= r["mc_tol"], r
        assert r["cov_err_exact"] <= r["bias"] + r["mc_tol"], r
    else:
        width = _whitened_bias(t, pred_hi - pred_lo + t["sigma"])
        bias = max(r["bias"], _whitened_bias(t, pred_hi))
        assert r["cov_err_pred"] <= width + r["mc_tol"], (width, r)
        assert r["cov_err_exact"] <= bias + r["mc_tol"], (bias, r)
    return r


def _run(t, sampler, steps=8_000, chains=64, seed=1, burn_in=500, thin=5):
    return sgmc.sample(t["post"], sampler, init=t["init"], num_steps=steps, num_chains=chains,
                       burn_in=burn_in, thin=thin, seed=seed)


def test_sgld_dense_exact_gradients(target):
    """P = Σ, exact gradients: the whitened covariance is exactly I/(1 − h/2) (h = 0.1:
    5.3 % inflation, far above the Monte Carlo tolerance ≈ 0.04, so it is checked too)."""
    h = 0.1
    p = pc.dense(target["sigma"])
    res = _run(target, sgmc.sgld(h, preconditioner=p))
    pred = _predict(target, p, "sgld", h)
    np.testing.assert_allclose(_whitened_bias(target, pred), 1 / (1 - h / 2) - 1, rtol=1e-5)
    r = _check(target, res, pred, sharpness=0.06)
    # The inflation is seen: Σ itself is outside the tolerance around the prediction.
    assert _whitened_bias(target, pred) > r["mc_tol"], r


@pytest.mark.parametrize(("form", "h"), [("low_rank_full", 0.1), ("low_rank_2", 0.05),
                                         ("diagonal", 0.015)])
def test_sgld_other_forms(target, form, h):
    """The diagonal and low-rank forms: P ≠ Σ in general, so the whitened curvature is not I
    (diagonal: eigenvalues 0.4 … 70, hence h = 0.015 ≈ 1/λ_max); the Lyapunov prediction
    with A_w = Lᵀ A L is exact all the same."""
    p = _preconditioner(target, form)
    L = _factor(p)
    eig = np.linalg.eigvalsh(L.T @ target["A"] @ L)
    assert h * eig.max() < 1.1, eig
    if form == "low_rank_full":
        np.testing.assert_allclose(L @ L.T, target["sigma"], rtol=1e-4)
    steps = 8_000 if form != "diagonal" else 16_000
    res = _run(target, sgmc.sgld(h, preconditioner=p), steps=steps, thin=5 if
               form != "diagonal" else 10)
    _check(target, res, _predict(target, p, "sgld", h), sharpness=0.15)


# friction 2 (≈ critical damping for unit whitened curvature); Euler forms need D·h < 1.
@pytest.mark.parametrize(("integrator", "h"), [("euler", 0.1), ("explicit", 0.05),
                                               ("splitting", 0.2)])
def test_sghmc_dense_each_integrator(target, integrator, h):
    friction = 2.0
    p = pc.dense(target["sigma"])
    res = _run(target, sgmc.sghmc(h, friction=friction, integrator=integrator,
                                  preconditioner=p))
    _check(target, res, _predict(target, p, integrator, h, friction), sharpness=0.08)


def test_sghmc_low_rank_uniform_minibatch(target):
    """Uniform minibatches (n = 100): whitened gradient noise V_w ≈ (N/n)·I, whose covariance
    inflation (≈ h·V_w/(2D) for SGHMC) is in the exact Lyapunov prediction."""
    h, friction, n = 0.05, 2.0, 100
    p = _preconditioner(target, "low_rank_2")
    V = gradient_noise_cov(target["X"], target["y"], target["mu"], 1.0, n)
    res = _run(target, sgmc.sghmc(h, friction=friction, batch_size=n, integrator="splitting",
                                  preconditioner=p))
    pred = _predict(target, p, "splitting", h, friction, V)
    _check(target, res, pred, sharpness=0.12)


VR = {
    "sgld-svrg": (lambda p: sgmc.sgld(0.1, batch_size=50, estimator=sgmc.svrg(),
                                      preconditioner=p), "sgld", 0.1, None),
    "sgld-saga": (lambda p: sgmc.sgld(0.1, batch_size=50, estimator=sgmc.saga(),
                                      preconditioner=p), "sgld", 0.1, None),
    "sghmc-svrg": (lambda p: sgmc.sghmc(0.1, friction=2.0, batch_size=50,
                                        estimator=sgmc.svrg(), preconditioner=p),
                   "euler", 0.1, 2.0),
    "sghmc-saga": (lambda p: sgmc.sghmc(0.2, friction=2.0, batch_size=50,
                                        estimator=sgmc.saga(), integrator="splitting",
                                        preconditioner=p), "splitting", 0.2, 2.0),
}


@pytest.mark.parametrize("name", list(VR))
def test_variance_reduced_dense(target, name):
    """SVRG / SAGA (n = 50): the stationary covariance lies between the exact-gradient
    prediction and the one with linear_gaussian.control_variate_noise_cov (anchors and state
    independent posterior draws: an upper bound on the control-variate noise)."""
    build, kind, h, friction = VR[name]
    p = pc.dense(target["sigma"])
    res = _run(target, build(p))
    V = control_variate_noise_cov(target["X"], target["sigma"], 1.0, 50)
    lo = _predict(target, p, kind, h, friction)
    hi = _predict(target, p, kind, h, friction, V)
    _check(target, res, lo, hi, sharpness=0.08)


def _whitened_problem(t, p):
    """The same regression in z = L⁻¹θ: features X L (the flat prior's precision in z,
    ≤ 1e-12·‖LᵀL‖, is negligible), so the plain sampler on it is the preconditioned one's
    twin."""
    L = _factor(p)
    Xw = t["X"] @ L
    return sgmc.models.linear_regression(Xw, t["y"], prior_std=PRIOR_STD), L


EWSG = {
    "sgld": lambda p: sgmc.sgld(0.05, batch_size=100, estimator=sgmc.ewsg(), preconditioner=p),
    "sghmc-splitting": lambda p: sgmc.sghmc(0.1, friction=2.0, batch_size=100,
                                            integrator="splitting", estimator=sgmc.ewsg(),
                                            preconditioner=p),
}


@pytest.mark.parametrize("name", list(EWSG))
def test_ewsg_dense_matches_plain_ewsg_in_whitened_coordinates(target, name):
    """EWSG's stationary law has no closed form; its weights must be taken in whitened
    coordinates. So the preconditioned run on θ is compared with the plain EWSG run on the
    whitened problem (features X L): whitened covariances equal within both runs' Monte
    Carlo error (same seed), means within both runs' Monte Carlo error. Also
    bracketed: between the exact-gradient and the uniform-minibatch predictions (EWSG
    reweights a uniform minibatch towards the full-gradient kick)."""
    t = target
    p = pc.dense(t["sigma"])
    wprob, L = _whitened_problem(t, p)
    res = _run(t, EWSG[name](p), steps=6_000)
    ref = sgmc.sample(wprob, EWSG[name](None), init=jnp.asarray(np.linalg.solve(L, t["mu"]),
                      jnp.float32), num_steps=6_000, num_chains=64, burn_in=500, thin=5,
                      seed=1)
    gap, r, r_ref, mean_gap, m1 = _twin_gap(t, res, ref, L)
    assert r["mc_tol"] < 0.12, r
    assert gap <= r["mc_tol"] + r_ref["mc_tol"], (gap, r, r_ref)
    # EWSG's stationary mean need not be exactly μ (its index chain is itself a stochastic
    # kernel); the twins' means must agree within both runs' Monte Carlo error.
    se = r["mean_tol"] / 4 + r_ref["mean_tol"] / 4
    assert np.all(mean_gap <= 4 * se), (mean_gap, se)
    Li = np.linalg.inv(np.linalg.cholesky(t["sigma"]))
    kind = "sgld" if name == "sgld" else "splitting"
    h = 0.05 if name == "sgld" else 0.1
    fr = None if name == "sgld" else 2.0
    lo = _whitened_bias(t, _predict(t, p, kind, h, fr))
    V = gradient_noise_cov(t["X"], t["y"], t["mu"], 1.0, 100)
    hi = _predict(t, p, kind, h, fr, V)
    eig = np.linalg.eigvalsh(m1)
    Lhi = np.linalg.eigvalsh(Li @ hi @ Li.T)
    assert eig.min() >= 1 - lo - r["mc_tol"] and eig.max() <= Lhi.max() + r["mc_tol"], (eig, r)


def _twin_gap(t, res, ref, L):
    """The whitened-covariance gap between a preconditioned run on θ and the plain run on
    the whitened problem (draws mapped back by L), with both runs' Monte Carlo tolerances."""
    zref = np.asarray(ref.samples, np.float64) @ L.T
    r = moment_check(res.samples, t["mu"], t["sigma"], t["sigma"])
    r_ref = moment_check(zref, t["mu"], t["sigma"], t["sigma"])
    Li = np.linalg.inv(np.linalg.cholesky(t["sigma"]))
    m1 = Li @ np.cov(np.asarray(res.samples, np.float64).reshape(-1, D).T) @ Li.T
    m2 = Li @ np.cov(zref.reshape(-1, D).T) @ Li.T
    mean_gap = np.abs(np.asarray(res.samples, np.float64).reshape(-1, D).mean(0)
                      - zref.reshape(-1, D).mean(0)) / np.sqrt(np.diag(t["sigma"]))
    return np.linalg.norm(m1 - m2, 2), r, r_ref, mean_gap, m1


def test_replica_exchange_dense_sghmc_matches_whitened_twin(target):
    """Two replicas (τ = 1, 2) of P = Σ splitting SGHMC, exact gradients and exact energies
    (sgmc.exact_energy), against the same coupling without a preconditioner on the whitened
    problem (the same seed): whitened covariances within both runs' 3√(d/ESS), means within
    4·(SE₁ + SE₂); swaps happen. (Against the exact posterior this coupling is off for the
    plain twin as much as for the preconditioned run — see the report — so the test pins
    that the preconditioner is carried through the coupling, not the coupling itself.)"""
    t = target
    h, friction = 0.2, 2.0
    p = pc.dense(t["sigma"])
    wprob, L = _whitened_problem(t, p)

    def rx(pre):
        base = sgmc.sghmc(h, friction=friction, integrator="splitting", preconditioner=pre)
        return sgmc.replica_exchange(base, [1.0, 2.0], energy=sgmc.exact_energy())

    res = _run(t, rx(p), steps=4_000, chains=32)
    ref = sgmc.sample(wprob, rx(None), init=jnp.asarray(np.linalg.solve(L, t["mu"]),
                      jnp.float32), num_steps=4_000, num_chains=32, burn_in=500, thin=5,
                      seed=1)
    assert res.info["swaps"].sum() > 1_000
    gap, r, r_ref, mean_gap, _ = _twin_gap(t, res, ref, L)
    assert r["mc_tol"] < 0.15, r
    assert gap <= r["mc_tol"] + r_ref["mc_tol"], (gap, r, r_ref)
    se = r["mean_tol"] / 4 + r_ref["mean_tol"] / 4
    assert np.all(mean_gap <= 4 * se), (mean_gap, se)


def test_preconditioner_matters(target):
    """The same 300 steps from μ, 2000 chains. Without a preconditioner the step must be
    stable for the stiffest direction (h = 1/λ_max): the flattest direction's variance
    then reaches only (1 − (1 − hλ_min)^{600}) / (1 − hλ_min/2) ≈ 0.49 of its target.
    With P = Σ and h = 0.1 the whitened covariance reaches I/(1 − h/2) up to 0.9^{600}.
    The final draws are independent across chains: a variance estimate's SE is √(2/n)."""
    t, steps, chains = target, 300, 2_000
    lam, vec = np.linalg.eigh(t["A"])
    h_plain = 1.0 / lam.max()
    se = np.sqrt(2.0 / chains)

    def final(sampler):
        res = sgmc.sample(t["post"], sampler, init=t["init"], num_steps=steps,
                          num_chains=chains, burn_in=steps - 1, seed=4)
        return np.asarray(res.samples, np.float64)[:, -1] - t["mu"]

    plain = final(sgmc.sgld(h_plain))
    ratio_flat = np.var(plain @ vec[:, 0]) * lam[0]        # variance / target variance
    frac = 1 - (1 - h_plain * lam[0]) ** (2 * steps)
    expect = frac / (1 - h_plain * lam[0] / 2)
    assert expect < 0.6
    assert abs(ratio_flat - expect) <= 4 * se * expect, (ratio_flat, expect)
    assert ratio_flat < 1.0 - 8 * se, ratio_flat             # clearly off

    h = 0.1
    pre = final(sgmc.sgld(h, preconditioner=pc.dense(t["sigma"])))
    Li = np.linalg.inv(np.linalg.cholesky(t["sigma"]))
    z = pre @ Li.T
    m = np.cov(z.T)
    inflation = 1 / (1 - h / 2)
    # spectral-norm error of a d-dim sample covariance: ≈ 2√(d/n) (semicircle edge); ×2
    tol = 4 * np.sqrt(D / chains) * inflation
    assert np.linalg.norm(m - inflation * np.eye(D), 2) <= tol, (np.linalg.eigvalsh(m), tol)
    assert abs(np.var(pre @ vec[:, 0]) * lam[0] - inflation) <= 4 * se * inflation


# ---------------------------------------------------------------------------------------------
# Identity is a no-op, bitwise
# ---------------------------------------------------------------------------------------------

def test_identity_is_bitwise_no_op(target):
    t = target
    pairs = [
        (sgmc.sgld(1e-6), sgmc.sgld(1e-6, preconditioner=pc.identity())),
        (sgmc.sghmc(1e-4, friction=50.0, batch_size=20, integrator="splitting",
                    estimator=sgmc.ewsg()),
         sgmc.sghmc(1e-4, friction=50.0, batch_size=20, integrator="splitting",
                    estimator=sgmc.ewsg(), preconditioner=pc.identity())),
        (sgmc.sghmc(1e-4, friction=50.0, batch_size=20, estimator=sgmc.svrg()),
         sgmc.sghmc(1e-4, friction=50.0, batch_size=20, estimator=sgmc.svrg(),
                    preconditioner=pc.identity())),
    ]
    for plain, ident in pairs:
        a = sgmc.sample(t["post"], plain, init=t["init"], num_steps=200, num_chains=3, seed=9)
        b = sgmc.sample(t["post"], ident, init=t["init"], num_steps=200, num_chains=3, seed=9)
        assert np.array_equal(np.asarray(a.samples), np.asarray(b.samples))
        assert not np.array_equal(np.asarray(a.samples)[:, 0], np.asarray(a.samples)[:, -1])


def test_from_draws_low_rank_corrects_the_directions_farthest_from_one():
    """A rank-r estimate corrects the r directions of the diagonally scaled (correlation)
    matrix whose eigenvalues λ are farthest from 1 on the log scale (|log λ|): a squeezed
    direction (λ ≈ 0.02, |log λ| ≈ 4) before a stretched one (λ ≈ 2.5, |log λ| ≈ 1), since
    both set the step a sampler can take. The estimate must be the documented
    S^{1/2}(I + u(λ − 1)uᵀ)S^{1/2} of the regularised sample covariance, with u that
    squeezed direction."""
    d, n = 4, 4000
    rng = np.random.default_rng(3)
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    sd = np.array([0.5, 1.0, 2.0, 4.0])
    C = sd[:, None] * (q @ np.diag([0.02, 1.0, 1.0, 2.5]) @ q.T) * sd[None, :]
    x = (rng.standard_normal((n, d)) @ np.linalg.cholesky(C).T).astype(np.float32)
    cov = _reg_cov(np.cov(x.astype(np.float64), rowvar=False), n)
    var = np.diag(cov)
    lam, vec = np.linalg.eigh(cov / np.sqrt(np.outer(var, var)))
    assert lam.min() < 0.1 and lam.max() > 1.5            # both kinds of direction present
    assert abs(np.log(lam.min())) > abs(np.log(lam.max()))
    u = vec[:, [0]]                                       # eigh: ascending, the squeezed one
    s = np.sqrt(var)
    want = s[:, None] * (np.eye(d) + (lam[0] - 1.0) * (u @ u.T)) * s[None, :]
    got = pc.from_draws(jnp.asarray(x), kind="low_rank", rank=1).matrix(FLAT[:d])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * np.abs(want).max())
