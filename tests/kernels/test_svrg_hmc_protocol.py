"""The SVRG-HMC reproductions' protocol (sgmc.lab.experiments.svrg_hmc / svrg_hmc_bnn), unit-sized:
passes of sampling exclude the initial snapshot/table pass, the samplers start from p₀ = 0,
the step grid reaches past the Euler stability limit and a diverging grid point is recorded,
not raised; the BNN's evaluation accounting."""

import math

import numpy as np
import pytest

from sgmc import models
from sgmc.lab.experiments import svrg_hmc as S
from sgmc.lab.experiments import svrg_hmc_bnn as B

N, D = 200, 3


@pytest.fixture(scope="module")
def problem():
    X, y, _ = models.synthetic_linear_data(N, D, seed=0)
    return models.linear_regression(X, y), X, y


def test_passes_of_sampling_exclude_the_initial_pass(problem):
    """After '1 pass' the VR samplers must have sampled a pass's worth of steps: counted from
    the end of the initial snapshot (SVRG) or table (SAGA) pass. With the initial pass
    counted (the old accounting) SVRG-HMC had taken ~1 step (and at most n/(3b)) by then."""
    post = problem[0]
    s = S.Settings(passes=2.0, h_ld=(), h_hmc=(), friction_h=(), seeds=1, checkpoints=40,
                   datasets={})
    K = N // S.BATCH
    for name in ("SVRG-HMC", "SAGA-HMC", "SGHMC"):
        res = S._run(post, name, 1e-3, 100.0, N, s, chains=1, seed=0)
        total = res.data_passes[0]
        passes = S.sampling_passes(name, N, total)
        assert np.allclose(total - passes, 1.0 if name != "SGHMC" else 0.0)
        assert passes[-1] >= s.passes - 1e-9  # the run reaches the horizon of sampling
        steps = res.info["step"][int(np.searchsorted(passes, 1.0 - 1e-9))]
        # one pass of sampling: K steps of b for SAGA/SGHMC, 2b per step + a snapshot per K
        # steps for SVRG (about K/2 steps: 2b·t + n·(⌈t/K⌉ − 1) ≥ n)
        assert steps >= (K // 2 if name.startswith("SVRG") else K), (name, steps)
        if name != "SGHMC":
            old = res.info["step"][int(np.searchsorted(total, 1.0 - 1e-9))]
            assert old <= 2 * K // 10, (name, old)  # what "1 pass" meant before: barely begun


def test_steps_for_svrg_counts_the_later_snapshots():
    n, K = 1000, 100
    t = S.steps_for("SVRG-HMC", n, 1.0)
    cost = lambda t: 2 * S.BATCH * t + n * (math.ceil(t / K) - 1)
    assert cost(t) >= n > cost(t - 1)
    assert S.steps_for("SGHMC", n, 1.0) == K == S.steps_for("SAGA-LD", n, 1.0)


def test_hmc_samplers_start_from_zero_momentum():
    for name in ("SGHMC", "SVRG-HMC", "SAGA2nd-HMC"):
        assert S.make_sampler(name, 1e-3, 10.0, N).dynamics.init_momentum == "zero"


def test_euler_limit_and_the_grid_reaches_past_it():
    # the formula against the spectral radius of the Euler iteration on U = θ²/2 (λ = 1)
    for r in (0.1, 0.3, 0.9):
        lim = S.euler_limit(r)
        for h, stable in ((0.98 * lim, True), (1.02 * lim, False)):
            D = r / h
            M = np.array([[1 - h * h, h * (1 - D * h)], [-h, 1 - D * h]])
            assert (max(abs(np.linalg.eigvals(M))) < 1) == stable, (r, h)
    for s in (S.FULL, S.QUICK):
        assert max(s.h_hmc) > S.euler_limit(min(s.friction_h))
        assert all(r < 1 for r in s.friction_h)  # D·h < 1: the paper's condition
        lam = 400.0
        hmc = S.grid("SVRG-HMC", lam, s)
        assert max(h for h, _ in hmc) * math.sqrt(lam) == pytest.approx(max(s.h_hmc))
        assert hmc == S.grid("SVRG2nd-HMC", lam, s)


def test_a_diverging_grid_point_is_recorded_not_raised(problem):
    post, X, y = problem
    s = S.Settings(passes=1.0, h_ld=(), h_hmc=(), friction_h=(), seeds=2, checkpoints=10,
                   datasets={})
    lam = float(np.linalg.eigvalsh(X.T @ X + np.eye(D)).max())
    h = 5.0 / math.sqrt(lam)  # far past the Euler limit: the state overflows
    vals, diverged = S.final_values("regression", post, "SGHMC", h, 0.3 / h, N, s, 1, X, y)
    assert vals.shape == (2,)
    assert not S.is_stable("regression", vals, S.baseline("regression", y)).any()
    assert diverged or not np.isfinite(vals).all() or (vals > 1e6).all()
    # a small step is stable and beats θ = 0
    vals, diverged = S.final_values("regression", post, "SGHMC", 0.1 / math.sqrt(lam),
                                    0.3 * math.sqrt(lam) / 0.1, N, s, 1, X, y)
    assert not diverged
    assert S.is_stable("regression", vals, S.baseline("regression", y)).all()


def test_is_stable():
    assert S.is_stable("regression", [0.5, np.nan, 2.0, np.inf], 1.0).tolist() == [
        True, False, False, False]
    assert S.is_stable("classification", [-0.5, -0.8], math.log(0.5)).tolist() == [True,
                                                                                   False]


def test_bnn_evaluation_accounting():
    """An SVRG step costs 2b per-example gradients (the batch at θ and at the anchor) plus n
    every K = n/b steps: 3b on average, 3 per example in the batch; SGHMC costs b."""
    n = 1000
    assert S.evals_per_step("SVRG-HMC", n) == 3 * S.BATCH
    assert S.evals_per_step("SGHMC", n) == S.BATCH
    acc = B.accounting(n)
    assert acc["SVRG-HMC"]["evals_per_example_in_batch"] == 3.0
    assert acc["SGHMC"]["evals_per_example_in_batch"] == 1.0
    # the epoch axis (minibatch sweeps, steps·b/n) against the evaluation axis
    steps = np.array([100, 200, 300])
    assert np.allclose(B.epochs(steps, n), steps * S.BATCH / n)


# --- the demo's SVRG-HMC section ------------------------------------------------------------

def test_moment_error_penalises_a_chain_that_does_not_move():
    from sgmc.lab.demo import _moment_errors

    mu, sd = np.array([1.0, -2.0]), np.array([0.5, 2.0])
    frozen = np.broadcast_to(mu, (1, 100, 2))  # a warm start that never moves
    assert np.allclose(_moment_errors(frozen, mu, sd), 1.0)
    exact = mu + sd * np.random.default_rng(0).standard_normal((1, 20000, 2))
    assert _moment_errors(exact, mu, sd)[0, -1] < 0.03
    wide = mu + 2 * sd * np.random.default_rng(1).standard_normal((1, 20000, 2))
    assert abs(_moment_errors(wide, mu, sd)[0, -1] - 1.0) < 0.05  # over-dispersed by 2


def test_demo_section_judges_at_passes_of_sampling_from_the_mode(monkeypatch, tmp_path):
    """The section starts at the mode and judges after one pass *of sampling*: SVRG has
    taken ~K/2 steps there (with the snapshot counted it had taken ~1)."""
    pytest.importorskip("arviz")
    pytest.importorskip("matplotlib")
    from sgmc.lab import demo

    settings = dict(demo._svrg_settings(True), N=500, chains=2, draws=20, passes=2.0)
    monkeypatch.setattr(demo, "_svrg_settings", lambda quick: settings)
    sec = demo.section_svrg_hmc(str(tmp_path), True, 0)
    assert len(sec.claims) == 3
    K = settings["N"] // settings["batch"]
    first = sec.claims[0].measured
    assert first["SVRG-HMC"]["steps"] >= K // 2
    assert first["SVRG-LD"]["steps"] >= K // 2
    assert sec.claims[2].measured["SGHMC"]["steps"] >= K
    assert any("warm start at the mode" in d for d in sec.claims[0].deviations)
    assert (tmp_path / "demo_svrg_hmc.png").exists()
