"""SGLD, both SGHMC integrators and pSGLD against the exact linear-regression posterior.

Every tolerance is derived (see ``linear_gaussian.moment_check``): Monte Carlo error from the
effective sample size, plus each sampler's known bias at its step size, computed exactly
for this linear-Gaussian target by a discrete Lyapunov equation (discretisation and
minibatch-gradient noise together).
"""

import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from linear_gaussian import gradient_noise_cov, moment_check, predicted_cov

N, D, BATCH, NOISE_STD = 10_000, 5, 200, 1.0


@pytest.fixture(scope="module")
def target():
    # Equicorrelated features (ρ = 0.3): posterior precision eigenvalues ≈ 6.7e3 … 2.1e4.
    X, y, _ = sgmc.models.synthetic_linear_data(N, D, correlation=0.3, seed=1)
    post = sgmc.models.linear_regression(X, y, noise_std=NOISE_STD)
    mu, sigma = sgmc.models.linear_regression_posterior(X, y, noise_std=NOISE_STD)
    return {"post": post, "X": X, "y": y, "mu": mu, "sigma": sigma,
            "A": np.linalg.inv(sigma)}


# Step sizes chosen (by the Lyapunov prediction) so that each sampler's known covariance bias
# at batch 200 is below 0.08 in whitened units; friction near the critically damped value of
# the slowest direction for the Euler form, and large for the splitting form.
CASES = {
    "sgld": dict(kind="sgld", h=1.2e-7, friction=None),
    "sghmc-euler": dict(kind="euler", h=2.4e-5, friction=170.0),
    "sghmc-splitting": dict(kind="splitting", h=6.5e-4, friction=2400.0),
    # pSGLD's preconditioner settles at G ≈ 14 here, so its h is ~14× smaller than SGLD's.
    "psgld": dict(kind="psgld", h=1e-8, friction=None),
}


def _sampler(kind, h, friction, batch_size=BATCH, temperature=1.0):
    if kind == "sgld":
        return sgmc.sgld(h, batch_size=batch_size, temperature=temperature)
    if kind == "psgld":
        return sgmc.psgld(h, batch_size=batch_size, temperature=temperature)
    return sgmc.sghmc(h, friction=friction, batch_size=batch_size, temperature=temperature,
                      integrator=kind)


# (chains, steps, the sharpness the budget buys: largest allowed Monte Carlo tolerance).
# The default budget takes ~10 s per sampler; the slow one runs with `make test-slow`.
BUDGETS = {"default": (64, 12_000, 0.35), "long": (256, 40_000, 0.12)}


@pytest.mark.parametrize("budget", [
    "default", pytest.param("long", marks=pytest.mark.slow)])
@pytest.mark.parametrize("name", list(CASES))
def test_reproduces_exact_posterior(target, name, budget):
    case = CASES[name]
    chains, steps, sharpness = BUDGETS[budget]
    sampler = _sampler(case["kind"], case["h"], case["friction"])
    res = sgmc.sample(target["post"], sampler, init=jnp.asarray(target["mu"]), num_steps=steps,
                      num_chains=chains, burn_in=2_000, thin=10, seed=11)
    V = gradient_noise_cov(target["X"], target["y"], target["mu"], NOISE_STD, BATCH)
    if case["kind"] == "psgld":
        # Predict with the RMSprop preconditioner G held at its stationary value (the mean
        # over chains of the final G; it fluctuates by ~5 %, a second-order effect on C).
        v = np.asarray(res.final_state.dyn.square_avg, np.float64)
        G = (1.0 / (1e-5 + np.sqrt(v))).mean(0)
        pred = predicted_cov("sgld", target["A"], V, case["h"], precond=G)
    else:
        pred = predicted_cov(case["kind"], target["A"], V, case["h"], friction=case["friction"])
    r = moment_check(res.samples, target["mu"], target["sigma"], pred)
    assert r["bias"] < 0.08, "the chosen step is not 'small': the test would not be sharp"
    # Mean: exactly unbiased for a linear-Gaussian target, so Monte Carlo error only.
    assert np.all(r["mean_err"] <= r["mean_tol"]), r
    # Covariance: exact posterior within known bias + MC error ...
    assert r["cov_err_exact"] <= r["bias"] + r["mc_tol"], r
    # ... and the sampler's own predicted stationary covariance within MC error alone.
    assert r["cov_err_pred"] <= r["mc_tol"], r
    # The budget gives enough effective draws for the tolerance to mean something.
    assert r["mc_tol"] < sharpness, r
    assert res.info["grad_evals"][0, -1] == steps * BATCH


