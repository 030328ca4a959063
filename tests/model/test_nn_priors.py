"""sgmc.nn: priors for neural-network parameter pytrees.

- the log density is scipy.stats' (norm, laplace, t) summed with each leaf's scale;
- the fan-in is read right off real Flax linen, Flax NNX, Equinox and sgmc.models.mlp
  pytrees (scales checked against sqrt(c / fan_in) computed by hand);
- laplace and student_t have the Gaussian's variance s²;
- every argument and leaf error is raised, naming the argument or the leaf;
- the prior runs under jit and grad inside sgmc.Posterior and sgmc.sample.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import sgmc

C = 3.0


def small_tree():
    rng = np.random.default_rng(0)
    return {"dense": {"kernel": jnp.asarray(rng.normal(size=(4, 3)), jnp.float32),
                      "bias": jnp.asarray(rng.normal(size=3), jnp.float32)},
            "conv": {"weight": jnp.asarray(rng.normal(size=(5, 2, 3, 3)), jnp.float32)},
            "scalar": jnp.asarray(0.7, jnp.float32)}


# s per leaf of small_tree, by hand: kernel (in=4, out=3), weight (out=5, in=2, 3, 3)
HAND = {"dense.kernel": math.sqrt(C / 4), "dense.bias": 0.5, "conv.weight": math.sqrt(C / 18),
        "scalar": 0.5}


def scipy_logpdf(family: str, x, s: float, df: float) -> float:
    x = np.asarray(x, np.float64)
    if family == "gaussian":
        return stats.norm.logpdf(x, 0, s).sum()
    if family == "laplace":
        return stats.laplace.logpdf(x, 0, s / np.sqrt(2)).sum()
    return stats.t.logpdf(x, df, 0, s * np.sqrt((df - 2) / df) if df > 2 else s).sum()


@pytest.mark.parametrize(("family", "df"), [("gaussian", 5.0), ("laplace", 5.0),
                                            ("student_t", 5.0), ("student_t", 1.5)])
def test_log_density_is_scipy_with_per_leaf_scales(family, df):
    params = small_tree()
    prior = sgmc.nn.prior(family, scale=C, bias_scale=0.5, df=df)
    want = sum(scipy_logpdf(family, params[k1][k2] if k2 else params[k1], HAND[name], df)
               for name, (k1, k2) in {"dense.kernel": ("dense", "kernel"),
                                      "dense.bias": ("dense", "bias"),
                                      "conv.weight": ("conv", "weight"),
                                      "scalar": ("scalar", None)}.items())
    got = prior(params)
    assert got.dtype == jnp.float32 and got.shape == ()
    np.testing.assert_allclose(float(got), want, rtol=2e-6)
    np.testing.assert_allclose(float(jax.jit(prior)(params)), want, rtol=2e-6)
    scales = prior.scales(params)
    assert scales["dense"]["kernel"] == pytest.approx(HAND["dense.kernel"])
    assert scales["conv"]["weight"] == pytest.approx(HAND["conv.weight"])
    assert scales["dense"]["bias"] == scales["scalar"] == 0.5


def test_equal_priors_are_equal_and_hash_alike():
    assert sgmc.nn.prior(overrides={"*.bias": 0.1}) == sgmc.nn.prior(overrides={"*.bias": 0.1})
    assert hash(sgmc.nn.prior("laplace", 1.0)) == hash(sgmc.nn.prior("laplace", 1))
    assert sgmc.nn.prior() != sgmc.nn.prior(scale=1.0)
    assert sgmc.nn.DEFAULT_SCALE == sgmc.nn.prior().scale


def check_table(prior, params, want: dict[str, tuple[tuple[int, ...], int | None]]) -> None:
    """Every leaf in the table with its shape and fan-in as ``want``, s = sqrt(c / fan_in)
    (weights) or bias_scale (fan-in None)."""
    rows = {r["name"]: r for r in prior.table(params)}
    assert set(rows) == set(want)
    for name, (shape, fan) in want.items():
        r = rows[name]
        assert r["shape"] == shape and r["fan_in"] == fan, (name, r)
        s = prior.bias_scale if fan is None else math.sqrt(prior.scale / fan)
        assert r["scale"] == pytest.approx(s) and r["family"] == prior.family
    text = prior.describe(params)
    assert all(name in text for name in want) and text.splitlines()[0].split() == [
        "name", "shape", "fan_in", "scale", "family"]
    leaves = jax.tree.leaves(prior.scales(params))
    assert leaves == [r["scale"] for r in prior.table(params)]


def test_fan_in_of_flax_linen_dense_and_conv():
    nn = pytest.importorskip("flax.linen")

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.relu(nn.Conv(4, (3, 3))(x)).reshape(x.shape[0], -1)
            return nn.Dense(3)(x)

    params = Net().init(jax.random.key(0), jnp.ones((1, 5, 5, 2)))
    prior = sgmc.nn.prior(scale=C)
    check_table(prior, params, {
        "params.Conv_0.kernel": ((3, 3, 2, 4), 3 * 3 * 2), "params.Conv_0.bias": ((4,), None),
        "params.Dense_0.kernel": ((100, 3), 100), "params.Dense_0.bias": ((3,), None)})
    assert np.isfinite(float(prior(params)))


def test_fan_in_of_flax_nnx_state():
    nnx = pytest.importorskip("flax.nnx")

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.conv = nnx.Conv(2, 4, (3, 3), rngs=rngs)
            self.hidden = nnx.Linear(7, 6, rngs=rngs)
            self.out = nnx.Linear(6, 2, rngs=rngs)

    _, state = nnx.split(Net(nnx.Rngs(0)))
    prior = sgmc.nn.prior(scale=C, bias_scale=0.3)
    check_table(prior, state, {
        "conv.kernel": ((3, 3, 2, 4), 18), "conv.bias": ((4,), None),
        "hidden.kernel": ((7, 6), 7), "hidden.bias": ((6,), None),
        "out.kernel": ((6, 2), 6), "out.bias": ((2,), None)})
    assert np.isfinite(float(jax.jit(prior)(state)))


def test_fan_in_of_equinox_mlp_and_conv():
    eqx = pytest.importorskip("equinox")
    model = eqx.nn.MLP(3, 2, 5, 2, key=jax.random.key(0))
    params, _ = eqx.partition(model, eqx.is_inexact_array)
    prior = sgmc.nn.prior(scale=C)
    # Equinox's weight is (out, in): fan_in = in
    check_table(prior, params, {
        "layers[0].weight": ((5, 3), 3), "layers[0].bias": ((5,), None),
        "layers[1].weight": ((5, 5), 5), "layers[1].bias": ((5,), None),
        "layers[2].weight": ((2, 5), 5), "layers[2].bias": ((2,), None)})
    # a convolution: weight (out, in, kh, kw), bias (out, 1, 1) is still a bias
    conv = eqx.nn.Conv2d(2, 4, 3, key=jax.random.key(1))
    check_table(prior, eqx.partition(conv, eqx.is_inexact_array)[0],
                {"weight": ((4, 2, 3, 3), 18), "bias": ((4, 1, 1), None)})


def test_fan_in_of_sgmc_models_mlp():
    X, y = np.zeros((4, 3)), np.array([0, 1, 2, 0])
    params = sgmc.models.mlp(X, y, hidden=(5,)).loglik.init(jax.random.key(0))
    prior = sgmc.nn.prior(scale=C)
    check_table(prior, params, {"layers[0].w": ((3, 5), 3), "layers[0].b": ((5,), None),
                                "layers[1].w": ((5, 3), 5), "layers[1].b": ((3,), None)})


def test_overrides_first_match_wins_and_callable_fan_in():
    params = small_tree()
    prior = sgmc.nn.prior(scale=C, overrides={"dense.*": 0.2, "*.kernel": 9.0,
                                              "conv.weight": 0.4})
    rows = {r["name"]: r for r in prior.table(params)}
    assert rows["dense.kernel"]["scale"] == rows["dense.bias"]["scale"] == 0.2
    assert rows["conv.weight"]["scale"] == 0.4 and rows["conv.weight"]["fan_in"] is None
    # a callable fan-in decides every weight; None falls back to the automatic rule
    prior = sgmc.nn.prior(scale=C, fan_in=lambda name, shape: 6 if name == "conv.weight"
                          else None)
    rows = {r["name"]: r for r in prior.table(params)}
    assert rows["conv.weight"]["fan_in"] == 6 and rows["dense.kernel"]["fan_in"] == 4
    # an unknown weight name is fine once a callable or an override names its scale
    params = {"embed": {"embedding": jnp.ones((10, 4))}}
    with pytest.raises(ValueError, match=r"embed\.embedding"):
        prior.table(params)
    by_fn = sgmc.nn.prior(fan_in=lambda name, shape: shape[1])
    assert by_fn.table(params)[0]["fan_in"] == 4
    assert sgmc.nn.prior(overrides={"embed.*": 0.5}).scales(params)["embed"]["embedding"] == 0.5


@pytest.mark.parametrize("df", [2.5, 5.0, 30.0])
def test_laplace_and_student_t_have_the_gaussian_variance(df):
    s = 0.37
    b = s / math.sqrt(2)
    assert stats.laplace(0, b).var() == pytest.approx(s ** 2)
    sigma = sgmc.nn.student_t_scale(s, df)
    assert stats.t(df, 0, sigma).var() == pytest.approx(s ** 2)
    assert sgmc.nn.student_t_scale(s, 1.5) == s           # ν ≤ 2: infinite variance, σ = s
    # and the library's densities are those distributions
    x = np.linspace(-2, 2, 9).astype(np.float32)
    for family, dist in (("laplace", stats.laplace(0, b)), ("student_t", stats.t(df, 0, sigma))):
        got = sgmc.nn.prior(family, bias_scale=s, df=df)({"b": jnp.asarray(x)})
        np.testing.assert_allclose(float(got), dist.logpdf(x).sum(), rtol=2e-6)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"family": "cauchy"}, "family must be one of"),
    ({"scale": 0.0}, "scale must lie in"),
    ({"scale": -1.0}, "scale must lie in"),
    ({"bias_scale": 0.0}, "bias_scale must lie in"),
    ({"df": 0.0}, "df must lie in"),
    ({"fan_in": "fan_out"}, "fan_in must be 'auto' or a callable"),
    ({"overrides": ["*.bias"]}, "overrides must be a dict"),
    ({"overrides": {"*.bias": 0.0}}, r"overrides\['\*.bias'\] must lie in"),
    ({"overrides": {3: 1.0}}, "overrides: each key must be a glob pattern"),
])
def test_bad_arguments_are_refused_before_anything_runs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        sgmc.nn.prior(**kwargs)


def test_leaf_errors_name_the_leaf():
    params = {"embed": {"embedding": jnp.ones((10, 4))}, "dense": {"kernel": jnp.ones((4, 2))}}
    with pytest.raises(ValueError, match=r"'embed.embedding' of shape \(10, 4\).*fan_in=lambda"):
        sgmc.nn.prior()(params)
    with pytest.raises(ValueError, match=r"\['dens\.\*'\] match no parameter.*embed.embedding"):
        sgmc.nn.prior(overrides={"embed.*": 1.0, "dens.*": 1.0}).scales(params)
    with pytest.raises(ValueError, match=r"fan_in\('dense.kernel', \(4, 2\)\) must return a "
                                         "positive int"):
        sgmc.nn.prior(fan_in=lambda name, shape: 0, overrides={"embed.*": 1.0})(params)


@pytest.fixture
def quick_compile():
    """XLA's optimisations off: the test checks that the prior traces, compiles and runs
    inside a sampler, not its speed (compiling without them takes about half as long)."""
    before = jax.config.values["jax_disable_most_optimizations"]
    jax.config.update("jax_disable_most_optimizations", True)
    yield
    jax.config.update("jax_disable_most_optimizations", before)


def test_prior_samples_a_flax_model_with_sghmc(quick_compile):
    nn = pytest.importorskip("flax.linen")

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(2)(nn.relu(nn.Dense(8)(x)))

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 2)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int32)
    model = Net()
    init = model.init(jax.random.key(0), jnp.zeros(2))

    def loglik(params, datum):
        return jax.nn.log_softmax(model.apply(params, datum["x"]))[datum["y"]]

    prior = sgmc.nn.prior(scale=2.0)
    post = sgmc.Posterior(loglik, prior, {"x": X, "y": y})
    grad = jax.grad(prior)(init)
    # Flax numbers the layers as built: Dense_0 is the output layer (8 -> 2), s² = 2/8
    for layer, fan in (("Dense_0", 8), ("Dense_1", 2)):
        w = init["params"][layer]["kernel"]
        np.testing.assert_allclose(grad["params"][layer]["kernel"], -w * fan / 2.0, rtol=1e-6)
    res = sgmc.sample(post, sgmc.sghmc(1e-3, friction=10.0, batch_size=50), init,
                      num_steps=300, num_chains=2, burn_in=100, diagnose=False)
    leaves = jax.tree.leaves(res.samples)
    assert all(np.all(np.isfinite(a)) for a in leaves)
    assert jax.tree.structure(res.samples) == jax.tree.structure(init)
    assert not np.allclose(leaves[1][:, -1], leaves[1][:, 0])
