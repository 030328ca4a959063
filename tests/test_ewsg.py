"""EWSG: the index chain's law, and EWSG = SGHMC when every datum has the same gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.estimators import Context


def _ideal_weights(post, theta, momentum, h, friction, tau):
    """p_i ∝ exp(‖x + N a_i‖²/2) with the default x = √h D r/σ + √h ∇U₀/σ (eq. 4)."""
    sigma = np.sqrt(2 * friction * tau)
    n = post.num_data
    g = np.asarray(post.batch_grads(theta, jnp.arange(n)), np.float64)
    x = np.sqrt(h) * (friction * np.asarray(momentum) + np.asarray(post.exact_grad(theta)))
    x = x / sigma
    a = np.sqrt(h) * g / sigma
    logp = 0.5 * np.sum((x + n * a) ** 2, axis=1)
    p = np.exp(logp - logp.max())
    return p / p.sum()


def test_index_chain_matches_ideal_weights():
    """With many Metropolis steps per draw (M = 40) each index is a draw from p; 4,000 of them
    against the exact weights by a chi-square test (9 degrees of freedom, 0.999 quantile 27.9)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 2))
    y = X @ np.array([0.5, -0.3]) + rng.normal(size=10)
    post = sgmc.models.linear_regression(X, y)
    theta, mom = jnp.array([0.2, 0.1]), jnp.array([0.8, -0.5])
    h, friction, tau = 0.05, 2.0, 1.0
    p = _ideal_weights(post, theta, mom, h, friction, tau)
    assert p.max() / p.min() > 3  # the weights are far from uniform: the test can fail
    est = sgmc.ewsg(chain_length=40).with_batch_size(1)
    ctx = Context(t=jnp.int32(0), step_size=jnp.float32(h), temperature=jnp.float32(tau),
                  friction=jnp.float32(friction), momentum=mom, kick_offset=h * friction * mom)
    g_all = np.asarray(post.batch_grads(theta, jnp.arange(10)))

    @jax.jit
    def draw(key):
        k0, k1 = jax.random.split(key)
        start = jax.random.randint(k0, (1,), 0, 10)
        g, _, _ = est.estimate(post, est.init(post, theta, k0), theta, start, k1, ctx)
        return g

    grads = np.asarray(jax.vmap(draw)(jax.random.split(jax.random.key(1), 4000)))
    # Recover each draw's index from its gradient (∇U₀ + N ∇L_I, all ∇L_i distinct).
    gl = (grads - np.asarray(post.exact_grad(theta))) / 10
    idx = np.argmin(np.linalg.norm(gl[:, None, :] - g_all[None], axis=2), axis=1)
    counts = np.bincount(idx, minlength=10)
    expected = 4000 * p
    chi2 = np.sum((counts - expected) ** 2 / expected)
    assert chi2 < 27.9, (counts, expected.round(1))
    # Discriminating: uniform indices would be rejected by the same test.
    assert np.sum((4000 / 10 - expected) ** 2 / expected) > 27.9


