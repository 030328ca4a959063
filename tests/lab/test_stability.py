"""The replicated stability boundary (sgmc.lab.experiments.stability, issue 36) and the SVRG-HMC
"tolerates larger steps" claims judged on it (svrg_hmc, svrg_hmc_bnn)."""

import math

import numpy as np
import pytest

from sgmc import models
from sgmc.lab.experiments import stability as St
from sgmc.lab.experiments import svrg_hmc as S
from sgmc.lab.experiments import svrg_hmc_bnn as B
from sgmc.lab.experiments import verdict as V


@pytest.mark.parametrize("t", [1.37, 0.3, 1.0001, 5.0])
def test_boundary_brackets_the_threshold_to_the_resolution(t):
    calls = []

    def stable(h):
        calls.append(h)
        return h < t

    r = St.boundary(stable, 1.0)
    step = 2 ** (1 / St.RESOLUTION)
    assert r["censored"] is None
    assert r["boundary"] < t <= r["boundary"] * step * (1 + 1e-12)
    assert len(calls) == len(set(calls)) == len(r["probes"])  # each grid point once
    assert len(calls) <= 3 + St.RESOLUTION.bit_length()  # bracket, then bisection


def test_boundary_censored_outside_the_scan():
    up = St.boundary(lambda h: True, 1.0, octaves_up=2)
    assert up["censored"] == "above" and up["boundary"] == 4.0
    down = St.boundary(lambda h: False, 1.0, octaves_down=2)
    assert down["censored"] == "below" and down["boundary"] == 0.0
    dev = St.censoring_deviation({"A": [up, up], "B": [down, {"censored": None}]})
    assert len(dev) == 2 and "2 of 2 seeds is censored above" in dev[0]
    assert "1 of 2 seeds is censored below" in dev[1]


def test_replicate_fixes_the_seed_per_scan():
    seen = []
    recs = St.replicate(lambda h, r: seen.append(r) or h < 1 + r / 10, 1.0, [0, 3])
    assert [x["seed"] for x in recs] == [0, 3]
    assert recs[0]["boundary"] < 1.0 < recs[1]["boundary"] < 1.3
    assert set(seen) == {0, 3}


def test_paired_log2_ratio():
    m, se = St.paired_log2_ratio([2.0, 8.0], [1.0, 2.0])
    assert m == pytest.approx(1.5) and se == pytest.approx(0.5)
    assert St.paired_log2_ratio([1.0, 1.0], [1.0, 1.0]) == (0.0, 0.0)
    assert all(math.isnan(x) for x in St.paired_log2_ratio([0.0, 1.0], [1.0, 1.0]))
    assert all(math.isnan(x) for x in St.paired_log2_ratio([1.0], [1.0, 1.0]))


def _bnn_result(second, first, censored=None):
    rec = lambda bs: [{"boundary": b, "censored": censored, "probes": []} for b in bs]
    return {"dataset": "protein", "task": "regression",
            "samplers": {"SVRG2nd-HMC": {"boundary": rec(second), "largest_stable": 0.1},
                         "SVRG-HMC": {"boundary": rec(first), "largest_stable": 0.1}}}


def _step_claim(claims):
    (c,) = [c for c in claims if "larger step" in c.claim]
    return c


def test_bnn_larger_step_claim_is_judged_on_the_replicated_boundary():
    c = _step_claim(B.claims([_bnn_result([0.2, 0.25, 0.2, 0.3], [0.1, 0.1, 0.12, 0.1])], 4))
    a, b = np.log2([0.2, 0.25, 0.2, 0.3]), np.log2([0.1, 0.1, 0.12, 0.1])
    assert c.effect == pytest.approx(np.mean(a - b))
    assert c.se == pytest.approx(np.std(a - b, ddof=1) / 2) and c.se > 0
    assert c.verdict == V.HOLDS and c.se_over.startswith("4 seeds")
    V.check_claim_dict(c.to_dict())
    # every seed the same ratio: SE 0, not resolved, and the deviation says why
    c = _step_claim(B.claims([_bnn_result([0.2] * 4, [0.1] * 4)], 4))
    assert c.se == 0 and c.verdict == V.NOT_RESOLVED and B.NO_SE_DEVIATION in c.deviations
    # boundaries above the scan are bounds, and the claim says so
    c = _step_claim(B.claims([_bnn_result([16.0] * 2, [8.0, 16.0], "above")], 2))
    assert any("censored above" in d for d in c.deviations)
    # no scan (a smoke run): not judged
    c = _step_claim(B.claims([{"dataset": "protein", "task": "regression",
                               "samplers": {}}], 2))
    assert math.isnan(c.effect) and c.verdict == V.NOT_RESOLVED


@pytest.mark.slow  # ~8 s of CPU (one compiled program, ~20 short runs); 30 s under load
def test_svrg_hmc_boundary_scan_runs_one_chain_per_seed():
    """The regression experiment's scan on a small linear model: one record per seed (seeds
    apart from the grid's), each boundary bracketed, in the range a quadratic allows."""
    X, y, _ = models.synthetic_linear_data(200, 3, seed=0)
    post = models.linear_regression(X, y)
    lam = float(np.linalg.eigvalsh(X.T @ X + np.eye(3)).max())
    s = S.Settings(passes=1.0, h_ld=(), h_hmc=(), friction_h=(0.1,), seeds=4, checkpoints=4,
                   datasets={}, boundary_seeds=2)
    recs = S.boundary_scan("regression", post, "SVRG-HMC", 200, lam, s, 0, X, y,
                           S.baseline("regression", y))
    assert [r["seed"] for r in recs] == [1000, 1001]
    for r in recs:
        assert r["censored"] is None and 0.25 < r["boundary"] < 4.0, r
