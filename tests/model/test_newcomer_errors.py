"""A newcomer's first hour (issue 23): errors that name what to change, raised before anything
is compiled, and dispersed starting points (``init_spread``)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_checkpoint import interrupt_after

import sgmc
from sgmc.io import sinks as _sinks
from sgmc.run import api, preflight

D = 30  # parameters of the regression model


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    return {"x": rng.normal(size=(40, D)).astype(np.float32),
            "y": rng.normal(size=40).astype(np.float32)}


def _prior(p):
    return -0.5 * jnp.sum(p ** 2)


def _loglik(p, d):
    return -0.5 * (d["y"] - d["x"] @ p) ** 2


@pytest.fixture
def nothing_compiled(monkeypatch):
    """Fail the test if ``sample`` gets as far as its preflight checks (the first compiled
    function) or the start of the run: the errors here come before."""
    def refuse(*args, **kwargs):
        raise AssertionError("sample went past its argument checks")

    monkeypatch.setattr(preflight, "preflight", refuse)
    monkeypatch.setattr(api, "start", refuse)


def _sample(problem, init, **kwargs):
    return sgmc.sample(problem, sgmc.sgld(1e-4, batch_size=10), init, 5, **kwargs)


# -- 1. a loglik (logprior, f) that does not return a scalar --------------------------------

def test_vector_loglik_names_loglik_and_batched(data, nothing_compiled):
    post = sgmc.Posterior(lambda p, d: -0.5 * (d["y"] - d["x"] * p) ** 2, _prior, data)
    with pytest.raises(ValueError, match=(
            r"^loglik returned shape \(30,\) at init \(shape \(30,\)\): loglik\(params, "
            r"datum\) must return a scalar log-likelihood of ONE datum \(one row of the data "
            r"along its leading axis\).*jnp\.sum.*batched=True")) as info:
        _sample(post, jnp.zeros(D))
    assert isinstance(info.value, sgmc.model.checks.ModelShapeError)
    with pytest.raises(ValueError, match=r"^loglik returned shape \(30,\)"):
        _sample(post, jnp.zeros(D), num_chains=4)


def test_vector_logprior_names_logprior(data, nothing_compiled):
    post = sgmc.Posterior(_loglik, lambda p: -0.5 * p ** 2, data)
    with pytest.raises(ValueError, match=r"^logprior returned shape \(30,\) at init \(shape "
                                         r"\(30,\)\): logprior\(params\) must return a scalar"):
        _sample(post, jnp.zeros(D))


def test_vector_objective_names_f(data, nothing_compiled):
    obj = sgmc.Objective(lambda x, d: (d["x"] - x) ** 2, data)
    with pytest.raises(ValueError, match=r"^f returned shape \(30,\) at init.*f\(x, datum\) "
                                         r"must return a scalar: the loss of ONE datum"):
        _sample(obj, jnp.zeros(D))
    free = sgmc.Objective(lambda x: x ** 2)
    with pytest.raises(ValueError, match=r"^init does not match the model: f returned shape "
                                         r"\(2,\) at init \(shape \(2,\)\) and a scalar at "
                                         r"init\[0\].*Either f\(x\) must return a scalar.* or "
                                         r"init has leading axis 2 but num_chains=1: pass one "
                                         r"point \(shape \(\)\)"):
        sgmc.sample(free, sgmc.sgld(1e-4), jnp.zeros(2), 5)


def test_integer_logprior_names_logprior(data, nothing_compiled):
    post = sgmc.Posterior(_loglik, lambda p: 0, data)
    with pytest.raises(TypeError, match=r"^logprior returned dtype int32 at init: it must "
                                        r"return a floating-point scalar \(e\.g\. 0\.0, not 0\)"):
        _sample(post, jnp.zeros(D))


def test_batched_loglik_of_the_wrong_shape_blames_loglik(data, nothing_compiled):
    post = sgmc.Posterior(lambda p, b: jnp.sum(_loglik(p, b)), _prior, data, batched=True)
    with pytest.raises(ValueError, match=r"^with batched=True, loglik\(params, batch\) must "
                                         r"return one value per row, shape \(1,\)"):
        _sample(post, jnp.zeros(D))


def test_extra_axis_on_a_point_is_still_named(nothing_compiled):
    """init with one axis too many for a model that evaluates it (one point per chain, with
    num_chains left at 1) is init's problem, named as before."""
    X, y, _ = sgmc.models.synthetic_linear_data(100, 3, seed=0)
    post = sgmc.models.linear_regression(X, y)
    with pytest.raises(ValueError, match=r"^init does not match the model: loglik returned "
                                         r"shape \(3,\).*or init has leading axis 3 but "
                                         r"num_chains=1"):
        _sample(post, jnp.zeros((3, 3)))
    with pytest.raises(ValueError, match=r"returned shape \(3,\) at init \(shape \(3, 3\)\).*a "
                                         r"scalar at init\[0\].*if init holds 3 points"):
        _sample(post, jnp.zeros((3, 3)), init_per_chain=False)


