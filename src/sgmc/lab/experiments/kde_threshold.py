"""The threshold check of ``sgdxsgld-kde``: the exchange threshold t0 against the online KDE's
landscape (Dong & Tong (2021), JMLR 22: Alg. 2 and Sec. 2.6 for t0, Sec. 3.1.3 for the KDE).

SGD×SGLD exchanges only when F̂(Y) < F̂(X) − t0 (Alg. 2), with F̂ a minibatch mean of Θ terms,
so t0 is in the units of F itself (a density, here). The paper asks two things of t0:

* Sec. 2.6 and Theorem 4: 0 < t0 ≤ r0/8, with r0 the depth of the star-convex sub-level set
  B0 = {F ≤ F* + r0} around the unique global minimiser (Assumption 4). B0 can hold no other
  local minimum, so r0 ≤ (runner-up local minimum − F*) and t0 ≤ that gap / 8;
  "heuristically, it can be chosen as a generic small constant such as 10^-2";
* Sec. 2.5: t0 "larger than the typical size of approximation errors of F̂_n", so that an
  exchange is not a minibatch fluctuation.

And once X sits in a local minimum less than t0 above F*, no exchange can pass the threshold
(F̂(Y) ≥ F* up to noise), so X keeps that well: every local minimum within t0 of F* is a trap.

:func:`kde_landscape` measures these on the KDE F̂(x) = −(1/N) Σ_j κ_σ(x, s_j) + L(x)
(float64 NumPy on the same draws as :func:`sgmc.objectives.kde_wells`): its local minima
(gradient descent from the 25 centres, merged within 0.05), F̂* and x̂*, the runner-up gap
and the paper's bound gap/8, the minima within t0 of F̂*, where gradient descent from
X0 = (0, 0) and from Y0 = (1, 1) ends (X takes Y's well at the first exchange), and the
minibatch noise: the SE of F̂ at x̂* and of F̂(trap) − F̂(x̂*) on one shared batch of Θ draws
(the comparison of Alg. 2 as :func:`sgmc.sgd_x_sgld` makes it), exactly, from the variance of
one term over the N draws (the batch indices are drawn with replacement).

:func:`threshold_runs` reruns SGD×SGLD (Alg. 2 with the paper's h = 0.1, γ = 1, Θ = 1000,
M_v = 5, X0 = (0, 0), Y0 = (1, 1)) at other thresholds, and :func:`heuristic_claim` judges
the paper's claim again at its own heuristic t0 = 10^-2 (Sec. 2.6), chosen before the run.
"""

from __future__ import annotations

import numpy as np

from sgmc import minimize, sgd_x_sgld
from sgmc.lab.experiments import verdict as V
from sgmc.objectives import KDE_VARIANCE, GaussianWells

__all__ = ["HEURISTIC_T0", "PAPER_T0", "heuristic_claim", "kde_landscape", "landscape_lines",
           "threshold_runs"]

#: The paper's threshold for the KDE (Sec. 3.1.3) and its heuristic "such as 10^-2" (Sec. 2.6).
PAPER_T0, HEURISTIC_T0 = 0.05, 0.01

#: GD on the KDE: a step below 2 / (largest curvature), which is ≈ w/(2π(0.1 + σ)²) ≤ 1.4
#: at the wells for σ ≥ 0.0144; at most _ITERS steps (the flat, merged wells are slow), until
#: no point moves by more than _TOL.
_STEP, _ITERS, _TOL = 0.5, 800, 1e-6


def _terms(x: np.ndarray, samples: np.ndarray, var: float) -> np.ndarray:
    """The N terms −κ_σ(x, s_j) at points x (..., 2) -> (..., N) (the regulariser L is 0 on
    [−1, 5]², where every minimum lies)."""
    d2 = np.sum((x[..., None, :] - samples) ** 2, axis=-1)
    return -np.exp(-d2 / (2.0 * var)) / (2.0 * np.pi * var)


def _descend(x: np.ndarray, samples: np.ndarray, var: float) -> np.ndarray:
    """Gradient descent on F̂ from every row of x (m, 2)."""
    x = np.array(x, np.float64)
    for _ in range(_ITERS):
        diff = x[:, None, :] - samples
        k = np.exp(-np.sum(diff ** 2, -1) / (2.0 * var)) / (2.0 * np.pi * var)
        move = _STEP * np.einsum("mn,mnd->md", k, diff) / (len(samples) * var)
        x = x - move
        if np.max(np.abs(move)) < _TOL:
            break
    return x


def kde_landscape(wells: GaussianWells, kernel_variance: float = KDE_VARIANCE,
                  num_samples: int = 10_000, seed: int = 0, batch_size: int = 1000,
                  threshold: float = 0.05) -> dict:
    """The KDE's depth, minima, trap and minibatch noise against the threshold t0 (module
    docstring). The draws are ``wells.sample(num_samples, seed)``, as in ``kde_wells``."""
    samples = wells.sample(num_samples, seed)
    var = float(kernel_variance)
    ends = _descend(np.vstack([wells.centers, [[0.0, 0.0], [1.0, 1.0]]]), samples, var)
    values = _terms(ends, samples, var).mean(-1)
    minima: list[tuple[float, np.ndarray]] = []
    for i in np.argsort(values[:-2]):
        if all(np.linalg.norm(ends[i] - x) > 0.05 for _, x in minima):
            minima.append((float(values[i]), ends[i]))
    f_star, x_star = minima[0]
    gap = minima[1][0] - f_star if len(minima) > 1 else float("inf")
    trap_x, trap_f = ends[-1], float(values[-1])
    t_star, t_trap = _terms(x_star, samples, var), _terms(trap_x, samples, var)
    return {
        "kernel_variance": var, "num_samples": num_samples, "batch_size": batch_size,
        "threshold": threshold, "f_star": f_star, "x_star": x_star.tolist(),
        "local_minima": [{"value": v, "x": x.tolist()} for v, x in minima],
        "runner_up_gap": gap, "paper_bound_r0_over_8": gap / 8.0,
        "depth_over_threshold": abs(f_star) / threshold,
        "minima_within_threshold": sum(v < f_star + threshold for v, _ in minima),
        "gd_from_x0": {"x": ends[-2].tolist(), "value": float(values[-2])},
        "gd_from_y0": {"x": trap_x.tolist(), "value": trap_f},
        "trap_above_f_star": trap_f - f_star,
        "noise_se_at_x_star": float(t_star.std() / np.sqrt(batch_size)),
        "noise_se_of_difference": float((t_trap - t_star).std() / np.sqrt(batch_size)),
    }


