"""sgmc.tune.rules: the stationary variance of each integrator on a quadratic energy, checked
against closed forms, scipy's Lyapunov solver, sgmc's own samplers and a direct simulation
of the update rules with gradient noise; the step-size rule and argument validation."""

import math

import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import solve_discrete_lyapunov

import sgmc
from sgmc.tune import rules as tuning
from sgmc.tune.rules import DYNAMICS, friction_rule, inflation, largest_step

SGHMC = ("euler", "explicit", "splitting")


def _friction(dynamics, friction):
    return None if dynamics == "langevin" else friction


# -- 1. closed forms and the Lyapunov solve ------------------------------------------------

@pytest.mark.parametrize("h, lam, b, tau", [(0.1, 1.0, 0.0, 1.0), (0.5, 2.0, 3.0, 0.7),
                                            (1e-4, 300.0, 1e3, 2.0), (1.9, 1.0, 0.5, 1.0),
                                            (1e-7, 1e-3, 0.0, 1.0)])
def test_langevin_closed_form(h, lam, b, tau):
    expected = (1.0 + h * b / (2.0 * tau)) / (1.0 - h * lam / 2.0)
    got = inflation("langevin", h, lam, temperature=tau, noise=b)
    assert got == pytest.approx(expected, rel=1e-10)


def _closed_form(dynamics, h, lam, tau, d, b):
    """The SGHMC closed forms quoted in inflation's docstring."""
    g = 1.0 + h * b / (2.0 * d * tau)
    if dynamics == "euler":
        return g * 2.0 * (2.0 - d * h) / (4.0 - 2.0 * d * h - h * h * lam)
    if dynamics == "explicit":
        return g * 2.0 * d * (2.0 - d * h + h * h * lam) / ((d - h * lam) * (4.0 - 2.0 * d * h
                                                                        + h * h * lam))
    x = d * h / 2.0
    return g * x / math.sinh(x)


@pytest.mark.parametrize("dynamics", SGHMC)
@pytest.mark.parametrize("h, lam, b, tau, d", [(0.1, 1.0, 0.0, 1.0, 2.0),
                                               (0.3, 2.0, 1.5, 0.7, 3.0),
                                               (1e-3, 50.0, 10.0, 1.0, 100.0),
                                               (1e-6, 1e-2, 0.0, 1.0, 0.2)])
