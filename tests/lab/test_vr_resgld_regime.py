"""`sgmc reproduce vr-resgld-regime` (issue 36, item 3): the rule-of-thumb fit recovers a
known power law and its crossing; the claims are judged by the rule from the cells (a table
where the control variate loses at m = 20 gives "holds" to the claims that say so, one
where it wins gives "does not hold"); the JSON claims are well formed. The smoke run itself
is in test_experiments.py's registry-wide smoke test. Checked to fail with the fit's
intercept sign flipped and with the claim's effect sign reversed."""

from __future__ import annotations

import math

import numpy as np

from sgmc.lab.experiments import registry
from sgmc.lab.experiments import verdict as V
from sgmc.lab.experiments import vr_resgld_regime as vr


def _cells(lose_at_20: bool = True):
    """A synthetic grid: ratio = (x / 1.2)², SE 5 %; swaps favour VR except at m = 20, h =
    3e-4 (``lose_at_20``)."""
    cells = []
    for h in (3e-5, 3e-4):
        for m, x in ((1, 0.1 if h < 1e-4 else 0.4), (5, 0.2 if h < 1e-4 else 0.9),
                     (20, 0.5 if h < 1e-4 else 1.8)):
            ratio = (x / 1.2) ** 2
            if not lose_at_20 and m == 20:
                ratio = 0.5
            swaps_vr = 400.0 if (lose_at_20 and m == 20 and h > 1e-4) else 600.0
            cells.append({"h": h, "gap": 40.0, "m": m, "ratio": ratio,
                          "ratio_se": 0.05 * ratio, "ratio_plain_mean": 0.1 * ratio,
                          "x": x, "x_se": 0.01, "d": x, "g": 1.0, "swaps_vr": swaps_vr,
                          "swaps_vr_se": 20.0, "swaps_plain": 500.0, "swaps_plain_se": 20.0,
                          "swaps_diff": swaps_vr - 500.0,
                          "swaps_diff_se": V.diff_se(20.0, 20.0), "w_vr": 0.2,
                          "w_vr_se": 0.05, "w_plain": 0.2, "w_plain_se": 0.05})
    return cells


def test_fit_recovers_the_power_and_the_crossing():
    b, b_se, x_star, _ = vr._fit(_cells())
    assert abs(b - 2.0) < 1e-6 and b_se > 0
    assert math.isclose(x_star, 1.2, rel_tol=1e-6)
    assert all(math.isnan(v) for v in vr._fit(_cells()[:1]))


def test_claims_follow_the_cells(capsys):
    res = {"chains": 8, "steps": 4000, "cells": _cells()}
    claims = vr._report(res, None)
    for c in claims:
        V.check_claim_dict(c)
    by = {c["claim"].split(":", 1)[1].strip()[:40]: c["verdict"] for c in claims}
    assert all(v == V.HOLDS for v in by.values()), by
    assert math.isclose(res["fit"]["x_star"], 1.2, rel_tol=1e-6)

    res = {"chains": 8, "steps": 4000, "cells": _cells(lose_at_20=False)}
    verdicts = [c["verdict"] for c in vr._report(res, None)]
    # m = 20 no longer loses: "swaps less" and "CV variance exceeds" do not hold
    assert verdicts[1] == verdicts[2] == V.NOT_HOLD
    assert "vr-resgld-regime" in registry()


def test_cell_means_and_ses():
    vr_ = {"ratio": np.array([1.0, 3.0]), "ratio_plain_mean": np.array([0.1, 0.3]),
           "d": np.array([1.0, 2.0]), "g": np.array([1.0, 1.0]),
           "swaps": np.array([10.0, 20.0]), "weight": np.array([0.5, 0.5])}
    plain = {"swaps": np.array([5.0, 5.0]), "weight": np.array([0.4, 0.6])}
    row = vr._cell(vr_, plain)
    assert row["ratio"] == 2.0 and row["ratio_se"] == 1.0
    assert row["x"] == 1.5 and row["swaps_diff"] == 10.0
    assert math.isclose(row["swaps_diff_se"], 5.0)
