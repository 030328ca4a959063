"""Corrupted input and ambiguous arguments (issue 18, items 7, 8, 9, 10, 14): every one is
refused before anything is compiled (or, for streamed data, as the rows are read) with an
error that names the argument and the real cause — never a DivergenceError that blames the
step size, a JAX-internal message or silently changed numbers.
"""

import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import sgmc
from sgmc.run import api, preflight

DATA = np.linspace(-1.0, 1.0, 40, dtype=np.float32).reshape(20, 2)


def _logprior(theta):
    return -0.5 * jnp.sum(theta ** 2)


def _loglik(theta, x):
    return -0.5 * jnp.sum((x - theta) ** 2)


def _posterior(loglik=_loglik, logprior=_logprior, data=DATA):
    return sgmc.Posterior(loglik, logprior, data)


def _sgld(step_size=1e-3):
    return sgmc.sgld(step_size, batch_size=5)


class Started(Exception):
    """Raised instead of compiling: validation let the run through."""


@pytest.fixture
def no_run(monkeypatch):
    """``sample``/``minimize`` stop where the run would be compiled."""
    def start(*args, **kwargs):
        raise Started

    monkeypatch.setattr(api, "start", start)
    monkeypatch.setattr(sgmc.run.optimize, "start", start)


# -- item 7: data changed by the cast to the device's dtype ---------------------------------

def test_int64_beyond_int32_is_refused_not_wrapped():
    data = {"x": DATA, "count": np.array([1] * 19 + [3_000_000_000], np.int64)}
    with pytest.raises(ValueError, match=r"data\['count'\].*int32.*2147483647.*row 19"):
        _posterior(data=data)
    fine = _posterior(data={"x": DATA, "count": np.arange(20, dtype=np.int64)})
    assert fine.data["count"].dtype == jnp.int32


def test_float64_that_overflows_float32_is_refused():
    x = DATA.astype(np.float64)
    x[3, 1] = 1e39
    with pytest.raises(ValueError, match=r"data\['x'\].*3\.4028235e\+38.*row 3"):
        _posterior(data={"x": x})


@pytest.mark.parametrize("values, dtype", [(DATA + 1j, "complex"), (DATA.astype(str), "<U")])
def test_complex_and_string_data_name_the_leaf(values, dtype):
    with pytest.raises(TypeError, match=rf"data\['x'\].*{dtype}"):
        _posterior(data={"x": values})


def test_streamed_integers_beyond_int32_are_refused():
    source = {"x": DATA, "id": np.arange(20, dtype=np.int64) * 400_000_000}
    with pytest.raises(ValueError, match=r"stream's source\['id'\].*int32"):
        _posterior(data=sgmc.Stream(source, buffer_rows=20))


# -- item 8: errors that name the real cause ------------------------------------------------

def test_nan_loglik_at_init_names_loglik_not_the_step_size():
    def loglik(theta, x):
        return jnp.where(x[0] > 0.5, jnp.nan, _loglik(theta, x))

    with pytest.raises(ValueError, match=r"energy is NaN at init \(chain 0\) on the first 20 "
                                         r"rows.*loglik.*row 15"):
        sgmc.sample(_posterior(loglik), _sgld(), jnp.zeros(2), num_steps=50)


