"""The Metropolis swap test of replica exchange, as the coupling calls it, against its exact
acceptance probability at known energies (seconds, not an end-to-end run).

With exact energies U₁, U₂ the swap of an adjacent pair is accepted with probability

    min(1, exp(a (U₁ − U₂) − a² σ̂² / (2F))),   a = 1/τ₁ − 1/τ₂

(VR-reSGLD Alg. 1–2 with the a²σ²/2 convention of :mod:`sgmc.kernels.coupling.replica`); σ̂² is set
in the state by hand, so the correction is checked exactly as ``_swap`` applies it. The
cases include τ₁ ≠ 1, where 1/τ and 1/τ² differ, and σ̂² > 0 with F ≠ 1.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc

CALLS = 100_000


@pytest.fixture(scope="module")
def problem():
    # U(θ) = ½θ² + Σ_i ½(x_i − θ)² with x = (0, 1): exact energies by a full pass.
    x = jnp.array([0.0, 1.0])
    return sgmc.Posterior(loglik=lambda th, d: -0.5 * jnp.sum((d - th) ** 2),
                          logprior=lambda th: -0.5 * jnp.sum(th ** 2), data=x)


def _acceptance(problem, taus, variance, correction, positions):
    rex = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=1), taus, correction=correction,
                                energy=sgmc.exact_energy(), variance_by_age=False)
    state = rex.init(problem, jnp.zeros(1), jax.random.key(0))
    pos = jnp.asarray(positions, jnp.float32)[:, None]
    state = state._replace(dyn=state.dyn._replace(position=pos),
                           variance=jnp.full_like(state.variance, variance))
    params = rex.params(jnp.int32(5))

    def one(key):
        _, accept, active, _ = rex._swap(problem, state, key, params, jnp.int32(0))
        return accept[0], active[0]

    acc, act = jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(1), CALLS))
    assert bool(jnp.all(act))
    u = [float(problem.full_energy(p)) for p in pos]
    return float(jnp.mean(acc)), u


@pytest.mark.parametrize("taus, variance, correction", [
    ((2.0, 5.0), 0.0, 1.0),     # τ₁ ≠ 1: a = 0.3, with 1/τ² it would be 0.21
    ((1.0, 4.0), 0.0, 1.0),
    ((0.8, 2.0), 2.0, 1.0),     # the unbiased correction a²σ̂²/2
    ((2.0, 5.0), 10.0, 1.0),
    ((2.0, 5.0), 10.0, 4.0),    # F > 1 shrinks it
])
def test_swap_acceptance_is_exact(problem, taus, variance, correction):
    # The colder replica sits lower: U₁ − U₂ < 0, so the exponent is not clipped at 1.
    rate, (u1, u2) = _acceptance(problem, taus, variance, correction, [0.5, 1.5])
    a = 1 / taus[0] - 1 / taus[1]
    p = min(1.0, math.exp(a * (u1 - u2) - a * a * variance / (2 * correction)))
    se = math.sqrt(p * (1 - p) / CALLS)
    assert 0.05 < p < 0.95, "a case must not saturate (else it cannot discriminate)"
    assert abs(rate - p) < 5 * se, (rate, p, se)
    # Discriminating: the likely slips are far outside 5 SE.
    wrong = {"1/τ²": min(1.0, math.exp((1 / taus[0] ** 2 - 1 / taus[1] ** 2) * (u1 - u2)
                                       - a * a * variance / (2 * correction))),
             "2σ̂²": min(1.0, math.exp(a * (u1 - u2) - a * a * variance / correction))}
    for name, q in wrong.items():
        if name == "2σ̂²" and variance == 0:
            continue
        assert abs(q - p) > 10 * se, (name, q, p)


def test_swap_towards_lower_energy_is_certain_without_noise(problem):
    """A hotter replica in the lower energy always moves to the cold slot (S ≥ 1)."""
    rate, (u1, u2) = _acceptance(problem, (2.0, 5.0), 0.0, 1.0, [2.5, 0.5])
    assert u1 > u2 and rate == 1.0


def test_log_swap_ratio_formula():
    a, diff, var, f = 0.3, 1.7, 4.0, 2.0
    got = float(sgmc.kernels.coupling.log_swap_ratio(jnp.float32(a), jnp.float32(diff),
                                             jnp.float32(var), jnp.float32(f)))
    np.testing.assert_allclose(got, a * (diff - a * var / (2 * f)), rtol=1e-6)


@pytest.mark.parametrize("measured, old", [(1, 0.0), (5, 40.0)])
def test_replicate_variance_is_unbiased_and_smoothed(measured, old):
    """Alg. 1's σ̃²: the sample variance (ddof = 1) of ΔŨ over R independent minibatches is
    unbiased for Var(ΔŨ) = (N/n)² n Var_i(d_i), d_i = L_i(θ₁) − L_i(θ₂) (indices with
    replacement); the second measurement replaces σ̂² (the first is at the common start),
    later ones are smoothed, σ̂² ← (1 − γ)σ̂² + γσ̃²."""
    rng = np.random.default_rng(0)
    data = jnp.asarray(rng.normal(size=20) * 2.0, jnp.float32)
    post = sgmc.Posterior(loglik=lambda th, d: -0.5 * jnp.sum((d - th) ** 2),
                          logprior=lambda th: -0.5 * jnp.sum(th ** 2), data=data)
    n, gamma = 4, 0.3
    rex = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=n), (1.0, 3.0),
                                energy=sgmc.minibatch_energy(), smoothing=gamma,
                                num_replicates=10)
    state = rex.init(post, jnp.zeros(1), jax.random.key(0))
    theta = jnp.array([[0.7], [-1.3]], jnp.float32)
    state = state._replace(dyn=state.dyn._replace(position=theta),
                           variance=jnp.full_like(state.variance, old),
                           measured=jnp.int32(measured))
    calls = 20_000
    out = jax.jit(jax.vmap(lambda k: rex._measure(post, state, k)[0].variance[0, 0]))(
        jax.random.split(jax.random.key(1), calls))
    x = np.asarray(data, np.float64)
    d = 0.5 * (x - 0.7) ** 2 - 0.5 * (x + 1.3) ** 2
    exact = (20 / n) ** 2 * n * d.var()
    w = 1.0 if measured <= 1 else gamma
    want = (1 - w) * old + w * exact
    got, se = float(np.mean(out)), float(np.std(out) / math.sqrt(calls))
    assert abs(got - want) < 5 * se, (got, want, se)
    # Discriminating: ddof = 0 would be 10 % low, a missed replacement 70 % low.
    assert 0.1 * w * exact > 10 * se


def test_cv_energy_estimate_uses_its_coefficient():
    """VR-reSGLD eq. 5 / Alg. 2: Ũ = X + c·Y with the state's coefficient c (adaptive or −1),
    X = U₀ + (wN/n)Σ_B L_i(θ), Y = (wN/n)Σ_B L_i(β̂) − w Σ_i L_i(β̂) — checked by hand."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=6).astype(np.float32)
    post = sgmc.Posterior(loglik=lambda th, d: -0.5 * jnp.sum((d - th) ** 2),
                          logprior=lambda th: -0.5 * jnp.sum(th ** 2), data=jnp.asarray(x))
    cv = sgmc.cv_energy(period=3, adaptive=True)
    theta, anchor = jnp.array([0.4]), jnp.array([-0.2])
    idx = jnp.array([1, 4, 4], jnp.int32)
    L = lambda t: 0.5 * (x.astype(np.float64) - t) ** 2
    X = 0.5 * 0.4 ** 2 + 6 / 3 * L(0.4)[[1, 4, 4]].sum()
    Y = 6 / 3 * L(-0.2)[[1, 4, 4]].sum() - L(-0.2).sum()
    for c in (-1.0, 0.3):
        state = cv.init(post, anchor)._replace(coef=jnp.float32(c))
        u, n = cv.estimate(post, state, theta, idx)
        np.testing.assert_allclose(float(u), X + c * Y, rtol=1e-5)
        assert n == 6
