"""One step of every kernel, exactly: stub gradient estimators record where the dynamics
evaluate the gradient and what context they pass, and return a gradient the test chooses;
the noise each dynamics injects is checked against its stated scale at several temperatures;
minibatch estimates and the SAGA table are checked entry by entry.

These are unit-sized checks of the update rules as written in the docstrings (the
exact-posterior tests elsewhere check the stationary laws): each kills a one-line mistake
that a statistical test sees only weakly or not at all (the mutation list in
``tools/mutants.py`` names which).
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc._pytree import pytree_dataclass
from sgmc.contracts.estimator import Estimator
from sgmc.kernels.dynamics import StepParams

D = 20_000  # coordinates: the noise variance of one step is estimated to ~1 % (se √(2/D))


@pytree_dataclass
class Stub(Estimator):
    """Returns ``grad`` (broadcast) and records the evaluation point, the context's kick
    drift and offset in its state."""

    grad: float = 0.0
    sampling = "replacement"

    def init(self, problem, position, key):
        z = jnp.zeros_like(position)
        return (z, z, z)

    def estimate(self, problem, state, point, batch, key, ctx):
        zero = jnp.zeros_like(point)
        drift = zero if ctx.drift is None else ctx.drift
        off = zero if ctx.offset is None else ctx.offset
        return jnp.full_like(point, self.grad), (point, drift, off), jnp.int32(1)


def _problem():
    # The stub ignores the problem; a data-free objective keeps the driver's checks quiet.
    return sgmc.Objective(lambda th: 0.5 * jnp.sum(th ** 2))


def _one_step(sampler, theta, p, key, h, tau):
    """One transition from (θ, p) with the sampler's dynamics and the stub estimator."""
    dyn = sampler.dynamics
    prob = _problem()
    params = StepParams(jnp.float32(h), jnp.float32(tau), jnp.int32(0))
    st = dyn.init(prob, sampler.estimator, theta, jax.random.key(9), params)
    if p is not None:
        st = st._replace(momentum=p)
    new, _ = sampler.transition(prob, st, None, key, params)
    return new


H, FR = 0.01, 5.0


def _underdamped(integrator, grad=0.0):
    return sgmc.sghmc(H, friction=FR, estimator=Stub(grad), integrator=integrator)


@pytest.mark.parametrize("integrator", ["euler", "explicit", "splitting"])
def test_underdamped_deterministic_part_and_context(integrator):
    """τ = 0, gradient g: the new state and the estimator's inputs follow the docstring's
    formulas for each integrator (gradient point, the kick's drift and offset)."""
    theta = jnp.linspace(-1.0, 1.0, 8)
    p = jnp.linspace(0.5, -0.3, 8)
    g = 0.7
    new = _one_step(_underdamped(integrator, g), theta, p, jax.random.key(1), H, 0.0)
    point, drift, offset = (np.asarray(a) for a in new.est)
    th, pp = np.asarray(theta, np.float64), np.asarray(p, np.float64)
    if integrator == "splitting":
        c = math.exp(-FR * H / 2)
        half = th + H / 2 * pp
        p_new = c * (c * pp - H * g)
        want = {"theta": half + H / 2 * p_new, "p": p_new, "point": half,
                "drift": c * pp, "offset": (1 / c - c) * pp}
    else:
        p_new = (1 - FR * H) * pp - H * g
        moved = p_new if integrator == "euler" else pp
        want = {"theta": th + H * moved, "p": p_new, "point": th, "drift": (1 - FR * H) * pp,
                "offset": H * FR * pp}
    got = {"theta": new.position, "p": new.momentum, "point": point, "drift": drift,
           "offset": offset}
    for k, v in want.items():
        np.testing.assert_allclose(np.asarray(got[k]), v, rtol=1e-5, atol=1e-6, err_msg=k)


def _noise(sampler, tau, which):
    """The random part of one step at temperature τ: (state at τ) − (state at τ = 0), same
    key, from θ = 0, p = 0."""
    z = jnp.zeros(D)
    p = None if which == "theta_sgld" else z
    key = jax.random.key(3)
    a = _one_step(sampler, z, p, key, H, tau)
    b = _one_step(sampler, z, p, key, H, 0.0)
    field = "position" if which.startswith("theta") else "momentum"
    return np.asarray(getattr(a, field), np.float64) - np.asarray(getattr(b, field), np.float64)


