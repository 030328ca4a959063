"""sgmc.diagnostics (kernel Stein discrepancy, Gaussian KL / W2, success rates) and
Result.to_arviz / summary round trips."""

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import linalg

import sgmc
from sgmc import diagnostics as dg
from sgmc import metrics

# -- kernel Stein discrepancy ----------------------------------------------------------------


def _stein_kernel_autodiff(x, y, sx, sy, c=1.0, beta=-0.5):
    """k_p(x, y) = s(x)·s(y) k + s(x)·∇_y k + s(y)·∇_x k + tr ∇_x∇_y k, by autodiff."""
    k = lambda a, b: (c * c + jnp.sum((a - b) ** 2)) ** beta
    cross = jax.jacfwd(jax.grad(k, 1), 0)(x, y)
    return (sx @ sy * k(x, y) + sx @ jax.grad(k, 1)(x, y) + sy @ jax.grad(k, 0)(x, y)
            + jnp.trace(cross))


@pytest.mark.parametrize(("c", "beta"), [(1.0, -0.5), (0.7, -0.3)])
def test_ksd_matches_the_stein_kernel_by_autodiff(c, beta):
    """The closed-form IMQ Stein kernel against the definition differentiated by JAX, on
    random points and random 'scores' (any vector field works for the identity)."""
    rng = np.random.default_rng(0)
    x, s = rng.standard_normal((6, 3)), rng.standard_normal((6, 3))
    kp = lambda a, sa: jax.vmap(lambda b, sb: _stein_kernel_autodiff(a, b, sa, sb, c, beta))(
        jnp.asarray(x), jnp.asarray(s))
    mat = np.asarray(jax.jit(jax.vmap(kp))(jnp.asarray(x), jnp.asarray(s)), np.float64)
    # float32 arithmetic in both: agreement to ~1e-6 relative, asserted at 1e-5.
    assert dg.ksd(x, s, c=c, beta=beta) == pytest.approx(np.sqrt(mat.mean()), rel=1e-5)
    u = (mat.sum() - np.trace(mat)) / (6 * 5)
    assert u > 0   # random "scores" are far from any target's, so the U-statistic is > 0
    assert dg.ksd(x, s, c=c, beta=beta, statistic="u") == pytest.approx(np.sqrt(u), rel=1e-4)


def test_ksd_chunked_equals_unchunked():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((301, 4)) + 3.0        # off-centre: the centring must not matter
    s = -(x - 3.0)
    full = dg.ksd(x, s, chunk_size=301)
    for chunk in (7, 64):
        assert dg.ksd(x, s, chunk_size=chunk) == pytest.approx(full, rel=1e-5)
    assert dg.ksd(x, s, statistic="u", chunk_size=7) == pytest.approx(
        dg.ksd(x, s, statistic="u", chunk_size=301), rel=1e-4)


def test_ksd_is_small_for_the_target_and_large_for_a_shifted_target():
    """Target N(0, I_2), score −x. For exact draws E[KSD_V²] = E k_p(x, x)/n = 2d/n (the
    off-diagonal terms have mean 0 by Stein's identity; k_p(x, x) = ‖x‖² + d at c = 1,
    β = −½), so KSD ≈ sqrt(4/1000) = 0.063; over 20 seeds KSD·sqrt(n/2d) ranged 0.60–1.53.
    Draws shifted by 0.5 in each coordinate keep a population KSD ≈ 0.5 (0.43–0.58 over 20
    seeds at n = 400–1600)."""
    n, d = 1000, 2
    z = np.random.default_rng(2).standard_normal((n, d))
    exact = dg.ksd(z, lambda th: -th)
    shifted = dg.ksd(z + 0.5, lambda th: -th)
    assert exact < 2.0 * np.sqrt(2 * d / n)        # ≤ 0.126
    assert exact > 0.5 * np.sqrt(2 * d / n)
    assert shifted > 0.35
    assert shifted > 3.0 * exact


def test_ksd_of_exact_draws_decreases_with_n():
    """KSD ≈ sqrt(2d/n)·[0.6, 1.53] for exact draws (see above): an 8-fold n shrinks it by
    sqrt(8) = 2.8 on average and by at least 2.8·0.6/1.53 = 1.1 at the observed extremes."""
    d = 3
    values = []
    for n in (50, 400, 3200):
        z = np.random.default_rng(n).standard_normal((n, d))
        values.append(dg.ksd(z, -z))
    assert values[0] > values[1] > values[2]
    assert values[2] < 2.0 * np.sqrt(2 * d / 3200)


