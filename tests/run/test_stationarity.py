"""Is a run stationary? (issue 31, item 3.)

Every kept draw records its energy, log prior and minibatch log-likelihood
(``res.info``, :mod:`sgmc.run.stats`), and ``sgmc.sample`` ends with the drift test of
:mod:`sgmc.stationarity`: an ``sgmc.SamplingWarning`` when they are not stationary.

* the drift statistic on synthetic traces: z ~ N(0, 1) on a stationary AR(1) trace, a trend
  and a runaway fire, constant and too-short traces give no false verdict;
* the info arrays: shapes, "energy" = −"log_prior" − N·"loglik" (and the full-data energy
  for a full-batch kernel), the draws bitwise those of a run that records nothing, block-size
  independence, bitwise resume, ``store_draws=False``, replica exchange, objectives;
* the warning fires on a run from a far start and is silent once burn-in covers it; its
  false-alarm rate on correctly sampled conjugate regressions started from the sampler's
  exact stationary law is measured (250 runs of 4 chains × 3 statistics);
* the issue's network (slow): a Flax MLP 64-100-10 on scikit-learn's digits tuned by
  ``sgmc.warmup``: silent at h/8 after burn-in, firing at the warm-up's h from there.
"""

from __future__ import annotations

import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from test_checkpoint import interrupt_after

import sgmc
from linear_gaussian import predicted_cov
from sgmc import stationarity as st
from sgmc.io import sinks as _sinks
from sgmc.models.linear import linear_regression_posterior, synthetic_linear_data

KEYS = ("energy", "log_prior", "loglik")


def ar1(rng, reps: int, n: int, phi: float) -> np.ndarray:
    """``reps`` stationary AR(1) traces of length n, unit marginal variance."""
    x = np.empty((reps, n))
    x[:, 0] = rng.normal(size=reps)
    e = rng.normal(size=(reps, n)) * np.sqrt(1 - phi**2)
    for t in range(1, n):
        x[:, t] = phi * x[:, t - 1] + e[:, t]
    return x


# --------------------------------------------------------------- the drift statistic


def test_stationary_ar1_drift_z_is_standard_normal():
    # 2,000 traces of 400 draws, τ = 3 (φ = 0.5): SE of the mean of z 0.022, of its sd 0.016.
    z = np.array([st.drift(x).z for x in ar1(np.random.default_rng(0), 2000, 400, 0.5)])
    assert abs(z.mean()) < 0.09
    assert 0.93 < z.std() < 1.07
    assert np.mean(np.abs(z) > 3.0) < 0.008  # N(0, 1): 0.0027


def test_linear_trend_and_runaway_fire():
    rng = np.random.default_rng(1)
    t = np.arange(1000) / 1000
    threshold = stats.norm.isf(st.ALPHA / 24)  # 4 chains × 3 statistics
    noisy = ar1(rng, 200, 1000, 0.5)
    # A rise of 4 marginal sds over the run (the drift ≈ 2.6 sd): fires nearly always.
    assert np.mean([abs(st.drift(x + 4 * t).z) > threshold for x in noisy]) > 0.9
    assert np.mean([abs(st.drift(x).z) > threshold for x in noisy]) < 0.02
    assert st.drift(t).z == np.inf and st.drift(-np.sqrt(t + 0.01)).z < -threshold
    # Exponential growth (weights blowing up): its curvature swamps the batch means, the
    # runaway rule catches it.
    assert st.drift(noisy[0] + 1e6 * np.exp(30 * (t - 1))).z == np.inf
    # An early transient (a burn-in too short) fires too.
    assert st.drift(noisy[0] + 30 * np.exp(-20 * t)).z < -threshold


def test_constant_short_and_non_finite_traces():
    flat = st.drift(np.full(100, 3.0))
    assert (flat.z, flat.p, flat.drift) == (0.0, 1.0, 0.0)
    assert st.drift(np.r_[np.zeros(50), np.ones(50)]).z == np.inf  # constant parts differ
    assert np.isnan(st.drift(np.arange(st.MIN_DRAWS - 1.0)).z)
    assert np.isnan(st.drift(np.r_[np.ones(50), np.nan]).z)
    x = np.random.default_rng(2).normal(size=(4, st.MIN_DRAWS - 1))
    short = st.diagnose({"energy": x + np.arange(x.shape[1])})  # a steep trend, 19 draws
    assert short.verdict == "too few draws" and short.ok
    with warnings.catch_warnings():
        warnings.simplefilter("error", sgmc.SamplingWarning)
        st.warn_if_not_stationary({"energy": x + np.arange(x.shape[1])})
    assert st.diagnose({"energy": np.full((4, 50), 2.0)}).verdict == "ok"
    assert st.diagnose({}).verdict == "not recorded"


