"""EWSG: the index chain's law, and EWSG = SGHMC when every datum has the same gradient."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.kernels.estimators import Context


def _ideal_weights(post, theta, momentum, h, friction, tau):
    """p_i ∝ exp(‖x + N a_i‖²/2) with the default x = √h D r/σ + √h ∇U₀/σ (eq. 4)."""
    sigma = np.sqrt(2 * friction * tau)
    n = post.data_rows
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
                  noise_scale=jnp.sqrt(jnp.float32(2 * h * tau * friction)),
                  drift=(1 - h * friction) * mom, offset=h * friction * mom)
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
            for est in (sgmc.uniform(), sgmc.ewsg(chain_length=3, grouping="slot"),
                        sgmc.ewsg(chain_length=3, grouping="batch"))]
    np.testing.assert_allclose(runs[0].samples, runs[1].samples, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(runs[0].samples, runs[2].samples, rtol=1e-5, atol=1e-6)
    # ... at (M + 1) per-example gradients per slot per step.
    assert runs[1].meta["grad_evals_total"][0] == 300 * 4 * 4


@pytest.mark.parametrize("grouping", ["slot", "batch"])
@pytest.mark.parametrize("kind, x", [("sgld", "default"), ("euler", "zero"),
                                     ("splitting", "one"), ("euler", "next_zero"),
                                     ("sgld", "next_zero"), ("splitting", "default"),
                                     ("explicit", "default"), ("explicit", "next_zero")])
def test_every_dynamics_and_x_choice_runs(kind, x, grouping):
    """Every dynamics (the explicit Euler–Maruyama of the paper's eq. 3 included) × x choice ×
    grouping runs with b = 3."""
    X, y, _ = sgmc.models.synthetic_linear_data(200, 2, seed=0)
    post = sgmc.models.linear_regression(X, y)
    est = sgmc.ewsg(x=x, persistent=(x == "zero"), grouping=grouping)
    sampler = (sgmc.sgld(1e-4, batch_size=3, estimator=est) if kind == "sgld" else
               sgmc.sghmc(1e-3, friction=20.0, batch_size=3, estimator=est, integrator=kind))
    res = sgmc.sample(post, sampler, jnp.zeros(2), num_steps=50)
    assert np.all(np.isfinite(res.samples))


def test_default_grouping_is_batch_for_minibatches():
    """For b > 1 the default is the paper's n/b-minibatches reading (grouping="batch"): the
    default estimator's run is bitwise the batch grouping's and differs from the slot one."""
    assert sgmc.ewsg().grouping == "batch"
    X, y, _ = sgmc.models.synthetic_linear_data(200, 2, seed=0)
    post = sgmc.models.linear_regression(X, y)
    runs = {g: sgmc.sample(post, sgmc.sghmc(1e-3, friction=20.0, batch_size=4,
                                            integrator="explicit", estimator=est),
                           jnp.zeros(2), num_steps=100, seed=2).samples
            for g, est in (("default", sgmc.ewsg()), ("batch", sgmc.ewsg(grouping="batch")),
                           ("slot", sgmc.ewsg(grouping="slot")))}
    np.testing.assert_array_equal(runs["default"], runs["batch"])
    assert not np.allclose(runs["default"], runs["slot"])


@pytest.mark.parametrize("grouping", ["slot", "batch"])
def test_explicit_integrator_gives_ewsg_the_euler_context(grouping):
    """Explicit (θ_{k+1} = θ_k + h r_k) and semi-implicit Euler share the momentum kick, so the
    index chain must see the same context (momentum r_k, kick offset hγ r_k): from the same
    state and key both give the same new momentum, while the positions differ. The default x
    matters here (x = 0 picks other indices), so a wrong offset would be caught."""
    X, y, _ = sgmc.models.synthetic_linear_data(50, 2, seed=3)
    post = sgmc.models.linear_regression(X, y)
    theta = jnp.array([0.4, -0.3])

    def step(integrator, x, key):
        smp = sgmc.sghmc(2e-2, friction=5.0, batch_size=2, integrator=integrator,
                         estimator=sgmc.ewsg(chain_length=4, x=x, grouping=grouping))
        state = smp.init(post, theta, jax.random.key(0))
        dyn = state.dyn._replace(momentum=jnp.array([3.0, -2.0]))  # far from 0: x matters
        k_batch, k_step = jax.random.split(key)
        batch = jax.random.randint(k_batch, (2,), 0, 50)
        new, _ = smp.transition(post, dyn, batch, k_step, smp.params(0))
        return new.position, new.momentum

    keys = jax.random.split(jax.random.key(1), 64)
    run = {(i, x): jax.vmap(lambda k, i=i, x=x: step(i, x, k))(keys)
           for i, x in (("explicit", "default"), ("euler", "default"), ("explicit", "zero"))}
    np.testing.assert_allclose(run["explicit", "default"][1], run["euler", "default"][1],
                               rtol=1e-6, atol=1e-6)
    assert not np.allclose(run["explicit", "default"][0], run["euler", "default"][0])
    assert not np.allclose(run["explicit", "default"][1], run["explicit", "zero"][1])


def _explicit_lyapunov_var(h: float, friction: float, n: int) -> float:
    """Stationary Var θ (per coordinate) of explicit Euler–Maruyama (eq. 3) with the full
    gradient n(θ − c̄) at τ = 1: Σ = A Σ Aᵀ + Q, A = [[1, h], [−hn, 1 − γh]], Q = diag(0, 2γh)."""
    a = np.array([[1.0, h], [-h * n, 1.0 - friction * h]])
    q = np.diag([0.0, 2.0 * friction * h])
    cov = np.zeros((2, 2))
    for _ in range(5000):
        cov = a @ cov @ a.T + q
    return float(cov[0, 0])


@pytest.mark.parametrize("batch_size, grouping", [(1, "batch"), (2, "batch"), (2, "slot")])
def test_ewsg_explicit_near_the_full_gradient_lyapunov_variance(batch_size, grouping):
    """EWSG's aim (Thm. 2): the kernel of the full-gradient scheme. On the EWSG paper's 2-D
    Gaussian (n = 20, h = 0.05, γ = 10) with explicit Euler–Maruyama, the stationary variance
    of θ under EWSG is close to the full-gradient scheme's discrete Lyapunov value (0.0565;
    exact 0.05), while SGHMC's subsampling noise inflates it. Measured (500 chains): ratio to
    the prediction 1.13 (b = 1), 1.01 (b = 2, batch), 0.91 (b = 2, slot); SGHMC 1.57 / 1.28,
    each ± 0.01. EWSG's excess must be under half of SGHMC's."""
    from sgmc.lab.experiments import ewsg_gaussian as eg

    n, h, fr, chains = 20, 0.05, 10.0, 500
    post, mu, _ = eg.problem(n, 0)
    pred = _explicit_lyapunov_var(h, fr, n)
    init = jnp.asarray(mu + np.random.default_rng(1).standard_normal((chains, 2)) / np.sqrt(n),
                       jnp.float32)

    def ratio(est):
        smp = sgmc.sghmc(h, friction=fr, batch_size=batch_size, estimator=est,
                         integrator="explicit")
        res = sgmc.sample(post, smp, init, num_steps=300, num_chains=chains, burn_in=100,
                          thin=2, seed=3, progress=False)
        per_chain = np.mean((np.asarray(res.samples, np.float64) - mu) ** 2, axis=(1, 2))
        return per_chain.mean() / pred, per_chain.std() / np.sqrt(chains) / pred

    r_ewsg, se_e = ratio(sgmc.ewsg(grouping=grouping))
    r_sghmc, se_s = ratio(sgmc.uniform())
    assert r_sghmc - 1 > 10 * se_s  # the subsampling noise is visible: the test can fail
    assert abs(r_ewsg - 1) < 0.5 * (r_sghmc - 1), (r_ewsg, se_e, r_sghmc)


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
                  noise_scale=jnp.sqrt(jnp.float32(2 * 1e-3 * 1.0 * 5.0)), drift=jnp.zeros(2),
                  offset=jnp.zeros(2))
    g, _, _ = est.estimate(post, est.init(post, theta, jax.random.key(0)), theta,
                           jnp.array([0, 7, 7]), jax.random.key(1), ctx)
    np.testing.assert_allclose(g, post.full_grad(theta), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("kind", ["euler", "explicit", "splitting", "sgld"])
def test_batch_grouping_equals_slot_grouping_at_batch_size_one(kind):
    """For b = 1 a minibatch is one datum, so both groupings are the same chain (bitwise), for
    every integrator and the overdamped case."""
    X, y, _ = sgmc.models.synthetic_linear_data(200, 2, seed=0)
    post = sgmc.models.linear_regression(X, y)

    def sampler(g):
        est = sgmc.ewsg(grouping=g)
        if kind == "sgld":
            return sgmc.sgld(1e-4, batch_size=1, estimator=est)
        return sgmc.sghmc(1e-3, friction=20.0, batch_size=1, estimator=est, integrator=kind)

    runs = [sgmc.sample(post, sampler(g), jnp.zeros(2), num_steps=200, seed=5)
            for g in ("slot", "batch")]
    np.testing.assert_array_equal(runs[0].samples, runs[1].samples)