def _gauss_loglik(theta, x):
    return -0.5 * jnp.sum((theta - x) ** 2)


def _gauss_logprior(theta):
    return -0.5 * jnp.sum(theta ** 2)


def _gaussian_posterior(n=20, seed=3):
    """θ ∈ R², prior N(0, I), x_i ~ N(θ, I): posterior N(Σx/(n+1), I/(n+1)). Module-level
    functions, so that runs on it share compiled programs (also with tests/test_plots.py)."""
    data = np.random.default_rng(seed).standard_normal((n, 2)).astype(np.float32) + 1.0
    post = sgmc.Posterior(_gauss_loglik, _gauss_logprior, data)
    return post, data.sum(0) / (n + 1), 1.0 / (n + 1)


@functools.cache
def replica_run(output: str, chains: int):
    """A tiny 3-replica reSGLD run on the Gaussian posterior (cached: one compile each)."""
    rx = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=5), [1.0, 2.0, 4.0], output=output)
    return sgmc.sample(_gaussian_posterior()[0], rx, jnp.zeros(2), num_steps=120,
                       num_chains=chains, thin=2, seed=1, progress=False, init_per_chain=False)


def test_ksd_score_from_a_posterior_a_function_and_a_tempered_target():
    post, mean, var = _gaussian_posterior()
    draws = mean + np.sqrt(var) * np.random.default_rng(4).standard_normal((500, 2))
    exact_score = -(draws - mean) / var
    ref = dg.ksd(draws, exact_score)
    assert dg.ksd(draws, post) == pytest.approx(ref, rel=1e-4)
    assert dg.ksd(draws, dg.score_function(post)) == pytest.approx(ref, rel=1e-4)
    hot = dg.ksd(draws, dg.score_function(post, temperature=2.0))
    assert hot == pytest.approx(dg.ksd(draws, exact_score / 2.0), rel=1e-4)
    assert hot > 2 * ref       # the draws are too narrow for the tempered target


def test_ksd_accepts_pytrees_and_results():
    """A dict of draws is flattened per draw (ravel_pytree order: keys sorted); a Result
    pools its chains."""
    rng = np.random.default_rng(5)
    z = rng.standard_normal((400, 3))
    tree = {"a": z[:, :2], "b": z[:, 2]}
    score = lambda th: {"a": -th["a"], "b": -th["b"]}
    ref = dg.ksd(z, -z)
    assert dg.ksd(tree, score) == pytest.approx(ref, rel=1e-5)
    assert dg.ksd(tree, {"a": -z[:, :2], "b": -z[:, 2]}) == pytest.approx(ref, rel=1e-5)
    res = sgmc.Result(z.reshape(4, 100, 3), {"grad_evals": np.zeros((4, 100), np.int64)})
    assert dg.ksd(res, lambda th: -th) == pytest.approx(ref, rel=1e-5)
    x, unravel = dg.flatten_draws(tree)
    assert x.shape == (400, 3)
    np.testing.assert_array_equal(unravel(jnp.asarray(x[0]))["b"], np.float32(z[0, 2]))


def test_ksd_bad_input():
    z = np.random.default_rng(6).standard_normal((50, 2))
    with pytest.raises(ValueError, match=r"score must have one gradient per draw, shape \(50, 2\)"):
        dg.ksd(z, np.zeros((50, 3)))
    with pytest.raises(ValueError, match="score must return a gradient shaped like one draw"):
        dg.ksd(z, lambda th: jnp.zeros(3))
    with pytest.raises(TypeError, match="score must be"):
        dg.ksd(z, "normal")
    with pytest.raises(TypeError, match="samples must"):
        dg.ksd("draws", -z)
    with pytest.raises(TypeError, match="samples must hold numeric arrays"):
        dg.ksd(np.array([["a", "b"]] * 5), -z[:5])
    with pytest.raises(ValueError, match="beta must lie in"):
        dg.ksd(z, -z, beta=0.5)
    with pytest.raises(ValueError, match="c must lie in"):
        dg.ksd(z, -z, c=0.0)
    with pytest.raises(ValueError, match="chunk_size must be an integer in"):
        dg.ksd(z, -z, chunk_size=0)
    with pytest.raises(ValueError, match="statistic must be one of"):
        dg.ksd(z, -z, statistic="w")
    with pytest.raises(ValueError, match="samples contains NaN"):
        dg.ksd(np.full((5, 2), np.nan), -z[:5])
    with pytest.raises(ValueError, match="score contains NaN or inf"):
        dg.ksd(z, np.full((50, 2), np.inf))
    with pytest.raises(ValueError, match="share the leading draw axis"):
        dg.ksd({"a": z, "b": z[:10]}, lambda th: th)
    with pytest.raises(TypeError, match="temperature must be a finite real"):
        dg.score_function(_gaussian_posterior()[0], temperature="hot")
    with pytest.raises(TypeError, match=r"problem must be an sgmc\.Posterior"):
        dg.score_function(lambda th: th)