@pytest.mark.parametrize("tau", [0.3, 2.0])
@pytest.mark.parametrize("kind", ["sgld", "euler", "explicit", "splitting", "psgld"])
def test_injected_noise_has_the_stated_variance(kind, tau):
    """Var of the injected noise per coordinate, against the update rule:
    SGLD 2hτ; Euler/explicit momentum 2Dhτ; splitting momentum c²·2Dhτ (c = e^{−Dh/2});
    pSGLD 2hτG with G = 1/(λ + √V), V = (1 − α) ḡ² after one step from V = 0."""
    g = 0.5
    if kind == "sgld":
        smp, which, var = sgmc.sgld(H, estimator=Stub(g)), "theta_sgld", 2 * H * tau
    elif kind == "psgld":
        smp = sgmc.psgld(H, estimator=Stub(g))
        big_g = 1.0 / (1e-5 + math.sqrt((1 - 0.99) * g ** 2))  # problem without data: N = 1
        which, var = "theta_sgld", 2 * H * tau * big_g
    else:
        smp, which = _underdamped(kind, g), "p"
        c2 = math.exp(-FR * H) if kind == "splitting" else 1.0
        var = c2 * 2 * FR * H * tau
    x = _noise(smp, tau, which)
    assert abs(x.mean()) < 5 * math.sqrt(var / D)
    # Sample variance of D Gaussian draws: relative se √(2/D) ≈ 1 %; 5 se.
    assert abs(x.var() / var - 1) < 5 * math.sqrt(2 / D), (kind, tau, x.var(), var)


