"""The VR-reSGLD experiments' verdict plumbing, without sampling (fast): a mode weight that is
the same in every chain (no chain crossed the barrier, sample SE 0) gets a real, conservative
SE rather than 0 (issue 36, item 2), and the classifier's full run holds both settings
(issue 36, item 1)."""

import math

import numpy as np
import pytest

from sgmc import models
from sgmc.lab.experiments import vr_resghmc_classifier as vc
from sgmc.lab.experiments import vr_resgld_mixture as vm
from sgmc.lab.experiments.verdict import NOT_HOLD, NOT_REGIME, check_claim_dict


def test_weight_se_bound_when_chains_agree():
    """All chains at w = 0: sqrt(μ̃(1 − μ̃)/k) with μ̃ = 1/(k + 2) (Bhatia–Davis, Laplace);
    chains that differ keep their sample SE."""
    se, over = vm._weight_se({"chains": 4, "mode_weight": 0.0, "mode_weight_se": 0.0})
    assert se == pytest.approx(math.sqrt((1 / 6) * (5 / 6) / 4))
    assert "Bhatia–Davis" in over
    se, _ = vm._weight_se({"chains": 32, "mode_weight": 1.0, "mode_weight_se": 0.0})
    assert se == pytest.approx(math.sqrt((1 / 34) * (33 / 34) / 32))
    assert vm._weight_se({"chains": 32, "mode_weight": 0.4, "mode_weight_se": 0.04}) == (
        0.04, "32 chains")


def _rows(names, draws, x, tau, steps, var=1.0):
    chains = draws.shape[0]
    return [vm.summary_row(n, draws, np.full(chains, 5.0), np.full(chains, var), x, tau, steps)
            for n in names]


def test_stuck_chains_give_a_real_se_and_a_verdict():
    """A full-size result whose cold replicas never leave the mode at 25 (every w(−5) = 0):
    the mode-weight claims carry an SE > 0, so the rule decides (the paper's-settings claim,
    −0.4 ± 0.19 over 4 chains, does not hold; τ₁ = 1, −0.1 ± 0.03 over 32 chains, does not
    hold either, outside the paper's regime) and every claim passes check_claim_dict."""
    x = models.synthetic_mixture_data(200, seed=0)
    rng = np.random.default_rng(0)
    stuck4 = 25.0 + rng.normal(size=(4, 50))
    stuck32 = 25.0 + rng.normal(size=(32, 50))
    mixed32 = np.where(rng.random((32, 50)) < 0.45, -5.0, 25.0) + rng.normal(size=(32, 50))
    res = {"paper_settings": {"N": 100_000, "steps": 100, "chains": 4, "rows": _rows(
               ("SGLD", "reSGLD F=100", "VR-reSGLD c=-1", "VR-reSGLD adaptive c"), stuck4,
               x, 10.0, 100)},
           "mixing": {"N": 1000, "n": 100, "chains": 32, "steps": 100, "rows": _rows(
               [m[0] for m in vm.METHODS], mixed32, x, 25.0, 100)},
           "sensitivity": {"fractions": (0.02, 0.2), "etas": (5e-4, 4e-3),
                           "variance": {"0.02/0.0005": 4.0, "0.02/0.004": 8.0,
                                        "0.2/0.0005": 0.4, "0.2/0.004": 0.8},
                           "variance_se": dict.fromkeys(
                               ("0.02/0.0005", "0.02/0.004", "0.2/0.0005", "0.2/0.004"), 0.01),
                           "chains": 8, "steps": 100, "c": -1},
           "tau1_one": {"rows": _rows(("reSGLD F=1", "VR-reSGLD c=-1", "VR-reSGLD adaptive c"),
                                      stuck32, x, 1.0, 100)}}
    claims = vm._report(res)
    for c in claims:
        check_claim_dict(c)
    weight = [c for c in claims if "w(−5)" in c["effect_definition"]]
    assert len(weight) == 4
    for c in weight:
        assert c["se"] > 0 and math.isfinite(c["se"]), c
    paper = next(c for c in weight if "N = 1e5" in c["claim"])
    assert paper["effect"] == pytest.approx(-0.4)
    assert paper["se"] == pytest.approx(math.sqrt((1 / 6) * (5 / 6) / 4))
    assert paper["verdict"] == NOT_HOLD
    tau1 = next(c for c in weight if "τ1 = 1" in c["claim"])
    assert tau1["verdict"] == NOT_REGIME and tau1["outcome"] == NOT_HOLD
    assert "Bhatia–Davis" in tau1["se_over"]


def test_classifier_full_run_has_both_settings(monkeypatch):
    """The full run holds `posterior` and `cold`; --quick, --smoke and SGMC_VR_POSTERIOR=0
    the paper's `cold` alone."""
    monkeypatch.delenv("SGMC_VR_POSTERIOR", raising=False)
    assert set(vc.run_settings()) == {"posterior", "cold"}
    assert set(vc.run_settings(quick=True)) == {"cold"}
    assert set(vc.run_settings(smoke=True)) == {"cold"}
    monkeypatch.setenv("SGMC_VR_POSTERIOR", "0")
    assert set(vc.run_settings()) == {"cold"}


def test_classifier_no_swaps_give_exact_zero_and_a_real_swap_se():
    """The posterior setting as measured: no replica method swaps, so the cold replicas of
    reSGHMC and VR-reSGHMC give SGHMC's predictions exactly. The paired gains are then 0 with
    the reason in ``exact`` (not a silent SE of 0), the swap claims get a binomial SE over the
    attempts (Laplace's rule) rather than a Poisson SE of 0, and every claim passes
    check_claim_dict."""
    rng = np.random.default_rng(0)
    base = {"accuracy": rng.integers(0, 2, 100).astype(float), "brier": rng.random(100),
            "ood_entropy": rng.random(100)}
    # (cVR-reSGHMC better on every score, so the smallest gain is an identical pair's)
    other = {"accuracy": np.maximum(base["accuracy"], rng.integers(0, 2, 100)),
             "brier": base["brier"] - 0.05, "ood_entropy": base["ood_entropy"] + 0.05}
    each = {"SGHMC": base, "reSGHMC": base, "VR-reSGHMC": base, "cVR-reSGHMC": other}
    rows = {}
    for name, e in each.items():
        rows[name] = {k: float(np.mean(v)) for k, v in e.items()}
        rows[name].update(log_likelihood=-0.2, ece=0.01, seconds=1.0,
                          se={k: 0.01 for k in e})
        if name != "SGHMC":
            rows[name].update(swaps=0, swaps_total=0, swaps_first_m=0, swap_attempts=800,
                              attempts_total=1600, energy_variance=4e6,
                              energy_variance_se=6e5, correction_nats=1e6)
    table = {"posterior": {"tau": [1.0, 5.0], "correction": 1.0, "annealed": False,
                           "methods": rows}}
    claims = vc._report(table, 20_000, 8, 100, 32, {"posterior": each})
    for c in claims:
        check_claim_dict(c)
    gains = [c for c in claims if "paired gain" in c["effect_definition"]]
    assert [c["exact"] is not None for c in gains] == [True, True, True]
    assert all(c["effect"] == 0 and c["verdict"] == NOT_REGIME for c in gains)
    swaps = [c for c in claims if "swaps(" in c["effect_definition"]]
    assert len(swaps) == 2
    for c in swaps:
        assert c["effect"] == 0 and c["se"] == pytest.approx(
            math.hypot(*[1600 * math.sqrt((1 / 1602) * (1601 / 1602) / 1600)] * 2))