# -- Gaussian KL and W2 ----------------------------------------------------------------------


def _exact_moments(mean, cov, n, seed):
    """n draws whose sample mean and (ddof = 1) covariance are exactly mean and cov."""
    z = np.random.default_rng(seed).standard_normal((n, len(mean)))
    z -= z.mean(0)
    z = z @ np.linalg.inv(np.linalg.cholesky(np.cov(z, rowvar=False))).T
    return mean + z @ np.linalg.cholesky(cov).T


def test_normal_kl_and_w2_closed_forms():
    # 1-D: KL = log(s2/s1) + (s1² + (m1 − m2)²)/(2 s2²) − ½; W2² = (m1 − m2)² + (s1 − s2)².
    m1, s1, m2, s2 = 0.3, 0.5, -1.0, 2.0
    kl = np.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2) / (2 * s2 ** 2) - 0.5
    assert dg.normal_kl(m1, s1 ** 2, m2, s2 ** 2) == pytest.approx(kl, rel=1e-12)
    assert dg.normal_w2(m1, s1 ** 2, m2, s2 ** 2) == pytest.approx(np.hypot(m1 - m2, s1 - s2),
                                                                   rel=1e-12)
    # Non-commuting covariances: against scipy's sqrtm in the Givens–Shortt formula.
    a = np.array([[2.0, 0.8, 0.1], [0.8, 1.0, -0.3], [0.1, -0.3, 0.5]])
    b = np.array([[1.0, -0.4, 0.0], [-0.4, 3.0, 0.6], [0.0, 0.6, 0.7]])
    ma, mb = np.array([1.0, 0.0, -1.0]), np.array([0.5, 0.5, 0.5])
    rb = linalg.sqrtm(b).real
    w2sq = np.sum((ma - mb) ** 2) + np.trace(a + b - 2 * linalg.sqrtm(rb @ a @ rb).real)
    assert dg.normal_w2(ma, a, mb, b, squared=True) == pytest.approx(w2sq, rel=1e-10)
    kl = 0.5 * (np.trace(np.linalg.solve(b, a)) + (mb - ma) @ np.linalg.solve(b, mb - ma) - 3
                + np.log(np.linalg.det(b) / np.linalg.det(a)))
    assert dg.normal_kl(ma, a, mb, b) == pytest.approx(kl, rel=1e-10)
    assert dg.normal_kl(ma, a, ma, a) == pytest.approx(0.0, abs=1e-12)
    assert dg.normal_w2(ma, a, ma, a) == pytest.approx(0.0, abs=1e-7)


def test_gaussian_kl_and_w2_of_draws_use_their_first_two_moments():
    """Draws built to have sample mean m and covariance S exactly: the sample versions equal
    the closed forms at (m, S) — diagonal, so the formulas are per coordinate."""
    m, s = np.array([0.2, -0.1, 1.0]), np.array([0.5, 2.0, 1.5])
    mu, sigma = np.zeros(3), np.array([1.0, 1.0, 3.0])
    x = _exact_moments(m, np.diag(s), 50, seed=7)
    kl = 0.5 * np.sum(s / sigma + (mu - m) ** 2 / sigma - 1 + np.log(sigma / s))
    w2 = np.sqrt(np.sum((m - mu) ** 2) + np.sum((np.sqrt(s) - np.sqrt(sigma)) ** 2))
    assert dg.gaussian_kl(x, mu, np.diag(sigma)) == pytest.approx(kl, rel=1e-10)
    assert dg.gaussian_w2(x, mu, np.diag(sigma)) == pytest.approx(w2, rel=1e-10)
    # ddof = 0 divides by n instead of n − 1
    kl0 = dg.normal_kl(m, np.diag(s) * 49 / 50, mu, np.diag(sigma))
    assert dg.gaussian_kl(x, mu, np.diag(sigma), ddof=0) == pytest.approx(kl0, rel=1e-10)