def test_sghmc_closed_forms_and_scipy(dynamics, h, lam, b, tau, d):
    got = inflation(dynamics, h, lam, temperature=tau, friction=d, noise=b)
    assert got == pytest.approx(_closed_form(dynamics, h, lam, tau, d, b), rel=1e-10)
    # The same discrete Lyapunov equation through scipy (which loses digits as ρ(A) → 1).
    a, v = tuning._linear_map(dynamics, h, lam, d)
    n, v2 = tuning._increment(dynamics, h, np.array([lam]), d)
    np.testing.assert_allclose(a - np.eye(2), n[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(v, v2)
    q = tuning._noise_variance(dynamics, h, tau, d, b) * np.outer(v, v)
    sigma = solve_discrete_lyapunov(a, q)
    np.testing.assert_allclose(sigma, a @ sigma @ a.T + q, rtol=1e-8, atol=1e-12)
    rtol = 1e-9 if h * max(d, math.sqrt(lam)) > 1e-2 else 1e-4
    assert sigma[0, 0] * lam / tau == pytest.approx(got, rel=rtol)


def test_unstable_is_inf():
    assert inflation("langevin", 2.0, 1.0) == math.inf
    assert inflation("euler", 0.5, 1.0, friction=2.0) == math.inf          # D h = 1
    assert inflation("explicit", 0.1, 30.0, friction=2.0) == math.inf      # h λ > D
    assert inflation("splitting", 3.0, 1.0, friction=0.1) == math.inf      # h √λ > 2
    assert math.isfinite(inflation("splitting", 1.9, 1.0, friction=0.1))


# -- 2. the prediction against sgmc's own samplers ------------------------------------------

#: (dynamics, friction D, step h) on λ = 1, τ = 1: inflation far enough from 1 to be seen.
SIMULATED = [("langevin", None, 0.5), ("euler", 1.0, 0.8), ("explicit", 2.0, 0.3),
             ("splitting", 2.0, 1.0)]


def _variance_ratio(x, lam, tau):
    """Mean and standard error of the per-chain variance ratio (about the known mean 0) of
    draws x shaped (chains, draws), the SE from the chains' spread."""
    v = np.mean(np.asarray(x, np.float64) ** 2, axis=1) * lam / tau
    return v.mean(), v.std(ddof=1) / math.sqrt(v.size)


def _sgmc_ratio(dynamics, d, h, lam=1.0, chains=256, steps=4200, burn=200, seed=3):
    problem = sgmc.Objective(lambda th: 0.5 * lam * jnp.sum(th ** 2))  # data-free U = λθ²/2
    sampler = (sgmc.sgld(h) if dynamics == "langevin"
               else sgmc.sghmc(h, friction=d, integrator=dynamics))
    res = sgmc.sample(problem, sampler, init=jnp.zeros(1), num_steps=steps, burn_in=burn,
                      num_chains=chains, seed=seed)
    x = np.asarray(res.samples)
    assert x.shape == (chains, steps - burn, 1)
    return _variance_ratio(x[..., 0], lam, 1.0)


def check_against_sgmc(dynamics, d, h):
    """The sampled variance ratio is within 4 SE of the prediction, the SE is ≤ 1 %, and
    the prediction is > 10 SE from 1 (so a wrong prediction of 1 would be caught)."""
    pred = inflation(dynamics, h, 1.0, friction=d)
    ratio, se = _sgmc_ratio(dynamics, d, h)
    assert se <= 0.01 * ratio
    assert abs(pred - 1.0) > 10 * se, (pred, se)
    assert abs(ratio - pred) <= 4 * se, (dynamics, ratio, pred, se)


@pytest.mark.parametrize("dynamics, d, h", SIMULATED)
def test_inflation_matches_sgmc_samplers(dynamics, d, h):
    check_against_sgmc(dynamics, d, h)


# -- 3. gradient noise: the update rules simulated directly ---------------------------------

def _simulate(dynamics, h, lam, tau, d, b, chains=2000, steps=3000, burn=300, seed=0):
    """θ draws (chains, steps − burn) of the update rules of sgmc.kernels.dynamics, written out
    step by step (not through A and v), with gradient λθ + ε, ε ~ N(0, B)."""
    rng = np.random.default_rng(seed)
    theta = np.zeros(chains)
    p = math.sqrt(tau) * rng.standard_normal(chains)
    out = np.empty((chains, steps - burn))
    for k in range(steps):
        xi, eps = rng.standard_normal(chains), math.sqrt(b) * rng.standard_normal(chains)
        if dynamics == "langevin":
            theta = theta - h * (lam * theta + eps) + math.sqrt(2 * h * tau) * xi
        elif dynamics in ("euler", "explicit"):
            new_p = ((1 - d * h) * p - h * (lam * theta + eps)
                     + math.sqrt(2 * d * h * tau) * xi)
            theta = theta + h * (p if dynamics == "explicit" else new_p)
            p = new_p
        else:
            c = math.exp(-d * h / 2)
            half = theta + h / 2 * p
            p1 = c * p
            p = c * (p1 - h * (lam * half + eps) + math.sqrt(2 * d * h * tau) * xi)
            theta = half + h / 2 * p
        if k >= burn:
            out[:, k - burn] = theta
    return out


@pytest.mark.parametrize("dynamics, d, h", [("langevin", None, 0.4), ("euler", 1.5, 0.5),
                                            ("explicit", 2.0, 0.25), ("splitting", 2.0, 0.8)])
def test_gradient_noise_bookkeeping(dynamics, d, h):
    lam, tau, b = 1.5, 0.8, 2.0
    pred = inflation(dynamics, h, lam, temperature=tau, friction=d, noise=b)
    no_noise = inflation(dynamics, h, lam, temperature=tau, friction=d)
    ratio, se = _variance_ratio(_simulate(dynamics, h, lam, tau, d, b), lam, tau)
    assert se <= 0.01 * ratio
    assert abs(pred - no_noise) > 10 * se  # the noise's share is resolved
    assert abs(ratio - pred) <= 4 * se, (dynamics, ratio, pred, se)


# -- 4. the step-size and friction rules ---------------------------------------------------

def _ok(dynamics, h, lams, tau, d, b, budget):
    if dynamics in ("euler", "explicit") and h * d >= 1:
        return False
    return all(abs(inflation(dynamics, h, lam, tau, d, b) - 1) <= budget for lam in lams)


@pytest.mark.parametrize("dynamics", DYNAMICS)
@pytest.mark.parametrize("lmin, lmax, b, budget", [(1e-2, 4.0, 0.0, 0.1),
                                                   (1.0, 1.0, 0.0, 0.05),
                                                   (1e-3, 10.0, 5.0, 0.2)])
def test_largest_step(dynamics, lmin, lmax, b, budget):
    tau, grid = 1.3, 17
    d = _friction(dynamics, friction_rule(lmin))
    h = largest_step(dynamics, lmin, lmax, temperature=tau, friction=d, noise=b,
                     budget=budget, grid=grid)
    lams = np.geomspace(lmin, lmax, grid) if lmax > lmin else [lmin]
    assert _ok(dynamics, h, lams, tau, d, b, budget)
    assert not _ok(dynamics, 1.01 * h, lams, tau, d, b, budget)
    # Every smaller step is good too (the good steps are an interval from 0).
    assert all(_ok(dynamics, s, lams, tau, d, b, budget) for s in np.geomspace(h / 1e4, h, 40))


def test_largest_step_langevin_closed_form():
    for lmax in (1.0, 4.0, 250.0):
        h = largest_step("langevin", 1e-3, lmax)
        assert h == pytest.approx(2 * (1 - 1 / 1.1) / lmax, rel=1e-3)


def test_largest_step_returns_the_first_interval():
    """Splitting with large gradient noise: the noise inflates, the integrator deflates, so
    the inflation leaves 1 + budget and comes back at larger steps; the rule stops at the
    first exit."""
    d, b = 10.0, 100.0
    h = largest_step("splitting", 1.0, 1.0, friction=d, noise=b)
    assert inflation("splitting", h, 1.0, friction=d, noise=b) == pytest.approx(1.1, abs=1e-3)
    later = [s for s in np.linspace(1.01 * h, 2.0, 400)
             if abs(inflation("splitting", s, 1.0, friction=d, noise=b) - 1) <= 0.1]
    assert later and min(later) > 5 * h  # a later window exists, and is not returned


def test_friction_rule():
    assert friction_rule(4.0) == 4.0
    assert friction_rule(1e-4) == pytest.approx(0.02)


# -- 5. validation ----------------------------------------------------------------------

@pytest.mark.parametrize("call, match", [
    (lambda: inflation("euler", 0.1, 1.0), "friction is required"),
    (lambda: inflation("splitting", 0.1, 1.0, friction=None), "friction is required"),
    (lambda: inflation("langevin", 0.1, 1.0, friction=1.0), "friction must be None"),
    (lambda: inflation("euler", 0.1, 1.0, friction=-1.0), "friction must be a positive"),
    (lambda: inflation("langevin", 0.0, 1.0), "step_size must be a positive"),
    (lambda: inflation("langevin", -0.1, 1.0), "step_size must be a positive"),
    (lambda: inflation("langevin", math.nan, 1.0), "step_size must be a positive"),
    (lambda: inflation("langevin", 0.1, 0.0), "curvature must be a positive"),
    (lambda: inflation("langevin", 0.1, 1.0, temperature=0.0), "temperature must be"),
    (lambda: inflation("langevin", 0.1, 1.0, noise=-1.0), "noise must be a finite number >= 0"),
    (lambda: inflation("leapfrog", 0.1, 1.0), "dynamics must be one of"),
    (lambda: largest_step("hmc", 1.0, 2.0), "dynamics must be one of"),
    (lambda: largest_step("euler", 1.0, 2.0), "friction is required"),
    (lambda: largest_step("langevin", 2.0, 1.0), "curvature_max must be >= curvature_min"),
    (lambda: largest_step("langevin", 0.0, 1.0), "curvature_min must be a positive"),
    (lambda: largest_step("langevin", 1.0, 2.0, budget=0.0), "budget must be a positive"),
    (lambda: largest_step("langevin", 1.0, 2.0, grid=0), "grid must be an integer >= 1"),
    (lambda: largest_step("langevin", 1.0, 2.0, grid=2.5), "grid must be an integer >= 1"),
    (lambda: friction_rule(0.0), "curvature_min must be a positive"),
])
def test_validation(call, match):
    with pytest.raises(ValueError, match=match):
        call()
