"""Warm-up's network recipe (:mod:`sgmc.tune.stationary`): Adam to the mode, then the largest
step whose pilots stop drifting, and the burn-in they needed.

The guard's own verdict is tested on traces whose answer is known (white noise, a trend, a
divergence); the guard inside :func:`sgmc.warmup` on a small network forced onto the network
path (``dense_max`` below its size); and the recipe on scikit-learn's digits, whose run must be
stationary — and must not be when the step is doubled (``tools/mutants.py``: guard-step-doubled).
"""

import itertools
import math
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc import stationarity
from sgmc.tune import stationary

NAMES = ["energy", "log prior", "loglik per datum"]


def _traces(kind, keep=200, chains=4, seed=0):
    rng = np.random.default_rng(seed)
    vals = rng.normal(size=(keep, chains, 3))
    if kind == "trend":       # the second half still moving by 1 sd per 10 steps
        vals[:, 1, 1] += 0.1 * np.arange(keep)
    return vals


def test_the_verdict_tells_stationary_drifting_and_diverged_pilots():
    finite = np.ones(4, bool)
    assert stationary.verdict(_traces("noise"), finite, NAMES)[0] == "stationary"
    found, name, z = stationary.verdict(_traces("trend"), finite, NAMES)
    assert (found, name) == ("drifts", "log prior of chain 1") and z > 5
    assert stationary.verdict(_traces("noise"), np.array([1, 1, 0, 1], bool),
                              NAMES)[0] == "diverged"
    nan = _traces("noise")
    nan[-1, 0, 0] = np.nan
    assert stationary.verdict(nan, finite, NAMES)[0] == "diverged"
    # a transient in the FIRST half is the burn-in: not a drift
    early = _traces("noise")
    early[:100, :, 1] += np.linspace(50.0, 0.0, 100)[:, None]
    assert stationary.verdict(early, finite, NAMES)[0] == "stationary"
    # the threshold: Bonferroni over chains × statistics at stationarity.ALPHA
    rng = np.random.default_rng(3)
    false = sum(stationary.verdict(rng.normal(size=(200, 4, 3)), finite, NAMES)[0] != "stationary"
                for _ in range(200))
    assert false <= 6  # ≈ ALPHA = 0.25 % nominal (batch-means tails: a few %), not 1 in 10


