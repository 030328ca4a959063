"""Replica exchange (sgmc.replica_exchange): the swap rule, its invariance, anchors that travel
with states, the even–odd ladder, diagnostics and bad input."""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import sgmc
from sgmc.kernels.coupling import log_swap_ratio, round_trips

BARRIER, TILT = 5.0, 0.3


@dataclass(frozen=True)
class _Well:
    """A tilted double well U(θ) = B(θ² − 1)² + cθ spread evenly over identical data, so
    every minibatch estimate of the energy and of its gradient is exact."""

    n: int

    def __call__(self, theta, x):
        th = theta[0]
        return -(BARRIER * (th ** 2 - 1.0) ** 2 + TILT * th) / self.n + 0.0 * x


@dataclass(frozen=True)
class _Flat:
    def __call__(self, theta):
        return jnp.zeros((), theta.dtype)


def well(n=10):
    return sgmc.Posterior(_Well(n), _Flat(), np.zeros(n, np.float32))


def exact_cdf(tau):
    grid = np.linspace(-2.5, 2.5, 20001)
    logp = -(BARRIER * (grid ** 2 - 1) ** 2 + TILT * grid) / tau
    p = np.exp(logp - logp.max())
    cdf = np.concatenate([[0.0], np.cumsum((p[1:] + p[:-1]) / 2 * np.diff(grid))])
    return lambda v: np.interp(v, grid, cdf / cdf[-1])


def test_swap_ratio_is_unbiased_at_f_one():
    """With ΔŨ ~ N(D, σ²) and the exact σ², E[S̃] = exp(aD) at F = 1 (a²σ²/2 convention);
    the paper's printed a²σ²/F at F = 1 would be low by exp(−a²σ²/2) = 0.61 here."""
    a, d, sigma = 0.5, -2.0, 2.0
    eps = np.random.default_rng(0).standard_normal(2_000_000) * sigma
    s = np.exp(np.asarray(log_swap_ratio(a, d + eps, sigma ** 2, 1.0), np.float64))
    se = s.std() / np.sqrt(s.size)
    assert abs(s.mean() - np.exp(a * d)) < 4 * se
    assert abs(s.mean() - np.exp(a * d)) < 0.01 * np.exp(a * d)


def test_swaps_leave_the_tempered_targets_invariant():
    """Exact energies (σ̂² = 0), two replicas at τ = (1, 10), every chain started in the
    minor mode θ = +1: the final states of 400 independent chains follow the exact tempered
    marginals (Kolmogorov–Smirnov). The cold replica alone would stay in its starting mode
    (barrier 5 nats at τ = 1), and a rule that swapped always would give it the hot marginal.
    The step h = 2e-4 keeps SGLD's own bias (~hU''/4 ≈ 0.2 % in variance) far below what
    400 draws resolve (KS distance ~0.07)."""
    post = well()
    rx = sgmc.replica_exchange(sgmc.sgld(2e-4), temperatures=[1.0, 10.0],
                               energy=sgmc.exact_energy(), output="all")
    res = sgmc.sample(post, rx, jnp.array([1.0]), num_steps=8000, num_chains=400,
                      thin=8000, seed=0, progress=False)
    final = np.asarray(res.samples[:, -1, :, 0], np.float64)   # (chains, replicas)
    for k, tau in enumerate((1.0, 10.0)):
        p = stats.kstest(final[:, k], exact_cdf(tau)).pvalue
        assert p > 1e-3, (k, p)
    assert res.info["swaps"].sum() > 0
    # The cold replica's mode weights: P(θ < 0) = 0.645 exactly at τ = 1.
    assert abs((final[:, 0] < 0).mean() - exact_cdf(1.0)(0.0)) < 0.08


def test_cold_chain_alone_stays_in_its_mode():
    post = well()
    res = sgmc.sample(post, sgmc.sgld(2e-4), jnp.array([1.0]), num_steps=8000,
                      num_chains=200, thin=8000, seed=0, progress=False)
    # Without swaps almost no chain leaves θ = +1 (the exact weight of θ < 0 is 0.645).
    assert (np.asarray(res.samples[:, -1, 0]) < 0).mean() < 0.1


