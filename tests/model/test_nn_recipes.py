"""The neural-network recipes of docs/neural-networks.md: Flax linen, Flax NNX and Equinox
models as sgmc posteriors.

For each framework the posterior is built exactly as the page says — ``loglik`` of one datum
through the model's own apply, a Gaussian prior over every leaf via ``jax.tree``, the start
from the model's own initialiser — and the tests check that

- ``res.samples`` is the model's own pytree (same treedef, same leaf shapes behind the
  leading (chains, draws) axes), and the Bayesian model average through the model's apply,
  vmapped over draws, gives probabilities;
- every sampler family runs on it (SGLD, SGHMC, pSGLD, SVRG and SAGA estimators, EWSG,
  replica exchange): tiny runs, finite draws;
- a linear model (one Dense/Linear layer, no hidden layer) gives the exact posterior of
  Bayesian linear regression (the known-answer test: see ``test_linear_model_posterior``).

Skipped when Flax or Equinox is not installed (``pip install -e ".[nn]"``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc

PyTree = Any
FRAMEWORKS = ("linen", "nnx", "equinox")


def gaussian_logprior(params: PyTree, std: float = 1.0) -> jax.Array:
    """log N(params | 0, std² I) over every leaf, up to a constant."""
    return sum(-0.5 * jnp.sum(jnp.square(p)) / std**2 for p in jax.tree.leaves(params))


@dataclass
class Recipe:
    """One framework's model as the page builds it: a start (``init``), the network on one
    input (d,) (``apply``) and on a batch (n, d) (``batch_apply``); for a linear model,
    ``weights`` reads (W (d, 1), b (1,)) off a params pytree (any leading axes)."""

    init: PyTree
    apply: Callable[[PyTree, jax.Array], jax.Array]
    batch_apply: Callable[[PyTree, jax.Array], jax.Array]
    weights: Callable[[PyTree], tuple[jax.Array, jax.Array]] | None = None  # linear: (W, b)


def make_recipe(framework: str, sizes: tuple[int, ...], seed: int = 0) -> Recipe:
    """An MLP with layer widths ``sizes`` (ReLU between layers; one layer: a linear model)."""
    key = jax.random.key(seed)
    if framework == "linen":
        nn = pytest.importorskip("flax.linen", reason="Flax is not installed")

        class MLP(nn.Module):
            widths: tuple[int, ...]

            @nn.compact
            def __call__(self, x):
                for w in self.widths[:-1]:
                    x = nn.relu(nn.Dense(w)(x))
                return nn.Dense(self.widths[-1])(x)

        model = MLP(sizes[1:])
        params = model.init(key, jnp.zeros(sizes[0]))
        last = f"Dense_{len(sizes) - 2}"
        return Recipe(params, model.apply, model.apply,
                      lambda p: (p["params"][last]["kernel"], p["params"][last]["bias"]))
    if framework == "nnx":
        nnx = pytest.importorskip("flax.nnx", reason="Flax is not installed")

        class MLP(nnx.Module):
            def __init__(self, sizes, rngs):
                self.layers = nnx.List([nnx.Linear(a, b, rngs=rngs)
                                        for a, b in itertools.pairwise(sizes)])

            def __call__(self, x):
                for layer in self.layers[:-1]:
                    x = nnx.relu(layer(x))
                return self.layers[-1](x)

        graphdef, params = nnx.split(MLP(sizes, nnx.Rngs(seed)))

        def apply(p, x):
            return nnx.merge(graphdef, p)(x)

        last = len(sizes) - 2
        return Recipe(params, apply, apply,
                      lambda p: (p["layers"][last]["kernel"][...], p["layers"][last]["bias"][...]))
    if framework == "equinox":
        eqx = pytest.importorskip("equinox", reason="Equinox is not installed")
        model = eqx.nn.MLP(sizes[0], sizes[-1], sizes[1] if len(sizes) > 2 else 0,
                           len(sizes) - 2, activation=jax.nn.relu, key=key)
        params, static = eqx.partition(model, eqx.is_inexact_array)

        def apply(p, x):
            return eqx.combine(p, static)(x)

        # Equinox layers take one input: a batch goes through vmap.
        return Recipe(params, apply, lambda p, x: jax.vmap(lambda xi: apply(p, xi))(x),
                      lambda p: (jnp.swapaxes(p.layers[-1].weight, -1, -2), p.layers[-1].bias))
    raise ValueError(framework)


def classification_posterior(recipe: Recipe, X, y, prior_std: float = 1.0) -> sgmc.Posterior:
    def loglik(params, datum):
        return jax.nn.log_softmax(recipe.apply(params, datum["x"]))[datum["y"]]

    return sgmc.Posterior(loglik, lambda p: gaussian_logprior(p, prior_std), {"x": X, "y": y})


def toy_classification(n: int = 32, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2)).astype(np.float32)
    return X, (X[:, 0] * X[:, 1] > 0).astype(np.int32)


def pooled(samples: PyTree) -> PyTree:
    """(chains, draws, ...) leaves → (chains·draws, ...)."""
    return jax.tree.map(lambda a: a.reshape(-1, *a.shape[2:]), samples)


@pytest.fixture
def quick_compile():
    """XLA's optimisations off while a test runs: these tests check that a program traces,
    compiles and runs on the model's pytree, not its speed, and compiling without them takes
    about half as long (what makes 21 sampler × framework runs affordable)."""
    before = jax.config.values["jax_disable_most_optimizations"]
    jax.config.update("jax_disable_most_optimizations", True)
    yield
    jax.config.update("jax_disable_most_optimizations", before)


@pytest.fixture(scope="module", params=FRAMEWORKS)
def mlp_case(request):
    X, y = toy_classification()
    recipe = make_recipe(request.param, (2, 4, 2))
    return request.param, recipe, classification_posterior(recipe, X, y), X, y


SAMPLERS = {
    "sgld": lambda: sgmc.sgld(1e-3, batch_size=8),
    "sghmc": lambda: sgmc.sghmc(1e-2, friction=10.0, batch_size=8, integrator="splitting"),
    "psgld": lambda: sgmc.psgld(1e-3, batch_size=8),
    "svrg": lambda: sgmc.sghmc(1e-2, friction=10.0, batch_size=8, estimator=sgmc.svrg(4)),
    "saga": lambda: sgmc.sgld(1e-3, batch_size=8, estimator=sgmc.saga()),
    "ewsg": lambda: sgmc.sghmc(1e-2, friction=10.0, batch_size=8, estimator=sgmc.ewsg()),
    "replica_exchange": lambda: sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=8),
                                                      [1.0, 3.0], correction=1.0),
}


def tiny_run(post: sgmc.Posterior, name: str, init: PyTree) -> sgmc.Result:
    """12 steps of 2 chains, 4 draws each."""
    return sgmc.sample(post, SAMPLERS[name](), init, num_steps=12, num_chains=2, burn_in=4,
                       thin=2, seed=1)


def test_samples_keep_model_structure_and_bma(mlp_case, quick_compile):
    _, recipe, post, X, _ = mlp_case
    res = tiny_run(post, "sgld", recipe.init)     # the same program as the sgld run below
    assert jax.tree.structure(res.samples) == jax.tree.structure(recipe.init)
    assert type(res.samples) is type(recipe.init)
    for draw, leaf in zip(jax.tree.leaves(res.samples), jax.tree.leaves(recipe.init),
                          strict=True):
        assert draw.shape == (2, 4, *leaf.shape)
        assert np.all(np.isfinite(draw))
    # The Bayesian model average through the model's own apply, vmapped over draws.
    probs = jax.vmap(lambda p: jax.nn.softmax(recipe.batch_apply(p, X)))(pooled(res.samples))
    assert probs.shape == (2 * 4, len(X), 2)
    bma = probs.mean(axis=0)
    np.testing.assert_allclose(bma.sum(axis=-1), 1.0, rtol=1e-5)
    # One draw put back into the model predicts as the model at those parameters.
    first = jax.tree.map(lambda a: a[0, 0], res.samples)
    np.testing.assert_allclose(probs[0], jax.nn.softmax(recipe.batch_apply(first, X)),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", SAMPLERS)
def test_every_sampler_family_runs(mlp_case, quick_compile, name):
    _, recipe, post, _, _ = mlp_case
    res = tiny_run(post, name, recipe.init)
    assert jax.tree.structure(res.samples) == jax.tree.structure(recipe.init)
    for draw, leaf in zip(jax.tree.leaves(res.samples), jax.tree.leaves(recipe.init),
                          strict=True):
        assert draw.shape == (2, 4, *leaf.shape)
        assert np.all(np.isfinite(draw)), name
    # The chains moved off the start.
    assert not np.allclose(jax.tree.leaves(res.samples)[0][:, -1],
                           jax.tree.leaves(recipe.init)[0])


def exact_linear_posterior(X, y, noise_std: float, prior_std: float):
    """Mean and covariance of (w, b) for y = Xw + b + N(0, σ²), (w, b) ~ N(0, s² I)."""
    Z = np.column_stack([X, np.ones(len(X))]).astype(np.float64)
    precision = Z.T @ Z / noise_std**2 + np.eye(Z.shape[1]) / prior_std**2
    cov = np.linalg.inv(precision)
    return cov @ Z.T @ y / noise_std**2, cov, precision


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_linear_model_posterior(framework, quick_compile):
    """A Dense/Linear layer with no hidden layer, a Gaussian likelihood with known σ and a
    Gaussian prior: the posterior of θ = (w, b) is N(μ, A⁻¹) with precision
    A = ZᵀZ/σ² + I/s² (Z = [X, 1]) and μ = A⁻¹Zᵀy/σ².

    Full-batch SGLD (``batch_size=None``) is the unadjusted Langevin algorithm
    θ' = θ − h A (θ − μ) + √(2h) ξ. It is linear in θ, so its stationary law is Gaussian
    with mean exactly μ (the step adds no bias to the mean) and covariance
    A⁻¹ (I − hA/2)⁻¹ (solve Σ = (I − hA) Σ (I − hA) + 2h I). What remains of the start θ₀
    after the burn-in B is the transient (I − hA)^B (θ₀ − μ), bounded by
    (1 − hλ_min)^B |θ₀ − μ|. So, per coordinate j,

        |mean_j − μ_j| ≤ 4·SE_j + (1 − hλ_min)^B |θ₀ − μ|,   SE_j = sd_j / √ESS_j,

    with ESS from ArviZ (``method="mean"``) over all chains; 4 standard errors make a false
    alarm a ~1e-4 event per coordinate (and the seed is fixed). The variance of each
    coordinate is checked against the diagonal of A⁻¹(I − hA/2)⁻¹, within 4 relative
    standard errors √(2/ESS). The prior is strong (s = 0.5 against N = 24 points), so a
    model that drops it, or flips the sign of its log-likelihood, fails by many SE.
    """
    az = pytest.importorskip("arviz")
    d, n, sigma, s = 2, 24, 1.0, 0.5
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X @ np.array([1.5, -1.0]) + 0.5 + sigma * rng.normal(size=n)).astype(np.float32)
    mu, cov, A = exact_linear_posterior(X, y, sigma, s)

    recipe = make_recipe(framework, (d, 1))

    def loglik(params, datum):
        f = recipe.apply(params, datum["x"])[0]
        return -0.5 * ((datum["y"] - f) / sigma) ** 2

    post = sgmc.Posterior(loglik, lambda p: gaussian_logprior(p, s), {"x": X, "y": y})
    lam = np.linalg.eigvalsh(A)
    h = 0.05 / lam[-1]                         # hλ_max = 0.05: variance inflated ≤ 2.6 %
    burn_in, steps, chains = 2_000, 12_000, 4
    res = sgmc.sample(post, sgmc.sgld(h), recipe.init, num_steps=steps, num_chains=chains,
                      burn_in=burn_in, thin=5, seed=0)
    w, b = recipe.weights(res.samples)          # (chains, draws, d, 1), (chains, draws, 1)
    theta = np.concatenate([np.asarray(w)[..., 0], np.asarray(b)], axis=-1).astype(np.float64)

    w0, b0 = recipe.weights(recipe.init)
    theta0 = np.concatenate([np.asarray(w0)[:, 0], np.asarray(b0)])
    transient = (1 - h * lam[0]) ** burn_in * np.linalg.norm(theta0 - mu)
    expected_cov = cov @ np.linalg.inv(np.eye(d + 1) - h * A / 2)
    for j in range(d + 1):
        ess = float(az.ess(theta[..., j], method="mean"))
        assert ess > 200, (framework, j, ess)
        sd = theta[..., j].std()
        err = abs(theta[..., j].mean() - mu[j])
        assert err <= 4 * sd / np.sqrt(ess) + transient, (framework, j, err, sd, ess)
        var_ratio = theta[..., j].var() / expected_cov[j, j]
        assert abs(var_ratio - 1) <= 4 * np.sqrt(2 / ess), (framework, j, var_ratio, ess)