def test_splitting_has_smaller_bias_than_euler_at_large_step(target):
    """With exact gradients the Euler form's covariance bias is O(h), splitting's O(h²)."""
    h, friction = 6e-3, 100.0  # h·√λ_max ≈ 0.88, D·h = 0.6 < 1
    errs, preds, tols = {}, {}, {}
    for kind in ("euler", "splitting"):
        sampler = _sampler(kind, h, friction, batch_size=None)
        res = sgmc.sample(target["post"], sampler, init=jnp.asarray(target["mu"]),
                          num_steps=4_000, num_chains=32, burn_in=500, thin=2, seed=5)
        pred = predicted_cov(kind, target["A"], np.zeros((D, D)), h, friction=friction)
        r = moment_check(res.samples, target["mu"], target["sigma"], pred)
        assert r["cov_err_pred"] <= r["mc_tol"], (kind, r)
        errs[kind], preds[kind], tols[kind] = r["cov_err_exact"], r["bias"], r["mc_tol"]
    assert preds["splitting"] < 0.25 * preds["euler"], preds
    # The measured gap exceeds both runs' Monte Carlo error together.
    assert errs["splitting"] + tols["splitting"] + tols["euler"] < errs["euler"], (errs, tols)


def test_explicit_integrator_matches_its_lyapunov_prediction(target):
    """integrator="explicit" (EWSG paper eq. 3: θ_{k+1} = θ_k + h p_k) has the stationary
    covariance of its own linear recursion, which differs from semi-implicit Euler's by far
    more than the Monte Carlo error at this step (so a mix-up of the two fails)."""
    h, friction = 3e-3, 100.0  # D·h = 0.3; explicit Euler inflates the variance 1.3–2.9×
    res = sgmc.sample(target["post"], _sampler("explicit", h, friction, batch_size=None),
                      init=jnp.asarray(target["mu"]), num_steps=4_000, num_chains=32,
                      burn_in=500, thin=2, seed=7)
    zero = np.zeros((D, D))
    pred = predicted_cov("explicit", target["A"], zero, h, friction=friction)
    r = moment_check(res.samples, target["mu"], target["sigma"], pred)
    assert np.all(r["mean_err"] <= r["mean_tol"]), r
    assert r["cov_err_pred"] <= r["mc_tol"], r
    # Discriminating: the semi-implicit prediction is outside the same tolerance.
    semi = predicted_cov("euler", target["A"], zero, h, friction=friction)
    Li = np.linalg.inv(np.linalg.cholesky(target["sigma"]))
    assert np.linalg.norm(Li @ (pred - semi) @ Li.T, 2) > 2 * r["mc_tol"], r


def test_zero_temperature_full_batch_converges_to_map(target):
    """τ = 0 with the full data is gradient descent: it converges to the posterior mode."""
    lam_max = np.linalg.eigvalsh(target["A"]).max()
    res = sgmc.sample(target["post"], sgmc.sgld(1.0 / lam_max, temperature=0.0),
                      init=jnp.zeros(D), num_steps=400, thin=400)
    x = res.samples[0, -1]
    sd = np.sqrt(np.diag(target["sigma"]))
    # Contraction (1 − λ_min/λ_max)^400 < 1e-20; what is left is float32 round-off.
    assert np.max(np.abs(x - target["mu"]) / sd) < 1e-2


@pytest.mark.parametrize("kind", ["sgld", "euler", "explicit", "splitting"])
def test_temperature_two_doubles_covariance(target, kind):
    """With exact gradients the stationary law at τ is N(μ, τΣ) up to the O(h) bias, for
    every integrator (a noise term missing τ gives τ = 1's covariance)."""
    h = {"sgld": 5e-6, "euler": 1e-3, "explicit": 5e-4, "splitting": 2e-3}[kind]
    friction = 300.0
    sampler = _sampler(kind, h, friction, batch_size=None, temperature=2.0)
    res = sgmc.sample(target["post"], sampler, init=jnp.asarray(target["mu"]),
                      num_steps=6_000, num_chains=32, burn_in=1_000, thin=5, seed=3)
    pred = predicted_cov(kind, target["A"], np.zeros((D, D)), h, temperature=2.0,
                         friction=friction)
    r = moment_check(res.samples, target["mu"], 2.0 * target["sigma"], pred)
    assert r["bias"] < 0.06
    assert r["cov_err_exact"] <= r["bias"] + r["mc_tol"], r
    # Discriminating: the τ = 1 posterior covariance is far outside the tolerance.
    r1 = moment_check(res.samples, target["mu"], target["sigma"], pred)
    assert r1["cov_err_exact"] > 0.8
