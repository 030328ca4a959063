"""The likelihood's temperature, ``Posterior(..., temperature=τ)``: U_τ = −log p(θ) − (1/τ) Σ log
p(x_i | θ).

For Bayesian linear regression a likelihood tempered at τ is the likelihood of noise variance
τσ², so the tempered posterior is known exactly (:func:`linear_regression_posterior` with
noise σ√τ) and the draws are compared with it."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.models.linear import linear_regression_posterior, synthetic_linear_data


def _problem(tau, n=200, d=3):
    X, y, _ = synthetic_linear_data(n, d, seed=1)
    post = sgmc.models.linear_regression(X, y)
    return X, y, sgmc.Posterior(post.loglik, post.logprior, post.data, temperature=tau)


def test_the_energy_weighs_the_likelihood_by_one_over_tau():
    _, _, cold = _problem(0.25)
    _, _, bayes = _problem(1.0)
    theta = jnp.array([0.3, -0.2, 0.5], jnp.float32)
    prior = -bayes.exact_energy(theta)
    nll = bayes.full_energy(theta) + prior          # −Σ log p(x_i | θ)
    np.testing.assert_allclose(cold.full_energy(theta), -prior + 4.0 * nll, rtol=1e-5)
    g_cold, g_bayes = cold.full_grad(theta), bayes.full_grad(theta)
    g_prior = jax.grad(lambda t: -bayes.logprior(t))(theta)
    np.testing.assert_allclose(g_cold, g_prior + 4.0 * (g_bayes - g_prior), rtol=1e-4,
                               atol=1e-4)
    # minibatch estimates scale the same way: N/(n τ) per term
    assert cold.batch_scale(20) == pytest.approx(4.0 * bayes.batch_scale(20))


@pytest.mark.parametrize("tau", [0.25, 4.0])
def test_draws_follow_the_tempered_posterior(tau):
    X, y, post = _problem(tau)
    mean, cov = linear_regression_posterior(X, y, noise_std=np.sqrt(tau))
    tuned, start = sgmc.warmup(post, sgmc.sghmc(batch_size=50), np.zeros(3, np.float32),
                               check=False)
    res = sgmc.sample(post, tuned, start, num_steps=20_000, num_chains=4, burn_in=2_000,
                      thin=5, seed=0)
    draws = np.asarray(res.samples, np.float64).reshape(-1, 3)
    sd = np.sqrt(np.diag(cov))
    ess = np.asarray(res.summary()["ess_bulk"], np.float64)
    # each mean within 4 Monte Carlo SEs (on a Gaussian target the tuned step biases the
    # variance, not the mean); each sd within 4 MC SEs (sd/√(2 ESS)) plus 5 % (warm-up's
    # 10 % budget on the variance, halved on the sd)
    assert np.all(np.abs(draws.mean(0) - mean) < 4.0 * sd / np.sqrt(ess))
    rel = draws.std(0) / sd - 1.0
    assert np.all(np.abs(rel) < 0.05 + 4.0 / np.sqrt(2.0 * ess)), rel
    # and not Bayes' posterior: the tempered sds differ from τ = 1's by a factor ≈ √τ
    _, cov1 = linear_regression_posterior(X, y)
    assert np.all(np.abs(draws.std(0) / np.sqrt(np.diag(cov1)) - 1.0) > 0.3)


def test_temperature_is_validated_and_part_of_the_problem():
    with pytest.raises(ValueError, match="temperature"):
        _problem(0.0)
    with pytest.raises(ValueError, match="temperature"):
        _problem(-1.0)
    from sgmc.io.checkpoint import fingerprint

    smp = sgmc.sgld(1e-4, batch_size=10)
    assert fingerprint(_problem(0.5)[2], smp) != fingerprint(_problem(1.0)[2], smp)
