"""Warm-up without a hand-chosen step size matches trusted answers; the old hand rule does not,
at the same cost (issue 20, item 3; docs/tuning.md).

Each case runs :func:`sgmc.lab.experiments.warmup_comparison.run_case`: ``sgmc.warmup`` on SGHMC
(splitting integrator; step size and friction unset), then 10,000 sampling steps x 4 chains
from the warm-up's mode; against it, the isotropic sampler at the old advice of
docs/getting-started.md (SGHMC ``h = 1e-3 / sqrt(λ_max)``, ``D = sqrt(λ_min)``; SGLD
``h = 1e-3 / λ_max``; λ from the Hessian at the mode) started at the same mode with the same
chains and the same total data passes (the tuned run's warm-up plus sampling passes).

Criterion, on the second half of each run, for every scalar parameter:
``|z| = |mean − mean_ref| / sd_ref ≤ 0.1`` and ``|sd / sd_ref − 1| ≤ 0.1``. It is honest only if
the Monte Carlo error is well below 0.1: the test also requires every SE(z) and SE(r) (reference
error included, :func:`sgmc.lab.experiments.posteriordb.compare`) to be ≤ 0.04, so 0.1 is at least
2.5 SE (the runs give SE(z) 0.015-0.035, SE(r) 0.01-0.025). The tuned runs' worst |r − 1| is
mostly warm-up's own predicted deflation (budget 10 %: the splitting integrator at its step
shrinks the variance ~5 % in practice), the rest Monte Carlo error.

The untuned run must fail the same criterion (at least one parameter outside), both judged by
the verdict rule too (:func:`sgmc.lab.experiments.warmup_comparison.claims`). Each case takes
15–30 s on 2 cores; all run by default.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from test_posteriordb_models import needs_posteriordb

from sgmc.lab.experiments import verdict as V
from sgmc.lab.experiments import warmup_comparison as wc

MAX_SE = 0.04
REGRESSIONS = ("mesquite-logmesquite_logvash", "kidiq-kidscore_momiq", "sblri-blr",
               "earnings-logearn_interaction_z")
EIGHT = "eight_schools-eight_schools_noncentered"


@functools.cache
def _row(name: str, kind: str) -> dict:
    return wc.run_case(name, kind)


def _ok(run: dict, label: str) -> None:
    assert run["max_se_z"] <= MAX_SE and run["max_se_r"] <= MAX_SE, (
        "Monte Carlo error too large for an honest 0.1 criterion", label, run)
    assert run["ok"], (f"{label}: max |z| {run['max_z']:.3f} ({run['param_z']}), max |r - 1| "
                       f"{run['max_r1']:.3f} ({run['param_r']})")
    assert run["passes_to_accuracy"] is not None


def _check(row: dict) -> None:
    runs = row["runs"]
    t, u = runs["tuned"], runs["untuned"]
    print(wc.table([row]))
    print(t["report"])
    _ok(t, "tuned")
    # the same budget, the same chains, the same start; only the tuning differs
    assert u["total_passes"] >= 0.99 * t["total_passes"]
    assert u["total_passes"] <= 1.05 * t["total_passes"] + 10
    assert not u["ok"], ("untuned at the old advice met the criteria", u)
    assert u["passes_to_accuracy"] is None
    # ... and by the verdict rule (2 SE): the tuned claim holds, and so does "untuned fails"
    verdicts = [c.verdict for c in wc.claims([row])]
    assert verdicts == [V.HOLDS, V.HOLDS], [c.lines() for c in wc.claims([row])]


@pytest.mark.parametrize("kind", ["sghmc", "sgld"])
def test_synthetic_regression_condition_1e4(kind):
    _, ref, exact = wc.gaussian_regression()
    assert 0.9e4 < exact["condition"] < 1.1e4
    err = (ref["theta"].mean(axis=(0, 1)) - exact["mean"]) / np.sqrt(np.diag(exact["cov"]))
    assert np.abs(err).max() < 0.03  # 40,000 exact draws: SE 0.005
    row = _row(wc.SYNTHETIC, kind)
    assert row["runs"]["tuned"]["preconditioner"] == "dense"
    assert row["runs"]["untuned"]["lam_max"] / row["runs"]["untuned"]["lam_min"] == \
        pytest.approx(1e4, rel=0.05)
    _check(row)
    # The step-size rules without the preconditioner are not enough at condition 1e4.
    assert not row["runs"]["tuned, P = I"]["ok"]


@pytest.mark.parametrize("name", REGRESSIONS)
@pytest.mark.data
@needs_posteriordb
def test_warmup_matches_stan_reference(name):
    _check(_row(name, "sghmc"))


@pytest.mark.data
@needs_posteriordb
def test_eight_schools_needs_the_self_check():
    """Not a regression: τ's posterior is far from Gaussian, so the Gaussian bound is not
    enough at the rule's step (measured: |z(τ)| ≈ 0.45 with ``check=False``); warm-up's
    self-check halves the step until coupled pilots at h and h/2 agree, and warmup + sample
    then meet the criterion (issue 31)."""
    row = _row(EIGHT, "sghmc")
    print(wc.table([row]))
    print(row["runs"]["tuned"]["report"])
    _ok(row["runs"]["tuned"], "tuned (self-checked)")
    assert not row["runs"]["tuned, no self-check"]["ok"]
    assert not row["runs"]["untuned"]["ok"]
