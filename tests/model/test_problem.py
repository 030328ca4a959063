"""The oracle: minibatch estimates, per-example values, chunked full passes, data checks."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc


@pytest.fixture(scope="module")
def small():
    X, y, _ = sgmc.models.synthetic_linear_data(37, 3, correlation=0.2, seed=0)
    return sgmc.models.linear_regression(X, y, noise_std=0.7, prior_std=2.0, chunk_size=8), X, y


def _energy_direct(theta, X, y, noise_std=0.7, prior_std=2.0):
    r = y - X @ theta
    lik = 0.5 * np.sum(r**2) / noise_std**2 + 0.5 * len(y) * np.log(2 * np.pi * noise_std**2)
    pri = (0.5 * np.sum(theta**2) / prior_std**2
           + 0.5 * len(theta) * np.log(2 * np.pi * prior_std**2))
    return lik + pri


def test_full_energy_and_grad_in_chunks_match_direct(small):
    post, X, y = small  # 37 data in chunks of 8: four full chunks and a remainder of 5
    theta = np.array([0.3, -1.0, 0.5])
    assert np.isclose(float(post.full_energy(jnp.asarray(theta))), _energy_direct(theta, X, y),
                      rtol=1e-5)
    grad_direct = -(X.T @ (y - X @ theta)) / 0.7**2 + theta / 4.0
    np.testing.assert_allclose(post.full_grad(jnp.asarray(theta)), grad_direct, rtol=1e-4,
                               atol=1e-4)


def test_minibatch_estimate_is_unbiased(small):
    """Averaging Û_B over every single-datum batch recovers U exactly (with replacement)."""
    post, _X, _y = small
    theta = jnp.asarray([0.3, -1.0, 0.5])
    est = [post.estimate_energy(theta, jnp.array([i])) for i in range(37)]
    assert np.isclose(np.mean(est), float(post.full_energy(theta)), rtol=1e-5)
    grads = [post.estimate_grad(theta, jnp.array([i])) for i in range(37)]
    np.testing.assert_allclose(np.mean(grads, axis=0), post.full_grad(theta), rtol=1e-4,
                               atol=1e-3)


def test_per_example_gradients_sum_to_batch_gradient(small):
    post, _, _ = small
    theta = jnp.asarray([0.3, -1.0, 0.5])
    idx = jnp.array([0, 5, 5, 36])
    per = post.batch_grads(theta, idx)
    assert per.shape == (4, 3)
    np.testing.assert_allclose(per.sum(0), post.batch_grad_sum(theta, idx), rtol=1e-5)
    np.testing.assert_allclose(post.batch_energies(theta, idx).sum(),
                               post.batch_energy_sum(theta, idx), rtol=1e-6)


def test_pytree_data_and_params():
    """Data as a dict of arrays with a shared leading axis; parameters as a dict."""
    rng = np.random.default_rng(0)
    data = {"x": rng.normal(size=(20, 2)), "w": rng.uniform(size=20)}

    def loglik(p, d):
        return -0.5 * d["w"] * (d["x"][0] - p["a"]) ** 2 - 0.5 * (d["x"][1] - p["b"][0]) ** 2

    def logprior(p):
        return -0.5 * (p["a"] ** 2 + jnp.sum(p["b"] ** 2))

    post = sgmc.Posterior(loglik, logprior, data, chunk_size=6)
    p = {"a": jnp.float32(0.1), "b": jnp.array([0.2])}
    g = post.full_grad(p)
    ga = -np.sum(data["w"] * (data["x"][:, 0] - 0.1)) + 0.1
    assert np.isclose(float(g["a"]), ga, rtol=1e-5)
    assert g["b"].shape == (1,)


def test_objective_is_a_mean_and_data_free_objective_is_the_function():
    data = np.arange(10.0)
    obj = sgmc.Objective(lambda x, d: (x - d) ** 2, data=data)
    x = jnp.float32(2.0)
    assert np.isclose(float(obj.full_energy(x)), np.mean((2.0 - data) ** 2))
    assert np.isclose(float(obj.estimate_energy(x, jnp.array([3, 4]))), (1 + 4) / 2)
    f = sgmc.Objective(lambda x: jnp.sum(x**2))
    assert not f.has_data
    assert np.isclose(float(f.full_energy(jnp.array([1.0, 2.0]))), 5.0)


@pytest.mark.parametrize("data, match", [
    ({"x": np.zeros((5, 2)), "y": np.zeros(4)}, "share the leading"),
    (np.array([1.0, np.nan, 2.0]), "non-finite"),
    (np.array([1.0, np.inf]), "non-finite"),
    (np.float64(3.0), "leading data axis"),
    ({}, "at least one array"),
])
def test_bad_data_is_rejected(data, match):
    with pytest.raises(ValueError, match=match):
        sgmc.Posterior(lambda p, d: 0.0, lambda p: 0.0, data)


def test_bad_functions_and_chunk_size_are_rejected():
    with pytest.raises(TypeError, match="loglik must be callable"):
        sgmc.Posterior(3, lambda p: 0.0, np.zeros(3))
    with pytest.raises(ValueError, match="chunk_size"):
        sgmc.Posterior(lambda p, d: 0.0, lambda p: 0.0, np.zeros(3), chunk_size=0)


def test_problem_is_a_pytree_with_data_as_leaves(small):
    post, _, _ = small
    leaves = jax.tree.leaves(post)
    assert len(leaves) == 2 and leaves[0].shape[0] == 37