def test_split_rhat_and_the_diagnosis_object(monkeypatch):
    x = ar1(np.random.default_rng(3), 4, 500, 0.5)
    assert st.split_rhat(x) < 1.05
    assert st.split_rhat(x + np.arange(4)[:, None]) > 1.5
    assert st.split_rhat(np.ones((4, 10))) == 1.0
    d = st.diagnose({"energy": x, "loglik": x[::-1]})
    assert d.verdict == "ok" and d.tests == 8 and list(d.table.columns) == list(st.COLUMNS)
    assert "verdict: ok" in str(d) and "loglik" in str(d)
    monkeypatch.setitem(sys.modules, "pandas", None)  # without pandas: a plain table
    plain = st.diagnose({"energy": x})
    assert isinstance(plain.table, st.Table) and "statistic" in str(plain.table)
    with pytest.raises(ValueError, match="alpha"):
        st.diagnose({"energy": x}, alpha=1.5)


# --------------------------------------------------------------- the info arrays


@pytest.fixture(scope="module")
def regression():
    X, y, _ = synthetic_linear_data(500, 5, seed=0)
    post = sgmc.models.linear_regression(X, y)
    mu, cov = linear_regression_posterior(X, y)
    return post, mu.astype(np.float32), cov


def _quiet(*args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sgmc.SamplingWarning)
        return sgmc.sample(*args, **kwargs)


def test_info_shapes_and_the_energy_identity(regression):
    post, mu, _ = regression
    res = _quiet(post, sgmc.sgld(1e-4, batch_size=50), mu, num_steps=60, num_chains=2,
                 burn_in=7, thin=3, seed=1)
    for k in KEYS:
        assert res.info[k].shape == (2, res.num_draws) and res.info[k].dtype == np.float32
    e, lp, ll = (np.asarray(res.info[k], np.float64) for k in KEYS)
    np.testing.assert_allclose(e, -lp - 500 * ll, rtol=1e-5)
    # A full-batch kernel evaluates every row: "energy" is the draw's full energy U.
    full = _quiet(post, sgmc.sgld(1e-4), mu, num_steps=20, num_chains=2, thin=4, seed=1)
    draws = np.asarray(full.samples).reshape(-1, 5)
    u = np.asarray(jax.vmap(post.full_energy)(jnp.asarray(draws))).reshape(2, -1)
    np.testing.assert_allclose(full.info["energy"], u, rtol=1e-5)
    np.testing.assert_allclose(full.info["energy"], -full.info["log_prior"]
                               - 500 * full.info["loglik"], rtol=1e-5)


def test_draws_are_those_of_a_run_that_records_nothing(regression):
    post, mu, _ = regression
    kw = dict(num_steps=80, num_chains=3, burn_in=5, thin=2, seed=4)
    on = _quiet(post, sgmc.sghmc(1e-3, friction=20.0, batch_size=50), mu, **kw)
    off = sgmc.sample(post, sgmc.sghmc(1e-3, friction=20.0, batch_size=50), mu,
                      diagnose=False, **kw)
    np.testing.assert_array_equal(np.asarray(on.samples), np.asarray(off.samples))
    np.testing.assert_array_equal(on.info["grad_evals"], off.info["grad_evals"])
    assert not set(KEYS) & set(off.info) and off.diagnose().verdict == "not recorded"


def test_statistics_do_not_depend_on_the_block_size(regression):
    post, mu, _ = regression
    kw = dict(num_steps=101, num_chains=2, burn_in=7, thin=3, seed=5)
    a, b = (_quiet(post, sgmc.sgld(1e-4, batch_size=50), mu, draws_per_block=n, **kw)
            for n in (2, 9))
    for k in (*KEYS, "step"):
        np.testing.assert_array_equal(a.info[k], b.info[k], err_msg=k)


@pytest.mark.parametrize("store", [True, False], ids=["draws", "no-draws"])
def test_statistics_resume_bitwise(regression, tmp_path, monkeypatch, store):
    post, mu, _ = regression
    kw = dict(num_steps=120, num_chains=2, thin=2, seed=6, draws_per_block=10,
              store_draws=store, predict=None if store else (lambda th: th))
    full = _quiet(post, sgmc.sgld(1e-4, batch_size=50), mu, **kw)
    path = tmp_path / "run.ckpt"
    monkeypatch.setattr(_sinks.MemorySink, "append",
                        interrupt_after(2, _sinks.MemorySink.append))
    with pytest.raises(sgmc.Interrupted):
        _quiet(post, sgmc.sgld(1e-4, batch_size=50), mu, checkpoint=path, **kw)
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sgmc.SamplingWarning)
        resumed = sgmc.resume(path, post, sgmc.sgld(1e-4, batch_size=50),
                              predict=kw["predict"])
    assert resumed.info["energy"].shape == (2, 60)
    for k in full.info:
        np.testing.assert_array_equal(resumed.info[k], full.info[k], err_msg=k)