def test_gaussian_kl_and_w2_vanish_for_large_exact_samples():
    """n = 2e5 exact draws, d = 3: E[KL] ≈ d(d+3)/(4n) = 2.3e-5 (2n·KL ≈ χ² with
    d(d+3)/2 = 9 dof, so 1e-4 is its 99.99+ % point); E[W2²] ≈ (tr Σ + O(d²))/n ≈ 3e-5, so
    W2 ≈ 0.006 and 0.02 is 3×. A mean error of 0.05 sd is caught by both."""
    cov = np.array([[1.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 0.5]])
    mean = np.array([1.0, -2.0, 0.5])
    x = np.random.default_rng(8).multivariate_normal(mean, cov, size=200_000)
    assert dg.gaussian_kl(x, mean, cov) < 1e-4
    assert dg.gaussian_w2(x, mean, cov) < 0.02
    off = mean + 0.05 * np.sqrt(np.diag(cov))
    assert dg.gaussian_kl(x, off, cov) > 5e-4
    assert dg.gaussian_w2(x, off, cov) > 0.05


def test_ewsg_experiment_kl_curve_uses_the_library():
    from sgmc.lab.experiments import ewsg_gaussian

    draws = np.random.default_rng(9).standard_normal((40, 3, 2))
    mu, sigma = np.array([0.1, 0.0]), np.eye(2) / 4
    expected = [dg.gaussian_kl(draws[:, k], mu, sigma) for k in range(3)]
    np.testing.assert_allclose(ewsg_gaussian.kl_curve(draws, mu, sigma), expected, rtol=1e-12)


def test_empirical_w2_1d():
    # Hand-computed: quantile functions of {0, 1} and {0, ½, 1} differ by ½ on (⅓, ⅔].
    assert dg.empirical_w2_1d([0.0, 1.0], [0.0, 0.5, 1.0]) == pytest.approx(np.sqrt(1 / 12))
    z = np.random.default_rng(10).standard_normal(1000)
    assert dg.empirical_w2_1d(z, z + 0.3) == pytest.approx(0.3, rel=1e-12)
    a, b = z[:500], z[500:]
    assert dg.empirical_w2_1d(a, b) == pytest.approx(
        np.sqrt(np.mean((np.sort(a) - np.sort(b)) ** 2)), rel=1e-12)


def test_gaussian_bad_input():
    x = np.random.default_rng(11).standard_normal((100, 2))
    with pytest.raises(ValueError, match=r"mean must have shape \(2,\)"):
        dg.gaussian_kl(x, np.zeros(3), np.eye(3))
    with pytest.raises(ValueError, match=r"cov must have shape \(2, 2\)"):
        dg.gaussian_w2(x, np.zeros(2), np.eye(3))
    with pytest.raises(ValueError, match="cov must be positive semi-definite"):
        dg.gaussian_kl(x, np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="cov must be symmetric"):
        dg.gaussian_w2(x, np.zeros(2), np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="cov2 must be positive definite"):
        dg.gaussian_kl(x, np.zeros(2), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="needs more than 2 draws"):
        dg.gaussian_kl(x[:2], np.zeros(2), np.eye(2))
    with pytest.raises(TypeError, match="mean and cov must be numeric"):
        dg.gaussian_kl(x, "zero", np.eye(2))
    with pytest.raises(ValueError, match="ddof must be an integer in"):
        dg.gaussian_kl(x, np.zeros(2), np.eye(2), ddof=2)
    # W2 allows a singular (PSD) reference: the distance to a point mass at the mean.
    assert dg.normal_w2(0.0, 4.0, 0.0, 0.0) == pytest.approx(2.0)