def test_identical_gradients_make_ewsg_equal_sghmc():
    """All data identical: the index cannot change the gradient, so EWSG's trajectory is
    SGHMC's under the same dynamics noise."""
    X = np.tile([[0.3, -1.2]], (50, 1))
    y = np.full(50, 0.7)
    post = sgmc.models.linear_regression(X, y)
    runs = [sgmc.sample(post, sgmc.sghmc(1e-3, friction=5.0, batch_size=4, estimator=est),
                        jnp.zeros(2), num_steps=300, num_chains=2, seed=3)
            for est in (sgmc.uniform(), sgmc.ewsg(chain_length=3),
                        sgmc.ewsg(chain_length=3, grouping="batch"))]
    np.testing.assert_allclose(runs[0].samples, runs[1].samples, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(runs[0].samples, runs[2].samples, rtol=1e-5, atol=1e-6)
    # ... at (M + 1) per-example gradients per slot per step.
    assert runs[1].meta["grad_evals_total"][0] == 300 * 4 * 4


@pytest.mark.parametrize("kind, x", [("sgld", "default"), ("euler", "zero"),
                                     ("splitting", "one"), ("euler", "next_zero"),
                                     ("sgld", "next_zero"), ("splitting", "default")])
def test_every_dynamics_and_x_choice_runs(kind, x):
    """Every dynamics × x choice runs (the slot grouping with b = 3; see the batch grouping
    test below)."""
    X, y, _ = sgmc.models.synthetic_linear_data(200, 2, seed=0)
    post = sgmc.models.linear_regression(X, y)
    est = sgmc.ewsg(x=x, persistent=(x == "zero"))
    sampler = (sgmc.sgld(1e-4, batch_size=3, estimator=est) if kind == "sgld" else
               sgmc.sghmc(1e-3, friction=20.0, batch_size=3, estimator=est, integrator=kind))
    res = sgmc.sample(post, sampler, jnp.zeros(2), num_steps=50)
    assert np.all(np.isfinite(res.samples))


def test_ewsg_bad_input():
    with pytest.raises(ValueError, match="chain_length"):
        sgmc.ewsg(chain_length=0)
    with pytest.raises(ValueError, match="grouping must be one of"):
        sgmc.ewsg(grouping="pairs")
    with pytest.raises(ValueError, match="x must be one of"):
        sgmc.ewsg(x="two")
    with pytest.raises(ValueError, match="temperature must be > 0"):
        sgmc.sghmc(1e-3, friction=5.0, batch_size=2, temperature=0.0, estimator=sgmc.ewsg())


def test_ewsg_with_svrg_counts_and_runs():
    X, y, _ = sgmc.models.synthetic_linear_data(40, 2, seed=0)
    post = sgmc.models.linear_regression(X, y)
    est = sgmc.ewsg(chain_length=2, svrg_period=10)
    res = sgmc.sample(post, sgmc.sghmc(1e-3, friction=10.0, batch_size=2, estimator=est),
                      jnp.zeros(2), num_steps=25)
    # Snapshots at t = 0, 10, 20 (3 × 40); (M + 1) = 3 terms per slot, 2 gradients per term.
    assert res.meta["grad_evals_total"][0] == 3 * 40 + 25 * 2 * 3 * 2
    assert np.all(np.isfinite(res.samples))


def test_ewsg_with_svrg_is_exact_at_the_anchor():
    """At the anchor every corrected term equals the full mean gradient: no subsampling noise,
    so the estimate is the exact gradient whatever index the chain picks."""
    X, y, _ = sgmc.models.synthetic_linear_data(30, 2, seed=1)
    post = sgmc.models.linear_regression(X, y)
    est = sgmc.ewsg(svrg_period=100).with_batch_size(3)
    theta = jnp.array([0.3, -0.2])
    ctx = Context(t=jnp.int32(0), step_size=jnp.float32(1e-3), temperature=jnp.float32(1.0),
                  friction=jnp.float32(5.0), momentum=jnp.zeros(2), kick_offset=jnp.zeros(2))
    g, _, _ = est.estimate(post, est.init(post, theta, jax.random.key(0)), theta,
                           jnp.array([0, 7, 7]), jax.random.key(1), ctx)
    np.testing.assert_allclose(g, post.full_grad(theta), rtol=1e-4, atol=1e-3)


def test_batch_grouping_equals_slot_grouping_at_batch_size_one():
    """For b = 1 a minibatch is one datum, so both groupings are the same chain (bitwise)."""
    X, y, _ = sgmc.models.synthetic_linear_data(200, 2, seed=0)
    post = sgmc.models.linear_regression(X, y)
    runs = [sgmc.sample(post, sgmc.sghmc(1e-3, friction=20.0, batch_size=1,
                                         estimator=sgmc.ewsg(grouping=g)),
                        jnp.zeros(2), num_steps=200, seed=5) for g in ("slot", "batch")]
    np.testing.assert_array_equal(runs[0].samples, runs[1].samples)