def test_store_draws_false_keeps_the_statistics(regression):
    post, mu, _ = regression
    kw = dict(num_steps=90, num_chains=2, burn_in=10, thin=2, seed=7)
    stored = _quiet(post, sgmc.sgld(1e-4, batch_size=50), mu, **kw)
    bare = _quiet(post, sgmc.sgld(1e-4, batch_size=50), mu, store_draws=False,
                  predict=lambda th: th, **kw)
    assert bare.num_draws == 0 and bare.info["energy"].shape == (2, 40)
    for k in KEYS:
        np.testing.assert_array_equal(bare.info[k], stored.info[k], err_msg=k)


def test_replica_exchange_and_objective_statistics(regression):
    post, mu, _ = regression
    kw = dict(num_steps=40, num_chains=2, thin=2, seed=8)
    base = sgmc.sgld(1e-4, batch_size=50)
    cold = _quiet(post, sgmc.replica_exchange(base, temperatures=[1.0, 3.0]), mu, **kw)
    every = _quiet(post, sgmc.replica_exchange(base, temperatures=[1.0, 3.0], output="all"),
                   mu, **kw)
    assert cold.info["energy"].shape == (2, 20)
    assert every.info["energy"].shape == (2, 20, 2)  # per replica, at temperature 1's U
    np.testing.assert_allclose(every.info["energy"][..., 0], cold.info["energy"], rtol=1e-5)
    assert every.diagnose().tests == 12  # 2 chains × 3 statistics × 2 replicas
    objective = sgmc.Objective(lambda x, d: jnp.sum((x - d) ** 2),
                               data=np.random.default_rng(0).normal(size=(50, 2)))
    res = _quiet(objective, sgmc.sgld(1e-2, batch_size=10), jnp.zeros(2), num_steps=30)
    assert "energy" in res.info and "log_prior" not in res.info and "loglik" not in res.info


# --------------------------------------------------------------- the warning


def test_far_start_fires_and_burn_in_silences_it(regression):
    post, mu, cov = regression
    far = mu + 30 * np.sqrt(np.diag(cov)).astype(np.float32)
    smp = sgmc.sgld(5e-5, batch_size=50)
    with pytest.warns(sgmc.SamplingWarning, match=r"not stationary: .* changes by .* ± .*z = "):
        sgmc.sample(post, smp, far, num_steps=400, num_chains=4, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sgmc.SamplingWarning)
        res = sgmc.sample(post, smp, far, num_steps=2400, burn_in=400, num_chains=4, thin=2,
                          seed=0)
        sgmc.sample(post, smp, far, num_steps=400, num_chains=4, seed=0, diagnose=False)
    assert res.diagnose().verdict == "ok"


def test_false_alarm_rate_on_exact_stationary_runs(regression):
    # Full-batch SGLD on a conjugate regression is a linear Gaussian recursion: started from
    # its exact stationary law N(μ, C_h) (C_h the discrete Lyapunov solution), every chain
    # is stationary. 250 runs of 4 chains × 400 draws (τ ≈ 7 draws for the energy): measured
    # 0.5 % false alarms (1,500 runs), 1.0 % at 100 draws, 0 at 2,000; the bound below is
    # 8 / 250 = 3.2 % (P ≤ 1e-3 at a true rate of 1 %). Ignoring autocorrelation (m = 1
    # batches, break-check) gives ~40 % here.
    post, mu, cov = regression
    a = np.linalg.inv(cov)
    h = 0.1 / np.linalg.eigvalsh(a).max()
    c_h = predicted_cov("sgld", a, np.zeros((5, 5)), h)
    runs = 250
    starts = np.random.default_rng(9).multivariate_normal(mu, c_h, size=4 * runs)
    res = _quiet(post, sgmc.sgld(h), starts.astype(np.float32), num_steps=2000,
                 num_chains=4 * runs, thin=5, seed=9, init_per_chain=True)
    alarms = sum(not st.diagnose({k: res.info[k][4 * r:4 * r + 4] for k in KEYS}).ok
                 for r in range(runs))
    assert alarms <= 8, f"{alarms} false alarms in {runs} stationary runs"