def test_infinite_logprior_at_one_chains_init_names_logprior_and_the_chain():
    def logprior(theta):
        return jnp.sum(jnp.log(theta))  # −inf where a coordinate is 0

    init = jnp.array([[1.0, 1.0], [2.0, 1.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match=r"energy is inf at init \(chain 2\).*logprior"):
        sgmc.sample(_posterior(logprior=logprior), _sgld(), init, num_steps=50, num_chains=3,
                    init_per_chain=True)


def test_a_non_finite_gradient_with_a_finite_energy_is_named():
    def loglik(theta, x):
        return -jnp.sum(jnp.sqrt(jnp.abs(theta)))  # finite at 0, its gradient is not

    with pytest.raises(ValueError, match=r"gradient is (NaN|inf) at init.*gradient of loglik"):
        sgmc.sample(_posterior(loglik), _sgld(), jnp.zeros(2), num_steps=50)


def test_an_objective_nan_at_init_names_f():
    obj = sgmc.Objective(lambda x: jnp.sum(jnp.log(x)))
    with pytest.raises(ValueError, match=r"energy is NaN at init \(chain 0\): f\(init\)"):
        sgmc.sample(obj, sgmc.sgld(1e-3), -jnp.ones(2), num_steps=50)


@pytest.mark.parametrize("fn, value, step", [
    (lambda t: jnp.where(t < 50, 1e-3, jnp.nan), "nan", 50),
    (lambda t: jnp.where(t < 101, 1e-3, -1e-3), "-0.001", 101),
])
def test_a_bad_step_size_schedule_names_the_schedule_and_the_step(fn, value, step):
    schedule = sgmc.schedules.from_function(fn)
    with pytest.raises(ValueError, match=rf"schedule step_size is {value}.* at step {step}\b"):
        sgmc.sample(_posterior(), _sgld(schedule), jnp.zeros(2), num_steps=200)


def test_replica_schedules_are_checked_by_name():
    temps = [1.0, sgmc.schedules.from_function(lambda t: jnp.where(t < 30, 2.0, -1.0))]
    rx = sgmc.replica_exchange(_sgld(), temps)
    with pytest.raises(ValueError, match=r"schedule temperatures\[1\] is -1 at step 30"):
        sgmc.sample(_posterior(), rx, jnp.zeros(2), num_steps=100, init_per_chain=False)
    correction = sgmc.schedules.from_function(lambda t: jnp.where(t < 10, 1.0, 0.0))
    rx = sgmc.replica_exchange(_sgld(), [1.0, 2.0], correction=correction)
    with pytest.raises(ValueError, match=r"schedule rule\.correction is 0 at step 10.*> 0"):
        sgmc.sample(_posterior(), rx, jnp.zeros(2), num_steps=100, init_per_chain=False)


def test_a_long_run_checks_its_schedule_at_strided_steps_and_the_last(no_run):
    steps = preflight.SCHEDULE_POINTS * 3 + 1
    last = sgmc.schedules.from_function(lambda t: jnp.where(t == steps - 1, -1.0, 1e-3))
    with pytest.raises(ValueError, match=rf"at step {steps - 1}.*evenly spaced"):
        sgmc.sample(_posterior(), _sgld(last), jnp.zeros(2), num_steps=steps)


def _stream_with_nan_row(buffer_rows):
    """A stream whose row ``bad`` is NaN: in block 2's buffer, not in blocks 0 and 1's."""
    x = np.random.default_rng(0).standard_normal((2_000, 2)).astype(np.float32)
    stream = sgmc.Stream(x, buffer_rows=buffer_rows, seed=0)
    before = set(stream.rows(0).tolist()) | set(stream.rows(1).tolist())
    bad = next(i for i in stream.rows(2) if i not in before)
    x[bad] = np.nan
    return sgmc.Posterior(_loglik, _logprior, stream), int(bad)


def test_nan_rows_of_a_streamed_buffer_raise_naming_the_row():
    post, bad = _stream_with_nan_row(100)
    smp = sgmc.sgld(1e-4, batch_size=10, estimator=sgmc.uniform("permutation"))
    with pytest.raises(sgmc.DataError,
                       match=rf"stream's source \(block 2's buffer\).*row {bad};") as err:
        sgmc.sample(post, smp, jnp.zeros(2), num_steps=300, draws_per_block=10)
    # The draws of blocks 0 and 1 (10 steps each) are kept; the error is a ValueError too.
    assert isinstance(err.value, ValueError) and err.value.step == 20
    assert err.value.result.num_draws == 20


def test_nan_rows_read_by_a_full_pass_raise_the_streams_error():
    post, bad = _stream_with_nan_row(100)
    smp = sgmc.sgld(1e-4, batch_size=10, estimator=sgmc.svrg(50, "permutation"))
    with pytest.raises(sgmc.DataError, match=rf"read for a full pass\).*row {bad};") as err:
        sgmc.sample(post, smp, jnp.zeros(2), num_steps=100)
    assert err.value.result is not None


@pytest.mark.parametrize("dtype", [ml_dtypes.bfloat16, np.float16])
def test_half_precision_init_is_refused(dtype):
    with pytest.raises(TypeError, match=r"init has dtype (bfloat16|float16).*float32, float64"):
        sgmc.sample(_posterior(), _sgld(), np.zeros(2, dtype), num_steps=10)


def test_complex_init_is_refused():
    with pytest.raises(TypeError, match=r"init\['w'\] must be a real numeric array.*complex"):
        sgmc.sample(sgmc.Objective(lambda p: jnp.sum(p["w"] ** 2)), sgmc.sgld(1e-3),
                    {"w": np.zeros(2, np.complex64)}, num_steps=10)


def test_control_variate_centre_of_the_wrong_shape():
    smp = sgmc.sgld(1e-3, batch_size=5, estimator=sgmc.control_variate(jnp.zeros(3)))
    with pytest.raises(ValueError, match=r"control_variate\(centre=\.\.\.\).*expected \(2,\), "
                                         r"found \(3,\)"):
        sgmc.sample(_posterior(), smp, jnp.zeros(2), num_steps=10)


# -- item 9: one point or one per chain -----------------------------------------------------

def test_init_that_fits_both_readings_is_ambiguous():
    init = np.arange(8, dtype=np.float32).reshape(4, 2)
    with pytest.raises(ValueError, match=r"ambiguous.*init_per_chain=False.*init_per_chain="
                                         r"True"):
        sgmc.sample(_posterior(), _sgld(), init, num_steps=10, num_chains=4)
    tiny = _sgld(1e-9)
    per_chain = sgmc.sample(_posterior(), tiny, init, num_steps=10, num_chains=4,
                            init_per_chain=True)
    assert per_chain.samples.shape == (4, 10, 2)
    np.testing.assert_allclose(per_chain.samples[:, 0], init, atol=1e-3)
    one = sgmc.sample(_posterior(), tiny, init, num_steps=10, num_chains=4,
                      init_per_chain=False)
    assert one.samples.shape == (4, 10, 4, 2)
    # A model that accepts one reading only is read as before: θ·x needs θ of shape (2,).
    X, y, _ = sgmc.models.synthetic_linear_data(50, 2, seed=0)
    post = sgmc.models.linear_regression(X, y)
    res = sgmc.sample(post, tiny, jnp.zeros(2), num_steps=10, num_chains=2)
    assert res.samples.shape == (2, 10, 2)


def test_with_one_chain_an_init_that_fits_as_one_point_is_one_point():
    """zeros(1) for a model that broadcasts is a stack of one scalar point too: one chain
    reads it as the point (as every 1-d model started at zeros(1) expects)."""
    res = sgmc.sample(_posterior(), _sgld(), jnp.zeros(1), num_steps=10)
    assert res.samples.shape == (1, 10, 1)


def test_init_per_chain_needs_the_chains_on_the_leading_axis():
    with pytest.raises(ValueError, match=r"init_per_chain=True.*num_chains = 3.*\(2,\)"):
        sgmc.sample(_posterior(), _sgld(), jnp.zeros(2), num_steps=10, num_chains=3,
                    init_per_chain=True)


# -- item 10: replica step sizes get the Euler stability check -----------------------------

def test_replica_step_sizes_get_the_euler_stability_check():
    base = sgmc.sghmc(0.05, friction=10.0, batch_size=5)
    with pytest.raises(ValueError, match=r"friction \* step_sizes\[1\] \(replica 1\) must be "
                                         r"< 1.*10\.0 \* 0\.2"):
        sgmc.replica_exchange(base, [1.0, 2.0], step_sizes=[0.05, 0.2])
    split = sgmc.sghmc(0.05, friction=10.0, batch_size=5, integrator="splitting")
    sgmc.replica_exchange(split, [1.0, 2.0], step_sizes=[0.05, 0.2])  # no such bound


# -- item 14: the step counter's range ------------------------------------------------------

def test_num_steps_beyond_the_int32_step_counter_is_refused(no_run):
    with pytest.raises(ValueError, match=rf"num_steps must be at most {preflight.MAX_STEPS:,}"):
        sgmc.sample(_posterior(), _sgld(), jnp.zeros(2), num_steps=2**31)
    with pytest.raises(ValueError, match=r"num_steps must be at most"):
        sgmc.sample(_posterior(), _sgld(), jnp.zeros(2), num_steps=preflight.MAX_STEPS + 1)
    with pytest.raises(Started):  # the largest allowed run gets through validation
        sgmc.sample(_posterior(), _sgld(), jnp.zeros(2), num_steps=preflight.MAX_STEPS,
                    burn_in=preflight.MAX_STEPS - 1)
    with pytest.raises(ValueError, match=r"num_steps must be at most"):
        sgmc.minimize(lambda x: jnp.sum(x ** 2), sgmc.gd(0.1), np.ones(2), 2**31)
