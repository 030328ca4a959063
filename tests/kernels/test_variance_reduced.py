"""SVRG, SAGA (dense and lightweight) and the fixed-centre control variate.

The six variance-reduced samplers of the SVRG-HMC paper (SVRG/SAGA × LD/HMC/2nd-order HMC)
against the exact linear-regression posterior at the paper's batch size b = 10 and K = N/b.
Tolerance: Monte Carlo error plus the known bias, predicted by the stationary covariance of
the linearised sampler with the control-variate gradient noise averaged over the posterior
(``linear_gaussian.control_variate_noise_cov``); the same prediction with the uniform
estimator's noise is 9–60× the posterior covariance, so the check discriminates.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from linear_gaussian import (
    control_variate_noise_cov,
    gradient_noise_cov,
    moment_check,
    predicted_cov,
)
from sgmc.kernels.estimators import Context

N, D, B = 10_000, 5, 10
K = N // B


@pytest.fixture(scope="module")
def target():
    X, y, _ = sgmc.models.synthetic_linear_data(N, D, correlation=0.3, seed=1)
    mu, sigma = sgmc.models.linear_regression_posterior(X, y)
    A = np.linalg.inv(sigma)
    return {"post": sgmc.models.linear_regression(X, y), "X": X, "y": y, "mu": mu,
            "sigma": sigma, "A": A, "lam_max": np.linalg.eigvalsh(A).max()}


def _sampler(kind, estimator, lam_max):
    if kind == "sgld":
        return sgmc.sgld(0.05 / lam_max, batch_size=B, estimator=estimator), None
    h, friction = 0.1 / np.sqrt(lam_max), 0.8 * np.sqrt(lam_max)
    return sgmc.sghmc(h, friction=friction, batch_size=B, estimator=estimator,
                      integrator=kind), friction


ESTIMATORS = {"svrg": lambda t: sgmc.svrg(K), "saga": lambda t: sgmc.saga(),
              "cv": lambda t: sgmc.control_variate(jnp.asarray(t["mu"]))}


@pytest.mark.parametrize("kind", ["sgld", "euler", "splitting"])
@pytest.mark.parametrize("est", ["svrg", "saga"])
def test_variance_reduced_samplers_match_exact_posterior(target, est, kind):
    sampler, friction = _sampler(kind, ESTIMATORS[est](target), target["lam_max"])
    res = sgmc.sample(target["post"], sampler, jnp.asarray(target["mu"]), num_steps=6_000,
                      num_chains=32, burn_in=1_000, thin=5, seed=1)
    h = float(sampler.step_size.max_value())
    V = control_variate_noise_cov(target["X"], target["sigma"], 1.0, B)
    pred = predicted_cov(kind, target["A"], V, h, friction=friction)
    r = moment_check(res.samples, target["mu"], target["sigma"], pred)
    assert np.all(r["mean_err"] <= r["mean_tol"]), r
    assert r["cov_err_exact"] <= r["bias"] + r["mc_tol"], r
    assert r["bias"] < 0.1 and r["mc_tol"] < 0.15, r
    # The uniform estimator at these settings would be far off: the check discriminates.
    V_uniform = gradient_noise_cov(target["X"], target["y"], target["mu"], 1.0, B)
    wrong = predicted_cov(kind, target["A"], V_uniform, h, friction=friction)
    assert moment_check(res.samples, target["mu"], target["sigma"], wrong)["bias"] > 5


def test_control_variate_at_the_mode(target):
    sampler, friction = _sampler("splitting", ESTIMATORS["cv"](target), target["lam_max"])
    res = sgmc.sample(target["post"], sampler, jnp.asarray(target["mu"]), num_steps=4_000,
                      num_chains=32, burn_in=500, thin=5, seed=2)
    h = float(sampler.step_size.max_value())
    # Fixed centre at μ: Δ = θ − μ ~ N(0, Σ), half the SVRG bound's 2Σ.
    V = 0.5 * control_variate_noise_cov(target["X"], target["sigma"], 1.0, B)
    r = moment_check(res.samples, target["mu"], target["sigma"],
                     predicted_cov("splitting", target["A"], V, h, friction=friction))
    assert np.all(r["mean_err"] <= r["mean_tol"]), r
    assert r["cov_err_exact"] <= r["bias"] + r["mc_tol"], r
    # One full pass at the first step, then 2b per step.
    assert res.meta["grad_evals_total"][0] == N + 4_000 * 2 * B


def test_gradient_error_ten_times_below_uniform_at_equal_cost(target):
    """E‖∇̃ − ∇U‖² along a posterior path: SVRG (b = 10, K = N/b: 3b per step on average)
    against the uniform estimator with batch 3b, the same per-example gradients per step."""
    post = target["post"]
    res = sgmc.sample(post, sgmc.sghmc(0.1 / np.sqrt(target["lam_max"]), friction=80.0,
                                       batch_size=B, integrator="splitting"),
                      jnp.asarray(target["mu"]), num_steps=3 * K, thin=3, seed=4)
    path = jnp.asarray(res.samples[0])  # K points, one every 3 steps

    def errors(estimator, batch_size):
        def body(state, inp):
            t, theta, key = inp
            batch = jax.random.randint(key, (batch_size,), 0, N)
            ctx = Context(t=t, step_size=jnp.float32(0.0), temperature=jnp.float32(1.0))
            g, state, _ = estimator.estimate(post, state, theta, batch, key, ctx)
            return state, jnp.sum((g - post.full_grad(theta)) ** 2)

        keys = jax.random.split(jax.random.key(0), K)
        state0 = estimator.init(post, path[0], keys[0])
        _, err = jax.jit(lambda s: jax.lax.scan(body, s, (jnp.arange(K), path, keys)))(state0)
        return float(jnp.mean(err))

    e_svrg = errors(sgmc.svrg(K), B)
    e_uniform = errors(sgmc.uniform(), 3 * B)
    # Predicted ratio ≈ 825/3 ≈ 275 (traces of the noise covariances); asserted with margin.
    assert e_uniform > 10 * e_svrg, (e_uniform, e_svrg)


def test_saga_running_sum_matches_its_table(target):
    for light in (True, False):
        est = sgmc.saga(lightweight=light)
        res = sgmc.sample(target["post"], sgmc.sgld(0.05 / target["lam_max"], batch_size=B,
                                                     estimator=est),
                          jnp.asarray(target["mu"]), num_steps=3_000, seed=3)
        st = jax.tree.map(lambda a: a[0], res.final_state.dyn.est)
        if light:  # table of s_i = ∂L_i/∂z: the gradients are s_i x_i
            table_total = target["X"].T @ np.asarray(st.table, np.float64)
        else:
            table_total = np.asarray(st.table, np.float64).sum(0)
        scale = np.abs(table_total).max() + np.abs(np.asarray(st.table_sum)).max()
        np.testing.assert_allclose(st.table_sum, table_total, atol=1e-5 * scale)


def test_lightweight_saga_gives_the_same_draws_as_dense(target):
    runs = [sgmc.sample(target["post"], sgmc.sghmc(0.1 / np.sqrt(target["lam_max"]),
                                                   friction=80.0, batch_size=B,
                                                   estimator=sgmc.saga(lightweight=light)),
                        jnp.asarray(target["mu"]), num_steps=500, num_chains=2, seed=5)
            for light in (True, False)]
    sd = np.sqrt(np.diag(target["sigma"]))
    # Same keys, same arithmetic up to float32 rounding of the table entries.
    assert np.max(np.abs(runs[0].samples - runs[1].samples) / sd) < 1e-2


def test_per_example_gradient_counts():
    X, y, _ = sgmc.models.synthetic_linear_data(12, 2, seed=0)
    post = sgmc.models.linear_regression(X, y, chunk_size=5)
    # SVRG, K = 4, b = 3, 10 steps: snapshots at t = 0, 4, 8 (3 × 12) and 2b every step.
    res = sgmc.sample(post, sgmc.sgld(1e-3, batch_size=3, estimator=sgmc.svrg(4)),
                      jnp.zeros(2), num_steps=10)
    expected = np.cumsum([12 * (t % 4 == 0) + 6 for t in range(10)])
    np.testing.assert_array_equal(res.info["grad_evals"][0], expected)
    # SAGA: the table at the first step (12), then b new gradients per step.
    res = sgmc.sample(post, sgmc.sgld(1e-3, batch_size=3, estimator=sgmc.saga()),
                      jnp.zeros(2), num_steps=10)
    np.testing.assert_array_equal(res.info["grad_evals"][0], 12 + 3 * np.arange(1, 11))


def test_bad_variance_reduction_inputs():
    X, y, _ = sgmc.models.synthetic_linear_data(100, 3, seed=0)
    post = sgmc.models.linear_regression(X, y)
    with pytest.raises(ValueError, match=r"period must be an integer in \[1, inf\]"):
        sgmc.svrg(0)
    with pytest.raises(ValueError, match="needs a minibatch"):
        sgmc.sample(post, sgmc.sgld(1e-4, estimator=sgmc.svrg(5)), jnp.zeros(3), 5)
    dense = sgmc.saga(lightweight=False, max_table_bytes=1000)
    with pytest.raises(ValueError, match=r"SAGA table would take .*lightweight=True"):
        sgmc.sample(post, sgmc.sgld(1e-4, batch_size=5, estimator=dense), jnp.zeros(3), 5)
    generic = sgmc.Posterior(lambda p, d: -0.5 * jnp.sum((d - p) ** 2),
                             lambda p: -0.5 * jnp.sum(p**2), np.zeros((100, 3)))
    with pytest.raises(ValueError, match="lightweight SAGA needs a generalised linear"):
        sgmc.sample(generic, sgmc.sgld(1e-4, batch_size=5,
                                       estimator=sgmc.saga(lightweight=True)), jnp.zeros(3), 5)