# -- 2. init whose leading axis is not num_chains ------------------------------------------

def test_init_leading_axis_differs_from_num_chains(data, nothing_compiled):
    post = sgmc.Posterior(_loglik, _prior, data)
    with pytest.raises(ValueError, match=(
            r"init has leading axis 3 but num_chains=4; pass one point \(shape \(30,\)\) for "
            r"all chains, or one per chain stacked on a leading axis of size num_chains=4")):
        _sample(post, jnp.zeros((3, D)), num_chains=4)


def test_pytree_init_leading_axis_differs_from_num_chains(data, nothing_compiled):
    post = sgmc.Posterior(lambda p, d: _loglik(p["w"], d) + 0 * p["b"],
                          lambda p: _prior(p["w"]) - jnp.sum(p["b"] ** 2), data)
    init = {"w": jnp.zeros((3, D)), "b": jnp.zeros(3)}
    with pytest.raises(ValueError, match=r"init has leading axis 3 but num_chains=2; pass one "
                                         r"point \(leaves shaped \(\), \(30,\)\)"):
        _sample(post, init, num_chains=2)


def test_a_matrix_point_is_not_a_leading_axis(data):
    """A single position may be 2-d (a weight matrix): it is one point, not 3 chains'."""
    post = sgmc.Posterior(lambda w, d: -0.5 * jnp.sum((d["y"] - w @ d["x"]) ** 2),
                          lambda w: -0.5 * jnp.sum(w ** 2), data)
    res = sgmc.sample(post, sgmc.sgld(1e-6, batch_size=10), jnp.zeros((3, D)), 2,
                      num_chains=4)
    assert res.samples.shape == (4, 2, 3, D)


# -- 3. NumPy or Python control flow inside the model ---------------------------------------

def _np_exp(p, d):
    return -np.exp(d["x"] @ p)


def _np_dot(p, d):
    return -0.5 * (d["y"] - np.dot(d["x"], p)) ** 2


def _float(p, d):
    return -0.5 * (d["y"] - float(d["x"] @ p)) ** 2


def _python_if(p, d):
    r = d["y"] - d["x"] @ p
    return -r if r > 0 else r


def _int_index(p, d):
    return -p[int(p[0])] ** 2 + _loglik(p, d)


@pytest.mark.parametrize("loglik", [_np_exp, _np_dot, _float, _python_if, _int_index])
def test_numpy_in_loglik_says_use_jax_numpy(data, loglik, nothing_compiled):
    post = sgmc.Posterior(loglik, _prior, data)
    with pytest.raises(TypeError, match=r"^loglik cannot be traced by JAX .*must use jax\.numpy "
                                        r"\(import jax\.numpy as jnp.*instead of NumPy.*Python "
                                        r"if/while") as info:
        _sample(post, jnp.zeros(D))
    assert isinstance(info.value.__cause__, (
        jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError,
        jax.errors.TracerBoolConversionError, jax.errors.TracerIntegerConversionError))
    # Also with a stacked init (the reading per chain is tried after the error): the same.
    with pytest.raises(TypeError, match=r"^loglik cannot be traced by JAX"):
        _sample(post, jnp.zeros((4, D)), num_chains=4)


def test_numpy_in_logprior_or_f_names_it(data, nothing_compiled):
    post = sgmc.Posterior(_loglik, lambda p: -np.sum(np.asarray(p) ** 2), data)
    with pytest.raises(TypeError, match=r"^logprior cannot be traced by JAX"):
        _sample(post, jnp.zeros(D))
    obj = sgmc.Objective(lambda x: float(jnp.sum(x ** 2)))
    with pytest.raises(TypeError, match=r"^f cannot be traced by JAX"):
        sgmc.sample(obj, sgmc.sgld(1e-4), jnp.zeros(2), 5)
    # minimize probes init's layout (a point? a stack?) first: the same message, not "init
    # is neither a point nor a stack".
    with pytest.raises(TypeError, match=r"^f cannot be traced by JAX"):
        sgmc.minimize(obj, sgmc.gd(1e-3), jnp.zeros(2), 5)


# -- 4. dispersed starting points -------------------------------------------------------------