def test_minibatch_estimates_are_exact_at_n_equal_two():
    """Û = U₀ + (N/n) Σ_B L_i and ∇Û likewise, at n = 2 (N/(n − 1) or a mean would fail)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 3)).astype(np.float32)
    y = rng.normal(size=7).astype(np.float32)
    post = sgmc.Posterior(loglik=lambda th, d: -0.5 * (d["y"] - d["x"] @ th) ** 2,
                          logprior=lambda th: -0.5 * jnp.sum(th ** 2),
                          data={"x": X, "y": y})
    th = np.array([0.3, -0.2, 0.5], np.float32)
    idx = jnp.array([1, 4], jnp.int32)
    r = y - X @ th
    L = 0.5 * r ** 2                            # per-datum energies
    G = -(r[:, None] * X)                       # their gradients
    u_want = 0.5 * th @ th + 7 / 2 * (L[1] + L[4])
    g_want = th + 7 / 2 * (G[1] + G[4])
    np.testing.assert_allclose(post.estimate_energy(jnp.asarray(th), idx), u_want, rtol=1e-5)
    np.testing.assert_allclose(post.estimate_grad(jnp.asarray(th), idx), g_want, rtol=1e-5)
    grad, _, n = sgmc.uniform().estimate(post, (), jnp.asarray(th), idx, None, None)
    np.testing.assert_allclose(grad, g_want, rtol=1e-5)
    assert int(n) == 2
    # An objective's minibatch estimate is a mean.
    obj = sgmc.Objective(lambda th, d: jnp.sum((th - d) ** 2), data=X)
    want = np.mean([np.sum((th - X[i]) ** 2) for i in (1, 4)])
    np.testing.assert_allclose(obj.estimate_energy(jnp.asarray(th), idx), want, rtol=1e-5)


@pytest.mark.parametrize("light", [False, True])
def test_saga_table_holds_the_gradients_at_the_last_visit(light):
    """After a step on batch B at θ, the table's rows for B are ∇L_i(θ) (or ∂L_i/∂z), the
    other rows keep their values at the initial point, and the running sum is their sum."""
    X, y, _ = sgmc.models.synthetic_linear_data(12, 3, seed=2)
    post = sgmc.models.linear_regression(X, y)
    est = sgmc.saga(lightweight=light)
    th0 = jnp.array([0.1, 0.2, -0.3])
    th1 = jnp.array([1.0, -1.0, 0.5])
    st0 = est.init(post, th0, jax.random.key(0))
    idx = jnp.array([2, 7, 2], jnp.int32)   # a repeated index is stored once
    _, st1, _ = est.estimate(post, st0, th1, idx, None, None)
    Xn, yn = np.asarray(X, np.float64), np.asarray(y, np.float64)

    def entries(th):
        r = yn - Xn @ np.asarray(th, np.float64)   # unit noise: ∂L_i/∂z = −r_i
        return -r if light else -(r[:, None] * Xn)

    want = entries(th0)
    want[[2, 7]] = entries(th1)[[2, 7]]
    np.testing.assert_allclose(np.asarray(st1.table), want, rtol=1e-5, atol=1e-5)
    total = Xn.T @ want if light else want.sum(0)
    np.testing.assert_allclose(np.asarray(st1.table_sum), total, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("tau", [0.5, 3.0])
def test_initial_momentum_law(tau):
    """init_momentum="random": p₀ ~ N(0, τ I), the momentum's stationary law at τ;
    "zero": p₀ = 0 (the SVRG-HMC paper's Algorithms 1–4)."""
    prob = _problem()
    params = StepParams(jnp.float32(H), jnp.float32(tau), jnp.int32(0))
    for how in ("random", "zero"):
        smp = sgmc.sghmc(H, friction=FR, temperature=tau, estimator=Stub(), init_momentum=how)
        st = smp.dynamics.init(prob, smp.estimator, jnp.zeros(D), jax.random.key(4), params)
        p = np.asarray(st.momentum, np.float64)
        if how == "zero":
            assert np.all(p == 0.0)
        else:
            assert abs(p.var() / tau - 1) < 5 * math.sqrt(2 / D), (tau, p.var())


@pytest.mark.parametrize("kind", ["sgld", "euler", "explicit", "splitting"])
@pytest.mark.parametrize("x_choice", ["default", "zero", "one", "next_zero"])
def test_ewsg_x_from_the_context_the_dynamics_pass(kind, x_choice):
    """EWSG's x and a_i = c∇L_i (EWSG paper eq. 4, Alg. 1), from the context each dynamics
    actually passes (captured by the stub): with σ√h = √(2Dhτ) (underdamped) or √(2hτ)
    (overdamped), x = base + h∇U₀/(σ√h) and c = hw/(σ√h), base the x choice. A strong prior
    makes the prior term large, so dropping it changes x by far more than rounding."""
    from sgmc.kernels.estimators.ewsg import EWSG

    theta = jnp.array([0.8, -1.1, 0.4])
    p = jnp.array([0.5, 0.2, -0.9])
    h, tau = H, 1.7
    if kind == "sgld":
        smp = sgmc.sgld(h, temperature=tau, estimator=Stub())
        new = _one_step(smp, theta, None, jax.random.key(2), h, tau)
    else:
        smp = sgmc.sghmc(h, friction=FR, temperature=tau, estimator=Stub(), integrator=kind)
        new = _one_step(smp, theta, p, jax.random.key(2), h, tau)
    point, drift, offset = new.est
    overdamped = kind == "sgld"
    from sgmc.contracts.estimator import Context
    scale = math.sqrt(2 * h * tau * (1.0 if overdamped else FR))
    ctx = Context(t=jnp.int32(0), step_size=jnp.float32(h), temperature=jnp.float32(tau),
                  noise_scale=jnp.float32(scale), drift=drift,
                  offset=None if overdamped else offset)
    post = sgmc.Posterior(loglik=lambda th, d: -0.5 * jnp.sum((d - th) ** 2),
                          logprior=lambda th: -50.0 * jnp.sum(th ** 2),
                          data=jnp.zeros((5, 3)))
    g0 = 100.0 * point                                   # ∇U₀ of the prior above
    x, c = EWSG(x=x_choice)._x(post, point, g0, ctx)
    base = {"zero": 0.0, "one": 1.0}.get(x_choice)
    if base is None and x_choice == "default":
        base = 0.0 if overdamped else np.asarray(offset) / scale
    if base is None:  # next_zero: θ_{k+1} = 0 (overdamped) or the kicked momentum = 0
        th, pp = np.asarray(theta, np.float64), np.asarray(p, np.float64)
        before = {"sgld": th, "splitting": math.exp(-FR * h / 2) * pp}.get(kind,
                                                                         (1 - h * FR) * pp)
        base = -before / scale
    want = base + h * np.asarray(g0) / scale
    np.testing.assert_allclose(np.asarray(x), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(float(c), h * 1.0 / scale, rtol=1e-6)


def test_persistent_ewsg_keeps_the_index_whose_gradient_it_used():
    """persistent=True (the EWSG paper's Sec. 4.3 reading): the index chain's state after a
    step is the index whose gradient N∇L_I the step used, and the next step starts there."""
    from sgmc.contracts.estimator import Context

    rng = np.random.default_rng(0)
    data = jnp.asarray(rng.normal(size=(8, 2)) * 3.0, jnp.float32)   # distinct gradients
    post = sgmc.Posterior(loglik=lambda th, d: -0.5 * jnp.sum((d - th) ** 2),
                          logprior=lambda th: 0.0 * jnp.sum(th), data=data)
    est = sgmc.ewsg(chain_length=5, persistent=True).with_batch_size(1)
    theta, mom = jnp.array([0.3, -0.2]), jnp.array([2.0, -1.0])
    ctx = Context(t=jnp.int32(0), step_size=jnp.float32(0.05), temperature=jnp.float32(1.0),
                  noise_scale=jnp.sqrt(jnp.float32(2 * 0.05 * 1.0 * 2.0)),
                  drift=(1 - 0.1) * mom, offset=0.1 * mom)
    state = est.init(post, theta, jax.random.key(0))
    step = jax.jit(lambda st, key: est.estimate(post, st, theta, jnp.array([0], jnp.int32),
                                                key, ctx))
    moved = 0
    for k in range(20):
        start = int(state.idx[0])
        g, state, _ = step(state, jax.random.key(k + 1))
        used = np.asarray(g) / 8 + np.asarray(data) - np.asarray(theta)  # N∇L_I = N(θ − x_I)
        i_used = int(np.argmin(np.linalg.norm(used, axis=1)))
        assert i_used == int(state.idx[0])
        moved += i_used != start
    assert moved > 0  # the chain did move, so the check could fail
