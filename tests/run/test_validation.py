"""Every bad argument fails before compilation with a message naming it and its range."""

import jax.numpy as jnp
import numpy as np
import pytest

import sgmc


@pytest.fixture(scope="module")
def post():
    X, y, _ = sgmc.models.synthetic_linear_data(100, 3, seed=0)
    return sgmc.models.linear_regression(X, y)


@pytest.mark.parametrize("make, exc, match", [
    (lambda: sgmc.sgld(0.0), ValueError, r"step_size must lie in \(0.0, inf\]"),
    (lambda: sgmc.sgld(-1e-3), ValueError, "step_size"),
    (lambda: sgmc.sgld(float("nan")), TypeError, "step_size must be a finite real"),
    (lambda: sgmc.sgld("0.1"), TypeError, "step_size"),
    (lambda: sgmc.sgld(1e-3, batch_size=0), ValueError, r"batch_size must be an integer in \[1"),
    (lambda: sgmc.sgld(1e-3, batch_size=2.5), TypeError, "batch_size must be an integer"),
    (lambda: sgmc.sgld(1e-3, temperature=-1.0), ValueError, "temperature must lie in"),
    (lambda: sgmc.sgld(1e-3, estimator="svrg"), TypeError, "estimator must be an sgmc"),
    (lambda: sgmc.sghmc(0.1, friction=10.0), ValueError,
     r"friction \* step_size must be < 1 for the Euler integrator"),
    (lambda: sgmc.sghmc(1e-3, friction=0.0), ValueError, "friction must lie in"),
    (lambda: sgmc.sghmc(1e-3, integrator="leapfrog"), ValueError, "integrator must be one of"),
    (lambda: sgmc.sghmc(0.1, friction=10.0, integrator="explicit"), ValueError,
     r"friction \* step_size must be < 1 for the explicit Euler integrator"),
    (lambda: sgmc.sghmc(1e-3, init_momentum="gaussian"), ValueError,
     "init_momentum must be one of"),
    (lambda: sgmc.sghmc(sgmc.schedules.polynomial_decay(0.2), friction=10.0), ValueError,
     "friction \\* step_size"),
    (lambda: sgmc.sghmc(sgmc.schedules.from_function(lambda t: 0.1)), ValueError,
     "no known maximum"),
    (lambda: sgmc.sgld(lambda t: 0.1), TypeError, "from_function"),
    (lambda: sgmc.psgld(1e-3, alpha=1.0), ValueError, "alpha must lie in"),
    (lambda: sgmc.psgld(1e-3, eps=0.0), ValueError, "eps must lie in"),
    (lambda: sgmc.uniform(sampling="stratified"), ValueError, "sampling must be one of"),
])
def test_bad_sampler_arguments(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


@pytest.mark.parametrize("integrator", ["euler", "explicit", "splitting"])
def test_init_momentum_zero_starts_at_rest(post, integrator):
    """init_momentum="zero" is the SVRG-HMC paper's p₀ = 0; "random" draws N(0, τ I)."""
    import jax
    for how, expect_zero in (("zero", True), ("random", False)):
        s = sgmc.sghmc(1e-3, batch_size=10, temperature=2.0, integrator=integrator,
                       init_momentum=how)
        st = s.init(post, jnp.zeros(3), jax.random.key(0))
        assert bool(jnp.all(st.dyn.momentum == 0.0)) == expect_zero


def test_splitting_allows_large_friction_times_step():
    assert sgmc.sghmc(0.1, friction=20.0, integrator="splitting").name == "sghmc-splitting"


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(num_steps=0), ValueError, r"num_steps must be an integer in \[1, inf\]"),
    (dict(num_steps=10, burn_in=10), ValueError, r"burn_in must be an integer in \[0, 9\]"),
    (dict(num_steps=10, burn_in=-1), ValueError, "burn_in"),
    (dict(num_steps=10, burn_in=4, thin=7), ValueError, r"thin must be an integer in \[1, 6\]"),
    (dict(num_steps=10, thin=0), ValueError, "thin"),
    (dict(num_steps=10, num_chains=0), ValueError, "num_chains"),
    (dict(num_steps=10, seed=-1), ValueError, "seed"),
    (dict(num_steps=10.0), TypeError, "num_steps must be an integer"),
    (dict(num_steps=10, prng="mt19937"), ValueError, "prng must be one of"),
    (dict(num_steps=10, draws_per_block=0), ValueError, "draws_per_block"),
])
def test_bad_run_arguments(post, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        sgmc.sample(post, sgmc.sgld(1e-4, batch_size=10), jnp.zeros(3), **kwargs)


@pytest.mark.parametrize("batch_size", [101, 1000])
def test_batch_size_larger_than_data(post, batch_size):
    with pytest.raises(ValueError, match=r"batch_size must be an integer in \[1, 100\]"):
        sgmc.sample(post, sgmc.sgld(1e-4, batch_size=batch_size), jnp.zeros(3), 10)


@pytest.mark.parametrize("init, exc, match", [
    (jnp.zeros(4), ValueError, "init is not a point the model accepts"),
    (jnp.zeros((3, 3)), ValueError, "init does not match the model"),
    (jnp.array([0.0, np.nan, 0.0]), ValueError, "init contains non-finite"),
    ({"a": jnp.zeros(3)}, ValueError, "init"),
    (None, ValueError, "init must be an array"),
])
def test_init_not_matching_the_model(post, init, exc, match):
    with pytest.raises(exc, match=match):
        sgmc.sample(post, sgmc.sgld(1e-4, batch_size=10), init, 10)


def test_init_list_of_numbers_is_one_vector(post):
    res = sgmc.sample(post, sgmc.sgld(1e-4, batch_size=10), [0.0, 0.0, 0.0], 5)
    assert res.samples.shape == (1, 5, 3)


def test_wrong_problem_or_sampler_type(post):
    with pytest.raises(TypeError, match="problem must be"):
        sgmc.sample(object(), sgmc.sgld(1e-4), jnp.zeros(3), 10)
    with pytest.raises(TypeError, match="sampler must be"):
        sgmc.sample(post, "sgld", jnp.zeros(3), 10)


def test_batch_size_on_a_data_free_objective():
    obj = sgmc.Objective(lambda x: jnp.sum(x**2))
    with pytest.raises(ValueError, match="batch_size must be None"):
        sgmc.sample(obj, sgmc.sgld(1e-2, batch_size=4), jnp.zeros(2), 10)
    res = sgmc.sample(obj, sgmc.sgld(1e-2), jnp.zeros(2), 10)
    assert res.info["grad_evals"][0, -1] == 0


def test_psgld_refuses_ewsg_whose_weights_need_a_kick():
    with pytest.raises(ValueError, match="kick"):
        sgmc.psgld(1e-3, batch_size=2, estimator=sgmc.ewsg())


def test_psgld_preconditions_an_objective_by_its_mean_gradient():
    # F(x) = mean_i (x − d_i)²/2 with d = 0: ∇F(1) = 1 is already the per-datum mean, so
    # after one τ = 0 step from V = 0, G = 1/(λ + √(1 − α)) and x₁ = 1 − h G (dividing by
    # N = 10 again would give G ≈ 1/(λ + √(1 − α)/10), ten times larger).
    obj = sgmc.Objective(lambda x, d: 0.5 * jnp.sum((x - d) ** 2), data=jnp.zeros((10, 1)))
    h, alpha, eps = 1e-3, 0.99, 1e-5
    res = sgmc.sample(obj, sgmc.psgld(h, temperature=0.0, alpha=alpha, eps=eps),
                      jnp.ones(1), num_steps=1, init_per_chain=False)
    want = 1.0 - h / (eps + (1 - alpha) ** 0.5)
    assert abs(float(res.samples[0, 0, 0]) - want) < 1e-5
