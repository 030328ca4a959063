"""The threshold check of ``sgdxsgld-kde`` (sgmc.lab.experiments.kde_threshold): the KDE's depth,
minima and minibatch noise are measured in the units the exchange rule compares with t0
(issue 36, item 4: the kernel parameter read as a variance, F̂ a batch mean)."""

import jax
import jax.numpy as jnp
import numpy as np

from sgmc.lab.experiments import verdict as V
from sgmc.lab.experiments.kde_threshold import heuristic_claim, kde_landscape
from sgmc.objectives import gaussian_wells, kde_wells

N = 500      # draws of the KDE (the experiment's 1e4 would take seconds)


def test_landscape_is_in_the_units_of_the_exchange_rule():
    """F̂* and the noise SEs of the check are those of sgmc's minibatch estimate F̂_B (what
    sgd_x_sgld compares with t0): a batch mean of the kernel with variance σ = 0.12. Reading σ as
    a standard deviation, or F̂ as a sum, moves F̂* or the SEs far outside these tolerances."""
    wells = gaussian_wells(297)
    c = kde_landscape(wells, 0.12, num_samples=N, seed=0, batch_size=100, threshold=0.05)
    kde = kde_wells(wells, num_samples=N, kernel_variance=0.12, seed=0)
    x_star = jnp.asarray(c["x_star"], jnp.float32)
    trap = jnp.asarray(c["gd_from_y0"]["x"], jnp.float32)
    np.testing.assert_allclose(float(kde.full_energy(x_star)), c["f_star"], rtol=1e-4)
    idx = jnp.asarray(np.random.default_rng(0).integers(0, N, (4000, 100)), jnp.int32)
    est = jax.vmap(lambda i: jnp.stack([kde.estimate_energy(x_star, i),
                                        kde.estimate_energy(trap, i)]))(idx)
    est = np.asarray(est, np.float64)
    assert abs(est[:, 0].mean() - c["f_star"]) < 4 * c["noise_se_at_x_star"] / np.sqrt(4000)
    np.testing.assert_allclose(est[:, 0].std(), c["noise_se_at_x_star"], rtol=0.1)
    np.testing.assert_allclose((est[:, 1] - est[:, 0]).std(), c["noise_se_of_difference"],
                               rtol=0.1)
    # The minima: x̂* is the deepest, the gap and the paper's bound follow from them.
    values = [m["value"] for m in c["local_minima"]]
    assert values == sorted(values) and values[0] == c["f_star"]
    assert c["runner_up_gap"] == values[1] - values[0]
    assert c["paper_bound_r0_over_8"] == c["runner_up_gap"] / 8
    assert c["trap_above_f_star"] >= 0


def test_traps_grow_with_the_threshold_and_the_kernel_variance_smooths():
    """Every minimum within t0 of F̂* is counted as a trap (a t0 above the depth traps all);
    the wider kernel (variance 0.12) merges wells that the standard-deviation reading keeps
    apart, and is shallower."""
    wells = gaussian_wells(297)
    wide = kde_landscape(wells, 0.12, num_samples=N, threshold=0.2)
    narrow = kde_landscape(wells, 0.0144, num_samples=N, threshold=0.001)
    assert wide["minima_within_threshold"] == len(wide["local_minima"])
    assert narrow["minima_within_threshold"] < len(narrow["local_minima"])
    assert len(wide["local_minima"]) < len(narrow["local_minima"])
    assert narrow["f_star"] < wide["f_star"] < 0


def test_heuristic_claim_is_judged_by_the_rule():
    check = {"f_star": -0.087, "minima_within_threshold": 3, "local_minima": [{}] * 6,
             "noise_se_of_difference": 0.012, "paper_bound_r0_over_8": 0.0002,
             "runner_up_gap": 0.0015}
    row = {"t0": 0.01, "success": 10, "replications": 50, "exchanges": 3.0, "steps": 1000}
    c = heuristic_claim(row, check, 0.9)
    p, se = V.proportion(10, 50)
    assert c.effect == p - 0.9 and c.se == se and c.verdict == V.NOT_HOLD
    assert any("t0 = 0.01" in d for d in c.deviations)
    V.check_claim_dict(c.to_dict())