def _small_network(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = (X[:, 0] * X[:, 1] > 0).astype(np.int32)
    post = sgmc.models.mlp(X, y, hidden=(8,))
    return post, post.loglik.init(jax.random.key(seed))


def test_warmup_runs_the_guard_for_a_network_and_reports_its_burn_in(monkeypatch):
    monkeypatch.setattr(stationary, "PILOT_STEPS", 1000)   # a small net settles quickly
    post, init = _small_network()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # λ_min ≤ 0: expected for a network
        w = sgmc.warmup(post, sgmc.sghmc(batch_size=50, integrator="splitting"), init,
                        num_chains=2, dense_max=8, check_chains=4, optimizer_steps=300)
    rep = w.report
    pilots = rep.checks
    assert all(isinstance(p, stationary.Pilot) for p in pilots)
    assert pilots[-1].verdict == "stationary" and rep.burn_in == pilots[-1].steps
    assert all(p.verdict in ("drifts", "diverged") for p in pilots[:-1])
    # each pilot halves the last one's step
    steps = [p.step_size for p in pilots]
    assert all(math.isclose(b, a / 2, rel_tol=1e-6) for a, b in itertools.pairwise(steps))
    # the step returned: half the stationary pilot's (one halving of margin)
    assert math.isclose(rep.step_sizes[0], steps[-1] / 2, rel_tol=1e-6)
    assert rep.passes["check"] == pytest.approx(sum(p.passes for p in pilots), rel=1e-9)
    assert "burn-in" in str(rep)
    # the starts are dispersed draws around the mode, one per chain
    assert jax.tree.leaves(w[1])[0].shape[0] == 2


def test_warmup_warns_when_no_step_is_stationary(monkeypatch):
    monkeypatch.setattr(stationary, "PILOT_STEPS", 200)
    post, init = _small_network()
    monkeypatch.setattr(stationary, "verdict", lambda *a: ("drifts", "log prior of chain 0",
                                                           9.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.warns(sgmc.SamplingWarning, match="stationarity guard found no step"):
            w = sgmc.warmup(post, sgmc.sghmc(batch_size=50, integrator="splitting"), init,
                            dense_max=8, check_chains=2, check_budget=400.0,
                            optimizer_steps=100)
    assert w.report.burn_in is None


def _digits():
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    X, y = load_digits(return_X_y=True)
    X_tr, _, y_tr, _ = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    mu, sd = X_tr.mean(0), X_tr.std(0)
    return ((X_tr - mu) / np.where(sd > 0, sd, 1.0)).astype(np.float32), y_tr


@pytest.mark.slow
def test_the_recipe_on_digits_is_stationary():
    """The issue's bar: after the guard's burn-in the log prior and the training
    log-likelihood of every chain drift by less than 3 SEs (Geweke's test, batch-means SE:
    with 4 chains × 2 statistics a stationary run fails it ≈ 2 % of the time). The guard
    returns half the largest step its pilots found stationary; four times its step is one
    its pilot saw drift or diverge, and there this test fails (mutant guard-step-past-edge;
    measured at such a step: the log prior fell from −6.7·10⁴ to −2.3·10¹⁰ and the run
    diverged)."""
    X, y = _digits()
    post = sgmc.Posterior(sgmc.models.mlp(X, y, hidden=(100,)).loglik, sgmc.nn.prior(),
                          {"x": X, "y": y})
    init = post.loglik.init(jax.random.key(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tuned, start = w = sgmc.warmup(post, sgmc.sghmc(batch_size=100, integrator="splitting"),
                                       init, num_chains=4, seed=0)
    burn = w.report.burn_in
    assert burn is not None
    res = sgmc.sample(post, tuned, start, num_steps=burn + 8_000, burn_in=burn, thin=10,
                      num_chains=4, init_per_chain=True, seed=1, store_draws=False,
                      predict=lambda p: jnp.zeros(()))
    for stat in ("log_prior", "loglik"):
        for c, trace in enumerate(np.asarray(res.info[stat])):
            z = stationarity.drift(trace).z
            assert abs(z) < 3.0, (stat, c, z, trace[::80])


def test_adam_runs_until_the_energy_stops_falling():
    """A network's mode search: rounds of Adam until one lowers the energy by less than
    10⁻³ nats per datum; it ends below where one round (the old fixed 500 steps) stops,
    and before its round limit."""
    from sgmc.tune.laplace import adam_mode, adam_until_flat

    post, init = _small_network()
    key = jax.random.key(1)
    one = float(post.full_energy(adam_mode(post, init, 50, 500, 0.05, jax.random.fold_in(key, 0))))
    passes = {"mode": 0.0}
    z = adam_until_flat(post, init, 50, 0.05, key, 500, 40, passes)
    rounds = passes["mode"] / (500 * 50 / 400 + 1.0)
    assert float(post.full_energy(z)) < one - 1.0
    assert 2 <= rounds < 40


def test_starts_that_stay_atypical_are_reported():
    """Dispersed starts that fit the data far worse than the mode warn (the issue: starts
    scoring accuracy 0.11, silently): a factor 100 times too wide, one round of shrinking."""
    from sgmc.kernels import preconditioners as precond
    from sgmc.tune.laplace import ScaledFactor, typical_factor

    post, init = _small_network()
    passes = {"curvature": 0.0}
    wide = ScaledFactor(precond.identity(), 100.0)
    with pytest.warns(sgmc.SamplingWarning, match="may fit the data far worse"):
        typical_factor(post, init, wide, jax.random.key(0), passes, rounds=1)
    with warnings.catch_warnings():   # enough rounds: shrunk to the typical set, silently
        warnings.simplefilter("error", sgmc.SamplingWarning)
        out = typical_factor(post, init, wide, jax.random.key(0), passes, rounds=8)
    assert out.s < 0.1
