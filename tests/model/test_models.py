"""The ready-made models: likelihoods, gradients and input checks."""

import jax.numpy as jnp
import numpy as np
import pytest

import sgmc


def test_logistic_gradient_matches_closed_form():
    X, y, _ = sgmc.models.synthetic_logistic_data(200, 4, seed=1)
    post = sgmc.models.logistic_regression(X, y, prior_std=2.0)
    theta = np.array([0.5, -0.2, 0.1, 0.3])
    p = 1 / (1 + np.exp(-(X @ theta)))
    grad = -(X.T @ (y - p)) + theta / 4.0  # ∇U = −Σ (y − σ(xθ)) x + θ/s²
    np.testing.assert_allclose(post.full_grad(jnp.asarray(theta)), grad, rtol=1e-4, atol=1e-4)
    nll = -np.sum(y * np.log(p) + (1 - y) * np.log1p(-p))
    prior = 0.5 * np.sum(theta**2) / 4.0 + 2 * np.log(2 * np.pi * 4.0)
    assert np.isclose(float(post.full_energy(jnp.asarray(theta))), nll + prior, rtol=1e-5)


def test_logistic_is_stable_for_large_margins():
    post = sgmc.models.logistic_regression(np.array([[100.0], [-100.0]]), np.array([0.0, 1.0]))
    e = float(post.full_energy(jnp.array([10.0])))
    assert np.isfinite(e) and e > 1000


def test_linear_regression_posterior_is_the_conjugate_update():
    X, y, _ = sgmc.models.synthetic_linear_data(300, 3, seed=2)
    mu, cov = sgmc.models.linear_regression_posterior(X, y, noise_std=0.5, prior_std=3.0)
    post = sgmc.models.linear_regression(X, y, noise_std=0.5, prior_std=3.0)
    # The posterior mean is the mode: the energy gradient vanishes there ...
    assert np.max(np.abs(np.asarray(post.full_grad(jnp.asarray(mu))))) < 1e-2
    # ... and the covariance is the inverse Hessian.
    hess = X.T @ X / 0.25 + np.eye(3) / 9.0
    np.testing.assert_allclose(cov, np.linalg.inv(hess), rtol=1e-10)


@pytest.mark.parametrize("make, match", [
    (lambda: sgmc.models.linear_regression(np.zeros(5), np.zeros(5)), "X must be a 2-D"),
    (lambda: sgmc.models.linear_regression(np.zeros((5, 2)), np.zeros(4)), "y must have shape"),
    (lambda: sgmc.models.linear_regression(np.zeros((5, 2)), np.zeros(5), noise_std=0),
     "noise_std"),
    (lambda: sgmc.models.logistic_regression(np.zeros((3, 2)), np.array([0, 1, 2])),
     "labels 0 and 1"),
    (lambda: sgmc.models.logistic_regression(np.zeros((3, 2)), np.zeros(3), prior_std=-1),
     "prior_std"),
])
def test_bad_model_inputs(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_softmax_gradient_and_lightweight_saga():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = rng.integers(0, 4, size=60)
    post = sgmc.models.softmax_regression(X, y, prior_std=1.5)
    theta = rng.normal(size=(3, 4)) * 0.3
    z = X @ theta
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    onehot = np.eye(4)[y]
    grad = X.T @ (p - onehot) + theta / 1.5**2
    np.testing.assert_allclose(post.full_grad(jnp.asarray(theta, jnp.float32)), grad,
                               rtol=1e-4, atol=1e-4)
    # Lightweight SAGA stores K numbers per datum and reproduces the dense chain.
    runs = [sgmc.sample(post, sgmc.sgld(1e-3, batch_size=5,
                                        estimator=sgmc.saga(lightweight=light)),
                        jnp.zeros((3, 4)), num_steps=50, seed=1) for light in (True, False)]
    assert runs[0].final_state.dyn.est.table.shape == (1, 60, 4)
    np.testing.assert_allclose(runs[0].samples, runs[1].samples, atol=1e-5)


def test_softmax_bad_labels():
    with pytest.raises(ValueError, match="labels in"):
        sgmc.models.softmax_regression(np.zeros((3, 2)), np.array([0, 1, 5]), num_classes=3)