@pytest.mark.parametrize("by_age", [False, True])
def test_no_swaps_before_the_variance_is_measured_at_distinct_states(by_age):
    """A single σ̂² from replicates (every 40 steps) is 0 at the common start: no swap before
    the second measurement. Per anchor age, σ̂² is measured at the swap's own (already
    distinct) states: swaps from the first step, each with σ̂² > 0."""
    x = sgmc.models.synthetic_mixture_data(500, seed=2)
    post = sgmc.models.mixture_posterior(x)
    rx = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=50), [25.0, 1000.0],
                               energy=sgmc.cv_energy(period=40), num_replicates=4,
                               variance_by_age=by_age)
    res = sgmc.sample(post, rx, jnp.array([0.0]), num_steps=80, seed=3, progress=False,
                      init_per_chain=False)
    attempts = res.info["swap_attempts"][0, :, 0]
    start = 0 if by_age else 40
    assert attempts[:start].sum() == 0 and attempts[start:].sum() == 80 - start
    assert (res.info["energy_variance"][0, start:, 0] > 0).all()


def test_anchors_travel_with_states():
    """Force a swap (cold replica far out, hot one at the mode): positions AND the
    control-variate anchors with their cached energies must move together."""
    x = sgmc.models.synthetic_mixture_data(200, seed=1)
    post = sgmc.models.mixture_posterior(x)
    rx = sgmc.replica_exchange(sgmc.sgld(1e-4, batch_size=20), temperatures=[1.0, 100.0],
                               energy=sgmc.cv_energy(period=50))
    state = rx.init(post, jnp.array([0.0]), jax.random.key(0))
    pos = jnp.array([[300.0], [-5.0]])
    anchors = rx.energy.init(post, pos[0]), rx.energy.init(post, pos[1])
    energy = jax.tree.map(lambda a, b: jnp.stack([a, b]), *anchors)
    state = state._replace(dyn=state.dyn._replace(position=pos), energy=energy)
    new, accept, active, _ = rx._swap(post, state, jax.random.key(1), rx.params(0), 0)
    assert bool(accept[0]) and bool(active[0])
    np.testing.assert_array_equal(new.dyn.position, pos[::-1])
    np.testing.assert_array_equal(new.energy.anchor, pos[::-1])
    np.testing.assert_array_equal(new.energy.anchor_sum, energy.anchor_sum[::-1])
    np.testing.assert_array_equal(new.labels, [1, 0])


def test_four_replicas_even_odd_make_round_trips():
    post = well()
    rx = sgmc.replica_exchange(sgmc.sgld(2e-4), sgmc.geometric_ladder(1.0, 20.0, 4),
                               energy=sgmc.exact_energy())
    res = sgmc.sample(post, rx, jnp.array([1.0]), num_steps=20_000, seed=0, progress=False)
    attempts = res.info["swap_attempts"].sum(axis=(0, 1))
    # Even–odd: pairs (0,1), (2,3) on even attempts and (1,2) on odd ones; none at step 0,
    # before σ̂² has been measured at distinct states (an even attempt).
    assert attempts.tolist() == [9_999, 10_000, 9_999]
    assert (res.info["swaps"].sum(axis=(0, 1)) > 100).all()
    assert round_trips(res.info["replica_labels"])[0] >= 1
    labels = res.info["replica_labels"][0]
    assert all(sorted(row) == [0, 1, 2, 3] for row in labels.astype(int).tolist()[::997])


def test_default_output_is_the_coldest_replica_and_costs_are_counted():
    x = sgmc.models.synthetic_mixture_data(500, seed=2)
    post = sgmc.models.mixture_posterior(x)
    rx = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=50), [25.0, 1000.0],
                               energy=sgmc.cv_energy(period=40), num_replicates=4)
    res = sgmc.sample(post, rx, jnp.array([0.0]), num_steps=80, num_chains=2, seed=3,
                      progress=False)
    assert res.samples.shape == (2, 80, 1)
    assert res.info["energy_variance"].shape == (2, 80, 1)
    # init: 2 anchor passes; per step: 2 replicas × 50 gradients; a swap test with 2 × 2 × 50
    # energies and its age's σ̂² with another 2 × 2 × 50 (per-example energies at θ and β̂)
    # from step 0 on; anchor passes at t = 0 and 40 (2 × 500 each); no replicates.
    expected = 2 * 500 + 80 * 2 * 50 + 80 * 2 * (2 * 2 * 50) + 2 * 2 * 500
    assert res.meta["grad_evals_total"] == [expected, expected]