def landscape_lines(c: dict, label: str) -> list[str]:
    """The check, printed: depth, minima, trap, the paper's bound and the noise against t0."""
    t0 = c["threshold"]
    return [
        f"  {label}: F̂* = {c['f_star']:.4f} at ({c['x_star'][0]:.2f}, {c['x_star'][1]:.2f}); "
        f"{len(c['local_minima'])} local minima, runner-up {c['runner_up_gap']:.4f} higher "
        f"(paper: t0 ≤ r0/8 ≤ {c['paper_bound_r0_over_8']:.5f}); depth |F̂*| = "
        f"{c['depth_over_threshold']:.2f} t0",
        f"    GD from X0 = (0, 0) ends at F̂ = {c['gd_from_x0']['value']:.4f}, from Y0 = (1, 1) "
        f"at F̂ = {c['gd_from_y0']['value']:.4f} ({c['trap_above_f_star']:.4f} above F̂*); "
        f"{c['minima_within_threshold']} of {len(c['local_minima'])} minima lie within "
        f"t0 = {t0:g} of F̂* (traps: no exchange passes the threshold from there)",
        f"    minibatch noise (Θ = {c['batch_size']}): SE of F̂(x̂*) {c['noise_se_at_x_star']:.4f},"
        f" of F̂(Y0's well) − F̂(x̂*) on a shared batch {c['noise_se_of_difference']:.4f} "
        f"(t0 = {t0 / c['noise_se_of_difference']:.1f} of it)"]


def threshold_runs(objective, x_star, thresholds, reps: int, n_steps: int, seed: int,
                   tol: float = 0.25) -> list[dict]:
    """SGD×SGLD with the paper's settings but the threshold t0, for each t0: the success count
    #{‖X_n − x̂*‖ ≤ tol} at n = ``n_steps`` over ``reps`` replications, the mean number of
    exchanges and the mean F̂(X_n)."""
    rows = []
    for t0 in thresholds:
        res = minimize(objective, sgd_x_sgld(0.1, 1.0, 1000, float(t0), 5.0),
                       np.array([[0.0, 0.0], [1.0, 1.0]]), n_steps, reps, seed=seed,
                       init_axes="replica")
        near = np.linalg.norm(np.asarray(res.x) - np.asarray(x_star), axis=-1) <= tol
        rows.append({"t0": float(t0), "success": int(near.sum()), "replications": reps,
                     "steps": int(n_steps),
                     "exchanges": float(np.mean(res.exchanges)),
                     "final_value_mean": float(np.nanmean(res.value))})
    return rows


def heuristic_claim(row: dict, check: dict, high: float, deviations=(),
                    in_regime: bool = True) -> V.Claim:
    """The paper's claim "SGD×SGLD converges to the global minimum within 1e3 iterations"
    judged at t0 = :data:`HEURISTIC_T0` (``row`` from :func:`threshold_runs`; ``check`` the
    landscape at that t0): effect P − ``high`` with its binomial SE."""
    p, se = V.proportion(row["success"], row["replications"])
    return V.judge(
        f"SGD×SGLD converges to the global minimum with high probability within 1e3 "
        f"iterations, with the paper's heuristic threshold t0 = {row['t0']:g} (Sec. 2.6)",
        p - high, se, se_over=f"{row['replications']} replications (binomial)",
        effect_text=f"P(‖X_{row['steps']} − x̂*‖ ≤ 0.25) − {high} at t0 = {row['t0']:g}",
        measured={"success_rate": {"value": p, "se": se}, "exchanges": row["exchanges"]},
        paper="within 1e3 iterations (Fig. 11, one run, t0 = 0.05)",
        deviations=[f"t0 = {row['t0']:g}, the paper's heuristic 'such as 10^-2' (Sec. 2.6), "
                    f"not its t0 = {PAPER_T0:g} for this figure: t0 = {PAPER_T0:g} is "
                    f"{PAPER_T0 / abs(check['f_star']):.2f} of the KDE's depth, so every local "
                    "minimum traps X; at t0 = "
                    f"{row['t0']:g}, {check['minima_within_threshold']} of "
                    f"{len(check['local_minima'])} minima lie within t0 of F̂*, and t0 is "
                    f"{row['t0'] / check['noise_se_of_difference']:.1f} minibatch SEs of a "
                    "difference (the paper wants it above the noise, Sec. 2.5)",
                    f"t0 ≤ r0/8 (Thm. 4) would need t0 ≤ {check['paper_bound_r0_over_8']:.5f} "
                    f"(runner-up minimum {check['runner_up_gap']:.4f} above F̂*), far below "
                    "the minibatch noise: the theorem's regime is not reachable at Θ = 1000 "
                    "on these weights", *deviations], in_regime=in_regime)