@pytest.mark.data
def test_silent_on_a_posteriordb_regression_sampled_right():
    # kidiq (N = 434): the tuned full-batch SGHMC of tests/tune/test_warmup_posteriordb.py, 10,000
    # kept steps after 2,000 of burn-in, matches Stan's reference (|z| ≤ 0.1, |r − 1| ≤ 0.1)
    # and is silent (measured: largest z = 1.8 against 3.71). About 35 s, the warm-up 24 s.
    from test_posteriordb_models import needs_posteriordb

    from sgmc.lab.experiments import warmup_comparison as wc

    if needs_posteriordb.args[0]:
        pytest.skip(needs_posteriordb.kwargs["reason"])
    post, ref, init = wc.posteriordb_case("kidiq-kidscore_momiq")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        tuned, start = sgmc.warmup(post, sgmc.sghmc(integrator="splitting"), init)
    with warnings.catch_warnings():
        warnings.simplefilter("error", sgmc.SamplingWarning)
        res = sgmc.sample(post, tuned, start, num_steps=12_000, burn_in=2_000, num_chains=4,
                          thin=10, seed=0)
    assert wc.judge(res.samples, ref)["ok"]
    assert res.diagnose().verdict == "ok"


# --------------------------------------------------------------- the issue's network


def _digits_posterior():
    pytest.importorskip("sklearn")
    nn = pytest.importorskip("flax.linen")
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    train = order[:int(0.7 * len(y))]  # the 70 % training split
    mean, sd = x[train].mean(0), x[train].std(0)
    x = ((x - mean) / np.where(sd > 0, sd, 1.0)).astype(np.float32)

    class MLP(nn.Module):
        @nn.compact
        def __call__(self, v):
            return nn.Dense(10)(nn.relu(nn.Dense(100)(v)))

    net = MLP()

    def loglik(params, datum):
        return jax.nn.log_softmax(net.apply(params, datum["x"]))[datum["y"]]

    def logprior(params):  # N(0, 1) on every weight
        return sum(-0.5 * jnp.sum(p**2) for p in jax.tree.leaves(params))

    post = sgmc.Posterior(loglik, logprior, {"x": x[train], "y": y[train].astype(np.int32)})
    return post, net.init(jax.random.key(0), x[:1])


#: The step the issue's warm-up (commit 1677e27) chose for the digits MLP, in the units of its
#: diagonal preconditioner; later warm-ups keep that preconditioner and friction (whitened
#: curvature [0.0985, 98.5], D = 0.63) but measure the gradient noise farther out and pick
#: a much smaller step (4.7e-8 at c901ab7, 3.7e-6 at 5bf44bc), at which the chains barely
#: leave the mode in these runs' lengths.
ISSUE_STEP = 1.6535e-3


@pytest.mark.slow
def test_digits_network_fires_at_the_issues_step_and_is_silent_at_h_over_8():
    # The issue's run: warm-up, then 4,000 steps of 4 chains from its start (the mode) at
    # the warm-up's step h. Measured: the log prior falls from -116 to -5,300 and the loglik
    # per datum from -0.004 to -0.10, z = -3.95 against z* = 3.71 (at 2h the weights grow
    # without bound: log prior -2e5 after 4,000 steps, -1.5e22 after 36,000, a runaway,
    # z = -inf). At h/8 the log prior settles near -3,750 after ~10,000 steps but mixes
    # slowly (τ ≈ 4,000 steps): after a burn-in of 16,000 steps, 20,000 kept steps of 2
    # chains are silent (largest z = 2.9 against 3.53). The drift test sees transients and
    # growth, not the bias of a chain that is stationary at the wrong place (h after its own
    # burn-in is silent too). About 40-80 s on 2 cores, the warm-up 11-45 s of it.
    t0 = time.perf_counter()
    post, init = _digits_posterior()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # warm-up's λ_min ≤ 0 at a network
        # The issue's warm-up: a diagonal preconditioner (then the default for networks) and
        # no self-check (which would halve a biased step: the drift test is what is tested).
        tuned, start = sgmc.warmup(post, sgmc.sghmc(batch_size=100, integrator="splitting"),
                                   init, preconditioner="diagonal", check=False)
    h = ISSUE_STEP
    issue = sgmc.pytree.replace(tuned, step_size=sgmc.schedules.constant(h))
    with pytest.warns(sgmc.SamplingWarning, match="not stationary"):
        loud = sgmc.sample(post, issue, start, num_steps=4000, num_chains=4, thin=10, seed=0,
                           store_draws=False)
    small = sgmc.pytree.replace(tuned, step_size=sgmc.schedules.constant(h / 8))
    with warnings.catch_warnings():
        warnings.simplefilter("error", sgmc.SamplingWarning)
        quiet = sgmc.sample(post, small, start, num_steps=36_000, burn_in=16_000,
                            num_chains=2, thin=10, seed=0, store_draws=False)
    assert quiet.diagnose().verdict == "ok"
    print(f"h = {h:.3g} (the warm-up's today: {float(tuned.step_size(0)):.3g}): worst z = "
          f"{loud.diagnose().worst['z']:.2f}; h/8: {quiet.diagnose().worst['z']:.2f}; "
          f"{time.perf_counter() - t0:.0f} s")