@pytest.mark.parametrize("kwargs, match", [
    ({"temperatures": [1.0]}, "at least 2"),
    ({"temperatures": [2.0, 1.0]}, "strictly increasing"),
    ({"temperatures": [1.0, 1.0]}, "strictly increasing"),
    ({"temperatures": [-1.0, 1.0]}, "temperatures"),
    ({"correction": 0.0}, "correction"),
    ({"correction": -1.0}, "correction"),
    ({"variance_period": 0}, "variance_period"),
    ({"smoothing": 0.0}, "smoothing"),
    ({"smoothing": 1.5}, "smoothing"),
    ({"num_replicates": 1}, "num_replicates"),
    ({"schedule": "random"}, "schedule"),
    ({"step_sizes": [1e-3]}, "step_sizes"),
    ({"output": "hottest"}, "output"),
    ({"cooldown": -1}, "cooldown"),
])
def test_bad_input(kwargs, match):
    args = {"temperatures": [1.0, 10.0], **kwargs}
    with pytest.raises(ValueError, match=match):
        sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=10), **args)


def test_bad_energy_and_period():
    with pytest.raises(ValueError, match="period"):
        sgmc.cv_energy(period=0)
    with pytest.raises(TypeError, match="energy"):
        sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=10), [1.0, 2.0], energy="cv")


def test_vr_resgld_on_the_symmetric_mixture():
    """N = 1000, n = 100, τ = (25, 1000), η = 2e-3, anchors and σ̂² every step (m = 1),
    32 chains from β0 = 30 (the mode at 25). Measured (seeds 1, 2): σ̂² 11,300 plain against
    1,810 with the control variate (6.2×), swaps per chain 377 against 764, and the cold
    replica's weight of the mode at −5: 0.43/0.42 plain, 0.47/0.44 VR (se 0.03–0.04; exact
    0.5). Asserted: a factor > 3, more swaps, VR weight within 0.15 (~4 se) of 0.5; SGLD at
    τ = 25 from β0 = 30 never leaves its mode."""
    x = sgmc.models.synthetic_mixture_data(1000, seed=0)
    post = sgmc.models.mixture_posterior(x)
    runs = {}
    for name, energy in (("plain", sgmc.minibatch_energy()), ("cv", sgmc.cv_energy(1))):
        rx = sgmc.replica_exchange(sgmc.sgld(2e-3, batch_size=100), [25.0, 1000.0],
                                   energy=energy, variance_period=1, num_replicates=5)
        runs[name] = sgmc.sample(post, rx, jnp.array([30.0]), num_steps=8000, burn_in=1000,
                                 thin=10, num_chains=32, seed=1, progress=False)
    var = {k: r.info["energy_variance"][:, 1:].mean() for k, r in runs.items()}
    swaps = {k: r.info["swaps"].sum(axis=(1, 2)).mean() for k, r in runs.items()}
    assert var["plain"] > 3 * var["cv"]
    assert swaps["cv"] > swaps["plain"]
    weight = (np.asarray(runs["cv"].samples[..., 0]) < 10).mean()
    assert abs(weight - 0.5) < 0.15
    alone = sgmc.sample(post, sgmc.sgld(2e-3, batch_size=100, temperature=25.0),
                        jnp.array([30.0]), num_steps=8000, num_chains=32, thin=10, seed=1,
                        progress=False)
    assert (np.asarray(alone.samples[..., 0]) < 10).mean() == 0.0