@pytest.fixture(scope="module")
def small():
    X, y, _ = sgmc.models.synthetic_linear_data(50, 3, seed=0)
    return sgmc.models.linear_regression(X, y)


TINY = sgmc.sgld(1e-12, batch_size=10)  # the first draw is the start to within ~1e-6


def _starts(problem, init, **kwargs):
    return np.asarray(sgmc.sample(problem, TINY, init, 1, **kwargs).samples[:, 0])


def test_init_spread_disperses_the_starts(small):
    init = jnp.array([1.0, -2.0, 0.5])
    starts = _starts(small, init, num_chains=64, init_spread=2.0, seed=3)
    xi = (starts - np.asarray(init)) / 2.0
    assert len({tuple(s) for s in np.round(starts, 4)}) == 64  # every chain its own start
    assert abs(xi.mean()) < 0.25  # 192 standard normals: sd of the mean 0.07
    assert 0.85 < xi.std() < 1.15  # sd of the sd ≈ 0.05
    res = sgmc.sample(small, TINY, init, 1, num_chains=2, init_spread=2.0)
    assert res.meta["init_spread"] == 2.0  # recorded with the run
    # The same seed, the same starts; another seed, others.
    np.testing.assert_array_equal(
        starts, _starts(small, init, num_chains=64, init_spread=2.0, seed=3))
    other = _starts(small, init, num_chains=64, init_spread=2.0, seed=4)
    assert np.abs(other - starts).min() > 0
    # Chain c's start depends on the seed and c alone: 8 chains start as the first 8 of 64.
    np.testing.assert_allclose(
        _starts(small, init, num_chains=8, init_spread=2.0, seed=3), starts[:8], atol=1e-4)
    # Without it (the default), every chain starts at init.
    np.testing.assert_allclose(_starts(small, init, num_chains=4),
                               np.broadcast_to(init, (4, 3)), atol=1e-4)


def test_init_spread_is_on_the_unconstrained_scale(data):
    pytest.importorskip("numpyro")
    post = sgmc.Posterior(lambda p, d: -0.5 * (d["y"] / p["s"]) ** 2 - jnp.log(p["s"]),
                          lambda p: -p["s"], data, constraints={"s": "positive"})
    res = sgmc.sample(post, TINY, {"s": jnp.ones(())}, 1, num_chains=256, init_spread=3.0)
    s = np.asarray(res.samples["s"][:, 0])
    assert (s > 0).all()  # exp(log 1 + 3 ξ) stays in the support
    assert 2.6 < np.log(s).std() < 3.4 and s.max() > 100


def test_init_spread_needs_one_point(small, nothing_compiled):
    with pytest.raises(ValueError, match=r"init_spread=0.5 disperses one starting point over "
                                         r"the chains, and init_per_chain=True"):
        _sample(small, jnp.zeros((4, 3)), num_chains=4, init_per_chain=True, init_spread=0.5)
    with pytest.raises(ValueError, match=r"init_spread=0.5 .*init holds one start per chain "
                                         r"\(stacked on its leading axis of num_chains=4\)"):
        _sample(small, jnp.zeros((4, 3)), num_chains=4, init_spread=0.5)


@pytest.mark.parametrize("value, exc, match", [
    (-1.0, ValueError, r"init_spread must lie in \[0.0, inf\], got -1.0"),
    (float("nan"), TypeError, "init_spread must be a finite real number"),
    (float("inf"), TypeError, "init_spread must be a finite real number"),
    ("1", TypeError, "init_spread must be a finite real number"),
])
def test_init_spread_is_validated(small, value, exc, match, nothing_compiled):
    with pytest.raises(exc, match=match):
        _sample(small, jnp.zeros(3), num_chains=4, init_spread=value)


def test_a_run_with_init_spread_resumes_bitwise(small, tmp_path, monkeypatch):
    run = dict(num_steps=40, num_chains=3, seed=2, init_spread=1.5, draws_per_block=10)
    smp = sgmc.sgld(1e-3, batch_size=10)
    full = sgmc.sample(small, smp, jnp.zeros(3), **run)
    monkeypatch.setattr(_sinks.MemorySink, "append",
                        interrupt_after(2, _sinks.MemorySink.append))
    path = tmp_path / "run.ckpt"
    with pytest.raises(sgmc.Interrupted):
        sgmc.sample(small, smp, jnp.zeros(3), **run, checkpoint=path, checkpoint_every=10)
    monkeypatch.undo()
    resumed = sgmc.resume(path, small, smp)
    np.testing.assert_array_equal(np.asarray(resumed.samples), np.asarray(full.samples))