def test_predictive_metrics_are_the_metrics_module():
    assert dg.classification_metrics is metrics.classification_metrics
    assert dg.regression_metrics is metrics.regression_metrics
    assert dg.predictions is metrics.predictions


def test_ess_and_rhat():
    """4 chains × 500 iid N(0, 1) draws: ESS ≈ 2000 (ArviZ's estimate for iid draws is within
    ~10 %; 1500–2600 allows ~3 sd), R-hat < 1.01. Chain 0 shifted by 1 sd: R-hat > 1.1."""
    pytest.importorskip("arviz")
    z = np.random.default_rng(12).standard_normal((4, 500, 2))
    res = sgmc.Result(z, {"grad_evals": np.zeros((4, 500), np.int64)})
    e = dg.ess(res)["theta"]
    assert e.shape == (2,) and np.all((1500 < e) & (e < 2600))
    assert np.all(dg.rhat(res)["theta"] < 1.01)
    z[0] += 1.0
    assert np.all(dg.rhat(res.to_arviz())["theta"] > 1.1)
    with pytest.raises(TypeError, match=r"result must be an sgmc\.Result"):
        dg.ess(z)


# -- optimisation ------------------------------------------------------------------------------


def test_success_probability():
    opt = sgmc.minimize(lambda x: jnp.sum(x ** 2), sgmc.gd(0.25), jnp.array([1.0, -1.0]),
                        num_steps=8, num_replications=3, record_path=True)
    # GD on ‖x‖² with h = 0.25 halves x each step: ‖X_n‖ = √2 / 2ⁿ, F = 2 / 4ⁿ.
    p = dg.success_probability(opt, tol=0.01, x_star=np.zeros(2))
    np.testing.assert_array_equal(p, (np.sqrt(2) / 2.0 ** np.arange(1, 9) <= 0.01) * 1.0)
    q = dg.success_probability(opt, tol=1e-3, f_star=0.0)
    np.testing.assert_array_equal(q, (2 / 4.0 ** np.arange(1, 9) <= 1e-3) * 1.0)
    with pytest.raises(ValueError, match="exactly one of f_star"):
        dg.success_probability(opt, tol=0.1)
    with pytest.raises(ValueError, match=r"x_star must have the iterates' shape \(2,\)"):
        dg.success_probability(opt, tol=0.1, x_star=np.zeros(3))
    with pytest.raises(TypeError, match=r"opt must be an sgmc\.OptimizeResult"):
        dg.success_probability({"trace": 1}, tol=0.1, f_star=0.0)
    no_path = dataclasses.replace(opt, path=None)
    with pytest.raises(ValueError, match="record_path=True"):
        dg.success_probability(no_path, tol=0.1, x_star=np.zeros(2))


# -- Result.to_arviz / summary -----------------------------------------------------------------


@pytest.fixture(scope="module")
def post():
    return _gaussian_posterior()[0]


def _check_posterior(idata, res, rep=False):
    from sgmc.result import _flat_names

    names = _flat_names(res.samples)
    assert set(idata.posterior.data_vars) == set(names)
    for name, value in names.items():
        da = idata.posterior[name]
        assert da.shape == value.shape
        assert da.dims[:2] == ("chain", "draw")
        if rep:
            assert da.dims[2] == "replica"
        np.testing.assert_array_equal(da.values, np.asarray(value, np.float64))
    gev = idata.sample_stats["grad_evals"]
    assert gev.dims == ("chain", "draw") and gev.shape == (res.num_chains, res.num_draws)
    np.testing.assert_array_equal(gev.values, res.info["grad_evals"])
    np.testing.assert_array_equal(idata.sample_stats["step"].values[0], res.info["step"])


def test_to_arviz_and_summary_of_pytree_positions(post):
    """Two chains of a dict position (single chains: the ("all", 1) replica run below)."""
    pytest.importorskip("arviz")
    tree_post = sgmc.Posterior(lambda th, x: -0.5 * jnp.sum((th["w"] - x) ** 2) - th["s"] ** 2,
                               lambda th: -0.5 * jnp.sum(th["w"] ** 2), post.data)
    init = {"w": jnp.zeros(2), "s": jnp.zeros(())}
    res = sgmc.sample(tree_post, sgmc.sgld(1e-3, batch_size=5), init, num_steps=120,
                      num_chains=2, thin=2, seed=0, progress=False)
    idata = res.to_arviz()
    _check_posterior(idata, res)
    assert idata.posterior["w"].dims == ("chain", "draw", "w_dim_0")
    assert idata.posterior["s"].shape == (2, 60)
    assert idata.posterior.attrs["sampler"] == "sgld"
    assert idata.posterior.attrs["num_steps"] == 120
    table = res.summary()
    assert list(table.index) == ["s", "w[0]", "w[1]"]
    assert {"mean", "sd", "ess_bulk", "ess_tail", "r_hat"} <= set(table.columns)
    np.testing.assert_allclose(table["mean"]["w[1]"], res.samples["w"][..., 1].mean(),
                               atol=1e-3)      # the table rounds to 3 decimals