def test_schedules_outputs_and_diagnostics_round_trip(tmp_path):
    """Annealed temperatures and per-replica step sizes run; output="all" keeps every
    replica; the per-pair statistics reach ArviZ and survive save/load."""
    post = well()
    anneal = sgmc.schedules.from_function(lambda t: 2.0 / 1.02 ** (t // 100), max_value=2.0)
    rx = sgmc.replica_exchange(sgmc.sgld(2e-4), [anneal, 10.0, 30.0], step_sizes=[2e-4, 3e-4,
                                                                                4e-4],
                               energy=sgmc.exact_energy(), schedule="stochastic",
                               output="all")
    res = sgmc.sample(post, rx, jnp.array([1.0]), num_steps=600, num_chains=2, thin=10,
                      seed=4, progress=False)
    assert res.samples.shape == (2, 60, 3, 1)
    assert res.info["swaps"].shape == res.info["swap_attempts"].shape == (2, 60, 2)
    assert (res.info["swaps"] <= res.info["swap_attempts"]).all()
    idata = res.to_arviz()
    assert idata.sample_stats["swaps"].shape == (2, 60, 2)
    path = tmp_path / "r.npz"
    res.save(path)
    back = sgmc.Result.load(path)
    np.testing.assert_array_equal(back.info["replica_labels"], res.info["replica_labels"])


def _mixture_steps(rx, post, num_steps, seed=0, init=0.0):
    """Run ``rx`` step by step; returns the states after every step and the infos."""
    step = jax.jit(rx.step, static_argnums=())
    state = rx.init(post, jnp.array([init]), jax.random.key(seed))
    keys = jax.random.split(jax.random.key(seed + 1), num_steps)
    states, infos = [], []
    for t in range(num_steps):
        state, info = step(post, state, keys[t], jnp.int32(t))
        states.append(state)
        infos.append(jax.tree.map(np.asarray, info))
    return states, infos


def test_anchors_refresh_every_period_whatever_the_variance_period():
    """cv_energy(period=5) with variance_period=7: the anchors in use at step t are the
    positions at the start of step 5⌊t/5⌋ (refreshed before that step's move). Swaps are
    blocked (F tiny) so anchors stay in their slots. The old code refreshed them only inside
    the σ̂² measurement, i.e. every 7 steps."""
    x = sgmc.models.synthetic_mixture_data(200, seed=1)
    post = sgmc.models.mixture_posterior(x)
    rx = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=20), [25.0, 1000.0],
                               energy=sgmc.cv_energy(period=5), variance_period=7,
                               correction=1e-30, num_replicates=3)
    states, infos = _mixture_steps(rx, post, 16)
    assert sum(float(i["swaps"].sum()) for i in infos) == 0
    start = [np.zeros((2, 1))] + [np.asarray(s.dyn.position) for s in states[:-1]]
    for t, st in enumerate(states):
        np.testing.assert_array_equal(np.asarray(st.energy.anchor), start[5 * (t // 5)])
        full = [float(post.full_energy(a)) - float(post.exact_energy(a))
                for a in np.asarray(st.energy.anchor)]
        np.testing.assert_allclose(np.asarray(st.energy.anchor_sum), full, rtol=1e-5)


def _exact_diff_variance(post, state, batch):
    """Var(Ũ_1 − Ũ_2 | θ, β̂) of a minibatch of ``batch`` draws with replacement, exactly:
    (wN/n)² · n · Var_i(d_i) over all N data."""
    idx = jnp.arange(post.data_rows)
    e = [np.asarray(post.batch_energies(th, idx), np.float64)
         + float(c) * np.asarray(post.batch_energies(a, idx), np.float64)
         for th, a, c in zip(state.dyn.position, state.energy.anchor, state.energy.coef,
                             strict=True)]
    scale = post.batch_scale(batch)
    return scale ** 2 * batch * np.var(e[0] - e[1])


@pytest.mark.parametrize("adaptive", [False, True])
def test_swap_variance_is_the_variance_at_its_own_anchor_age(adaptive):
    """Mixture, N = 500, n = 25, m = 8, η = 2e-3, τ = (25, 1000): the control-variate
    energy's variance grows with the anchor's age (exact, averaged over 25 periods: 1.4e3
    at age 1 and 8.8e3 at age 8 with c = −1; 3.8e3 and 1.06e4 with the adaptive c). The σ̂²
    each swap uses must estimate the exact Var(ΔŨ) at its own age: its mean is within 35 %
    of the exact one at age 1 and at age 8 (measured: ratios 0.99–1.16). The old rule used
    the oldest anchor's σ̂² for every swap (ratio ~6 at age 1)."""
    x = sgmc.models.synthetic_mixture_data(500, seed=0)
    post = sgmc.models.mixture_posterior(x)
    m, n = 8, 25
    rx = sgmc.replica_exchange(sgmc.sgld(2e-3, batch_size=n), [25.0, 1000.0],
                               energy=sgmc.cv_energy(period=m, adaptive=adaptive),
                               num_replicates=4)
    states, infos = _mixture_steps(rx, post, 30 * m, init=25.0)
    used = {1: [], m: []}
    exact = {1: [], m: []}
    for t in range(5 * m, 30 * m):
        age = t % m + 1
        if age in used:
            used[age].append(float(infos[t]["energy_variance"][0]))
            exact[age].append(_exact_diff_variance(post, states[t], n))
    young, old = np.mean(exact[1]), np.mean(exact[m])
    assert old > 2 * young
    for age in (1, m):
        ratio = np.mean(used[age]) / np.mean(exact[age])
        assert 0.65 < ratio < 1.35, age


def test_cooldown_allows_one_swap_per_window():
    """Exact energies on the double well swap often; with cooldown=10 at most one swap is
    accepted in each window [10w, 10w + 10), and none is attempted after it in the window."""
    post = well()
    kw = dict(temperatures=[1.0, 10.0], energy=sgmc.exact_energy())
    res = {c: sgmc.sample(post, sgmc.replica_exchange(sgmc.sgld(2e-4), cooldown=c, **kw),
                          jnp.array([1.0]), num_steps=2000, num_chains=2, seed=0,
                          progress=False) for c in (0, 10)}
    free = res[0].info["swaps"][..., 0].reshape(2, -1, 10).sum(-1)
    assert free.max() > 1
    swaps = res[10].info["swaps"][..., 0].reshape(2, -1, 10)
    attempts = res[10].info["swap_attempts"][..., 0].reshape(2, -1, 10)
    assert swaps.sum(-1).max() == 1 and swaps.sum() > 20
    for c, w in zip(*np.nonzero(swaps.sum(-1)), strict=True):
        j = int(np.argmax(swaps[c, w]))
        assert attempts[c, w, j + 1:].sum() == 0


def test_correction_schedule_and_geometric_schedule():
    """F_t as a schedule: F = 1e-7 (no swaps: a correction of ~1e9 nats) for t < 100, then
    F = 100 (swaps). The geometric schedule holds its value outside [start, stop]."""
    g = sgmc.schedules.geometric(2.0, 0.5, every=10, start=20, stop=50)
    np.testing.assert_allclose([float(g(t)) for t in (0, 20, 29, 30, 49, 50, 500)],
                               [2.0, 2.0, 2.0, 1.0, 0.5, 0.25, 0.25])
    assert g.max_value() == 2.0
    assert sgmc.schedules.geometric(1.0, 2.0, every=1, stop=3).max_value() == 8.0
    with pytest.raises(ValueError, match="stop"):
        sgmc.schedules.geometric(1.0, 2.0, every=1, start=5, stop=5)
    with pytest.raises(ValueError, match="rate"):
        sgmc.schedules.geometric(1.0, 0.0, every=1)
    x = sgmc.models.synthetic_mixture_data(1000, seed=0)
    post = sgmc.models.mixture_posterior(x)
    f = sgmc.schedules.geometric(1e-7, 1e9, every=100, stop=100)
    rx = sgmc.replica_exchange(sgmc.sgld(2e-3, batch_size=100), [25.0, 1000.0],
                               correction=f, variance_period=10, num_replicates=4)
    res = sgmc.sample(post, rx, jnp.array([30.0]), num_steps=400, num_chains=4, seed=0,
                      progress=False)
    sw = res.info["swaps"][..., 0]
    assert sw[:, :100].sum() == 0 and sw[:, 100:].sum() > 10


def test_exact_energy_swaps_with_many_chains():
    """32 chains of two-replica SGLD with exact energies on a 4-d unit Gaussian (N = 64):
    each replica's marginal variance is its temperature's, within Monte Carlo error. Under
    jax 0.10.2 the swap's ``lax.cond`` with a per-chain predicate (cool-down, σ̂² measured)
    became a select over ≥ 32 vmapped chains whose exact energies XLA:CPU computed wrongly
    (errors of ~5 in U): the cold replica's first coordinate then had variance 0.71 and the
    others 1.15, the hot one's 1.6 and 1.17 (31 chains were right). The predicate is now
    t's alone."""
    d, n = 4, 16
    X = np.eye(d).repeat(n, axis=0) / np.sqrt(n)
    post = sgmc.models.linear_regression(X, np.zeros(d * n), prior_std=1e6)
    k = sgmc.replica_exchange(sgmc.sgld(0.02), [1.0, 1.3], energy=sgmc.exact_energy(),
                              output="all")
    res = sgmc.sample(post, k, init=jnp.zeros(d), num_steps=4_000, num_chains=32,
                      burn_in=500, thin=5, seed=1)
    x = np.asarray(res.samples, np.float64)                       # (32, draws, 2, d)
    assert float(res.info["swaps"].sum()) > 10_000
    for slot, tau in enumerate((1.0, 1.3)):
        var = x[:, :, slot].reshape(-1, d).var(0)
        # SGLD's own inflation at h = 0.02 is 1/(1 − h/2) ≈ 1.01; ESS ≥ 2,000 per coordinate
        # (SE of a variance ≤ √(2/2000) ≈ 0.032 relative): 5 SE.
        np.testing.assert_allclose(var / tau, 1.0 / (1 - 0.01), atol=0.16)