@pytest.mark.parametrize(("output", "chains"), [("coldest", 2), ("all", 1)])
def test_to_arviz_replica_exchange(output, chains, tmp_path):
    """Replica runs: coldest-only draws with 2 chains, and every replica with 1 chain (a
    third compile for ("all", 2) cost ~15 s here; test_replica.py covers its shapes)."""
    pytest.importorskip("arviz")
    res = replica_run(output, chains)
    rep = output == "all"
    assert res.has_replica_axis() is rep
    idata = res.to_arviz()
    _check_posterior(idata, res, rep)
    theta = idata.posterior["theta"]
    assert theta.dims == ("chain", "draw", *(("replica",) if rep else ()), "theta_dim_0")
    assert theta.shape == (chains, 60, *((3,) if rep else ()), 2)
    stats = idata.sample_stats
    for key in ("swaps", "swap_attempts", "energy_variance"):
        assert stats[key].dims == ("chain", "draw", "pair")
        assert stats[key].shape == (chains, 60, 2)
        np.testing.assert_array_equal(stats[key].values, res.info[key])
    assert stats["replica_labels"].dims == ("chain", "draw", "replica")
    assert stats["swaps"].values.sum() > 0
    if rep:
        with pytest.raises(ValueError, match="samples keep every replica"):
            dg.ksd(res, lambda th: -th)
    # Saved and loaded: the replica axis is known again from replica_axis=True (the file
    # keeps no final state).
    res.save(tmp_path / "r.npz")
    back = sgmc.Result.load(tmp_path / "r.npz")
    again = back.to_arviz(replica_axis=True if rep else None)
    assert again.posterior["theta"].dims == theta.dims
    np.testing.assert_array_equal(again.posterior["theta"].values, theta.values)


def test_to_arviz_bad_replica_axis():
    pytest.importorskip("arviz")
    res = sgmc.Result(np.zeros((2, 5)), {"grad_evals": np.zeros((2, 5), np.int64)})
    with pytest.raises(ValueError, match="replica_axis=True but draws of 'theta' have no axis"):
        res.to_arviz(replica_axis=True)
    assert res.to_arviz().posterior["theta"].shape == (2, 5)


def test_arviz_is_imported_without_its_refactor_notice(tmp_path):
    """ArviZ warns once a day at import (its stamp lives in the user's cache folder, here a
    fresh one); a run's summary and to_arviz print nothing of it (issue 19, item 7)."""
    import os
    import subprocess
    import sys

    code = ("import jax.numpy as jnp, numpy as np, sgmc\n"
            "post = sgmc.Posterior(lambda t, x: -0.5 * jnp.sum((x - t) ** 2),\n"
            "                      lambda t: -0.5 * jnp.sum(t ** 2), np.ones((10, 1)))\n"
            "res = sgmc.sample(post, sgmc.sgld(1e-2, batch_size=5), jnp.zeros(1), 50,\n"
            "                  num_chains=2, progress=False)\n"
            "res.summary(); res.to_arviz()\n")
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path),
               PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-W", "default", "-c", code], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "refactor" not in out.stderr, out.stderr
    # The check is live: ArviZ itself, imported plainly there, does warn.
    import arviz
    with open(arviz.__file__) as fh:
        if "major refactor" in fh.read():  # (ArviZ versions that have the notice)
            env["XDG_CACHE_HOME"] = str(tmp_path / "plain")
            plain = subprocess.run([sys.executable, "-W", "default", "-c", "import arviz"],
                                   env=env, capture_output=True, text=True, timeout=300)
            assert "ArviZ is undergoing a major refactor" in plain.stderr
