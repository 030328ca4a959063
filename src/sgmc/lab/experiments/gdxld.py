"""Replica exchange for non-convex optimisation (Dong & Tong (2021), JMLR 22, Sec. 3).

- ``gdxld-wells``: the 25-well objective of eq. (7)–(8), GD×LD (Alg. 1) and nGD×LD with
  h = 0.1, γ = 1, X0 = (0,0), Y0 = (1,1). The paper's random weights are unknown, so the claim
  "100/100 replications within 1000 iterations" is measured over **many weight draws**
  (``gaussian_wells(seed=0..K−1)``: the distribution of the success rate
  P(‖X_1000 − x*‖ ≤ 1e-3)) and separately over the draws whose F* is **closest to the
  paper's F(x*) = −0.168** (screened from 2000 draws). The comparison with GD and LD
  (γ = 1, 0.01), the success curves and the sensitivity to γ and h use the draw of
  ``seed=2``.
- ``sgdxsgld-kde``: the online KDE of Sec. 3.1.3, F(x) = −(1/N) Σ_j κ_σ(x, s_j) + L(x) with
  κ_σ(x, s) = (2πσ)^{−1} exp(−‖x − s‖²/(2σ)), σ = 0.12 a *variance*, N = 1e4 draws from the
  mixture; SGD×SGLD (Alg. 2: Θ = 1000, t0 = 0.05, M_v = 5) against SGD and SGLD (γ = 0.01).
  The weights are the draw closest to the paper's F* (the paper's KDE has its global minimum
  at (3, 2), like the wells of Sec. 3.1.1, so it appears to use the same weights).
- ``gdxld-benchmarks``: Rastrigin and Griewank on [−5, 5]^d (Sec. 3.2), uniform random
  starts; the box is kept by clipping (projection) or by reflection at the faces, and the
  fraction of coordinates on a face is measured.

Every claim is judged by :mod:`sgmc.lab.experiments.verdict` (holds only beyond 2 SE).

``--smoke`` (a pipeline check; compiling is most of it): :data:`SMOKE` — 4 replications,
GD×LD alone on the wells (one compiled program, shared by the weight draws; one more for the
sensitivity runs), SGD×SGLD alone on the KDE (one more for the KDE's own minimiser): the
comparisons with the other methods are judged without them, NaN; one random and one
paper-like weight draw (each costs a search for its global minimum), 2 points per
sensitivity axis, and two benchmark cases (Rastrigin with clipping, Griewank with
reflection).
"""

from __future__ import annotations

import functools
import os

import jax.numpy as jnp
import numpy as np

from sgmc import Objective, gd, gd_x_ld, ld, minimize, sgd, sgd_x_sgld, sgld_opt
from sgmc.lab.experiments import Experiment
from sgmc.lab.experiments import verdict as V
from sgmc.lab.experiments._plot import pyplot, save
from sgmc.lab.experiments.kde_threshold import (
    HEURISTIC_T0,
    PAPER_T0,
    heuristic_claim,
    kde_landscape,
    landscape_lines,
    threshold_runs,
)
from sgmc.objectives import (
    WELL_VARIANCE,
    GaussianWells,
    gaussian_wells,
    griewank,
    kde_wells,
    rastrigin,
    wells_regulariser,
)

X0 = np.array([[0.0, 0.0], [1.0, 1.0]])
WELLS_SEED = 2
PAPER_F_STAR = -0.168          # Dong & Tong, Sec. 3.1.1: F(3, 2) = −0.168
SCREEN_POOL = 2000             # weight draws screened for the paper-like ones
HIGH = 0.9                     # "finds the global minimum with high probability": P ≥ 0.9
WEIGHTS_DEV = ("weights: the paper's random weights are unknown; ours are "
               "np.random.default_rng(seed).uniform(size=25) normalised to sum to 1")
#: The smoke runs' sizes (module docstring): replications, methods by experiment, weight
#: draws (random, paper-like), the sensitivity grids, the KDE's steps, the benchmark cases.
SMOKE = {"reps": 4, "wells": ("GDxLD",), "draws": (1, 1),
         "gammas": (1.0, 100.0), "hs": (0.05, 1.0), "sens_steps": 500,
         "kde": ("SGDxSGLD",), "kde_steps": 300,
         "bench": (("rastrigin", 2, "clip"), ("griewank", 2, "reflect")), "bench_steps": 1000}


# -- the wells with their weights as data (one compiled program for every weight draw) -------
def _well_term(x, row):
    """25 · (−w N(x; m, s I)) + L(x) for one well row = (w, m₁, m₂): the mean over the 25 rows
    is F(x) = −Σ_i w_i N(x; m_i, s I) + L(x) (eq. (7)–(8))."""
    w, m = row[0], row[1:]
    d2 = jnp.sum((x - m) ** 2)
    dens = jnp.exp(-d2 / (2.0 * WELL_VARIANCE)) / (2.0 * jnp.pi * WELL_VARIANCE)
    return -25.0 * w * dens + wells_regulariser(x)


def wells_as_data(wells: GaussianWells) -> Objective:
    """The 25-well objective as a data-dependent :class:`sgmc.Objective` whose data are the
    (weight, centre) rows, so that every weight draw runs in the same compiled program."""
    if len(wells.weights) != 25 or wells.variance != WELL_VARIANCE:
        raise ValueError("wells_as_data expects the 25 wells of variance 0.1")
    rows = np.concatenate([wells.weights[:, None], wells.centers], axis=1)
    return Objective(_well_term, data=rows.astype(np.float32))


@functools.lru_cache(maxsize=8)
def paper_like_seeds(num: int, pool: int = SCREEN_POOL) -> tuple[int, ...]:
    """The ``num`` weight seeds in [0, pool) whose F* is closest to the paper's −0.168
    (screened by F at the best centre, which is within 1e-4 of F*)."""
    approx = []
    for s in range(pool):
        w = gaussian_wells(s)
        approx.append(float(w.numpy_value(w.centers).min()))
    order = np.argsort(np.abs(np.asarray(approx) - PAPER_F_STAR), kind="stable")
    return tuple(int(s) for s in order[:num])


def _gd_numpy(wells: GaussianWells, x0, h: float, steps: int) -> np.ndarray:
    x = np.asarray(x0, np.float64)
    for _ in range(steps):
        x = x - h * wells.numpy_grad(x)
    return x


def _curves(res, x_star, tol):
    """(success count per trace point, mean F per trace point)."""
    near = np.linalg.norm(res.path - x_star, axis=-1) <= tol
    return near.sum(axis=0).tolist(), np.nanmean(res.trace, axis=0).tolist()


def _first(counts, steps, level):
    """First recorded step at which ``counts`` reaches ``level`` (None if never)."""
    hit = [s for c, s in zip(counts, steps, strict=True) if c >= level]
    return int(hit[0]) if hit else None


def _run_methods(objective, methods, n_steps, reps, every, seed, x_star, tol):
    rows = {}
    for name, method in methods:
        init, axes = (X0, "replica") if method.num_replicas == 2 else (X0[0], "none")
        res = minimize(objective, method, init, n_steps, reps, seed=seed, record_every=every,
                       record_path=True, init_axes=axes)
        succ, mean_f = _curves(res, x_star, tol)
        rows[name] = {"success": succ, "mean_value": mean_f,
                      "exchanges": float(np.mean(res.exchanges)), "wall_time": res.wall_time,
                      "path0": res.path[0].tolist()}
    return rows, (every * np.arange(1, n_steps // every + 1)).tolist()


def weight_draws(seeds, reps: int, n_steps: int = 1000, every: int = 50, seed: int = 0,
                 h: float = 0.1, gamma: float = 1.0, tol: float = 1e-3,
                 keep_path: bool = False) -> list[dict]:
    """GD×LD on the wells of every weight seed: per draw, the success count
    #{‖X_n − x*‖ ≤ tol} at every recorded n over ``reps`` replications, F*, the runner-up
    well's F, and whether GD from X0 = (0, 0) reaches x* within n_steps (and, with
    ``keep_path``, X of replication 0 at the recorded steps)."""
    out = []
    method = gd_x_ld(h, gamma)
    for s in seeds:
        wells = gaussian_wells(int(s))
        x_star, f_star = wells.global_minimum()
        res = minimize(wells_as_data(wells), method, X0, n_steps, reps, seed=seed,
                       record_every=every, record_path=True, init_axes="replica")
        succ = (np.linalg.norm(res.path - x_star, axis=-1) <= tol).sum(axis=0)
        at_centres = np.sort(wells.numpy_value(wells.centers))
        x_gd = _gd_numpy(wells, X0[0], h, n_steps)
        out.append({"weights_seed": int(s), "x_star": x_star.tolist(), "f_star": f_star,
                    "f_runner_up": float(at_centres[1]),
                    "success": succ.tolist(), "steps": res.trace_steps.tolist(),
                    "gd_reaches": bool(np.linalg.norm(x_gd - x_star) <= tol),
                    "gd_x": x_gd.tolist()})
        if keep_path:
            out[-1]["path0"] = res.path[0].tolist()
    return out


def _at(draw: dict, n: int) -> int:
    return draw["success"][draw["steps"].index(n)]


def run_wells(quick: bool = False, out: str = "sgmc-reproduce", seed: int = 0,
              data_root=None, smoke: bool = False) -> dict:
    h, gamma, tol, judged = 0.1, 1.0, 1e-3, 1000
    wells = gaussian_wells(WELLS_SEED)
    obj = wells_as_data(wells)
    x_star, f_star = wells.global_minimum()
    reps, n_steps, every = ((SMOKE["reps"], 1000, 50) if smoke else (20, 1000, 50) if quick
                            else (100, 10_000, 100))
    n_draws, n_paper = SMOKE["draws"] if smoke else (3, 2) if quick else (30, 10)
    draw_reps = reps if smoke else 20 if quick else 100
    detail = (f"{', '.join(SMOKE['wells'])} only, {reps} replications, {n_draws} + {n_paper} "
              f"weight draws, sensitivity γ ∈ {list(SMOKE['gammas'])} and h ∈ "
              f"{list(SMOKE['hs'])} over {SMOKE['sens_steps']} steps")
    if smoke:
        print(V.smoke_banner(detail))
    methods = [("GDxLD", gd_x_ld(h, gamma)), ("nGDxLD", gd_x_ld(h, gamma, swap=False)),
               ("GD", gd(h)), ("LD g=1", ld(h, 1.0)), ("LD g=0.01", ld(h, 0.01))]
    if smoke:
        methods = [m for m in methods if m[0] in SMOKE["wells"]]
    rows, steps = _run_methods(obj, methods, n_steps, reps, every, seed, x_star, tol)
    n_sens = SMOKE["sens_steps"] if smoke else 500 if quick else 1000
    gammas = (SMOKE["gammas"] if smoke else (0.1, 1.0, 100.0) if quick
              else (0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 100.0))
    hs = (SMOKE["hs"] if smoke else (0.05, 1.0, 1.5) if quick
          else (0.05, 0.1, 0.25, 0.5, 1.0, 1.5))
    sens_g, sens_h = {}, {}
    for g in gammas:
        res = minimize(obj, gd_x_ld(h, g), X0, n_sens, reps, seed=seed + 1,
                       init_axes="replica")
        sens_g[str(g)] = _sens_row(res, x_star, reps)
    for hh in hs:
        res = minimize(obj, gd_x_ld(hh, gamma), X0, n_sens, reps, seed=seed + 2,
                       init_axes="replica")
        sens_h[str(hh)] = _sens_row(res, x_star, reps)

    random_draws = weight_draws(range(n_draws), draw_reps, judged, 50, seed, h, gamma, tol)
    paper_seeds = paper_like_seeds(n_paper)
    paper_draws = weight_draws(paper_seeds, draw_reps, judged, 50, seed, h, gamma, tol)

    result = {"x_star": x_star.tolist(), "f_star": f_star, "weights_seed": WELLS_SEED,
              "replications": reps, "steps": steps, "rows": rows,
              "sensitivity": {"steps": n_sens, "gamma": sens_g, "h": sens_h},
              "weight_draws": {"replications": draw_reps, "judged_at": judged,
                               "random": random_draws, "paper_like": paper_draws,
                               "screened_pool": SCREEN_POOL}}
    print(f"GD×LD on the 25-well objective (weights of gaussian_wells(seed={WELLS_SEED}); "
          f"x* = ({x_star[0]:.4f}, {x_star[1]:.4f}), F(x*) = {f_star:.4f}; paper F(x*) = "
          f"{PAPER_F_STAR})\n")
    print(f"  {'method':<11}{'≤1e-3 @1e3':>12}{'@final':>9}{'E[F] final':>12}"
          f"{'exchanges':>11}{'first ≥90%':>12}")
    i1k = steps.index(judged)
    for name, r in rows.items():
        first = _first(r["success"], steps, 0.9 * reps)
        print(f"  {name:<11}{r['success'][i1k]:>9}/{reps:<3}{r['success'][-1]:>6}/{reps:<3}"
              f"{r['mean_value'][-1]:>11.4f}{r['exchanges']:>11.2f}{first!s:>12}")
    print(f"\n  sensitivity (GD×LD, P(‖X−x*‖ ≤ 1e-3) and E[F] after {n_sens} steps):")
    for label, table in (("γ", sens_g), ("h", sens_h)):
        print("   " + "  ".join(f"{label}={k}: {v['success']:.2f} / {v['mean_value']:.4f}"
                                for k, v in table.items()))
    for label, draws in (("random weight draws (seeds 0.."
                          f"{n_draws - 1})", random_draws),
                         (f"the {n_paper} draws of {SCREEN_POOL} closest to F* = "
                          f"{PAPER_F_STAR}", paper_draws)):
        rates = np.array([_at(d, judged) for d in draws]) / draw_reps
        print(f"\n  GD×LD over {label}, {draw_reps} replications each: P(‖X_{judged} − x*‖ "
              f"≤ 1e-3) mean {rates.mean():.3f}, quartiles "
              f"{np.quantile(rates, [0.25, 0.5, 0.75]).round(3).tolist()}, min "
              f"{rates.min():.2f}, draws with 100 %: {int(np.sum(rates == 1.0))}/{len(rates)}")
        print("   " + ", ".join(f"seed {d['weights_seed']}: F* {d['f_star']:.3f} "
                                f"{_at(d, judged)}/{draw_reps}" for d in draws))
    claims = _wells_claims(result, quick)
    result["claims"] = V.publish(V.smoke(claims, detail) if smoke else claims, "gdxld-wells")
    result["smoke"] = smoke
    path = _figure_wells(wells, result, out)
    result["figures"] = [path]
    return result


def _rates(draws, n, reps) -> np.ndarray:
    return np.array([_at(d, n) for d in draws], np.float64) / reps


def _wells_claims(result: dict, quick: bool) -> list[V.Claim]:
    rows, steps, reps = result["rows"], result["steps"], result["replications"]
    wd = result["weight_draws"]
    dr, judged = wd["replications"], wd["judged_at"]
    rnd, pap = wd["random"], wd["paper_like"]
    budget = ["quick run: few draws and replications"] if quick else []
    f_pap = [d["f_star"] for d in pap]
    pap_dev = (f"weights: the {len(pap)} draws of {wd['screened_pool']} (seeds "
               f"{[d['weights_seed'] for d in pap]}) whose F* is closest to the paper's "
               f"{PAPER_F_STAR} (F* in [{min(f_pap):.3f}, {max(f_pap):.3f}]); the paper's "
               "weights and its runner-up well are unknown")
    claims = []
    for label, draws, in_regime, dev in (
            (f"{len(rnd)} random weight draws", rnd, False,
             f"weights: {len(rnd)} random draws (seeds 0..{len(rnd) - 1}); F* = "
             f"{np.mean([d['f_star'] for d in rnd]):.3f} on average against the paper's "
             f"{PAPER_F_STAR} — the gap to the runner-up well, which decides the speed, "
             "differs from the paper's draw"),
            (f"the {len(pap)} draws closest to the paper's F*", pap, True, pap_dev)):
        rates = _rates(draws, judged, dr)
        m, se = V.mean_se(rates)
        claims.append(V.judge(
            f"GD×LD finds the global minimum with high probability within {judged} iterations"
            f" ({label})", m - HIGH, se, se_over=f"{len(draws)} weight draws × {dr} "
            "replications", effect_text=f"mean over draws of P(‖X_{judged} − x*‖ ≤ 1e-3) − "
            f"{HIGH}", measured={"success_rate": {"value": m, "se": se},
                                 "per_draw": {str(d["weights_seed"]): r
                                              for d, r in zip(draws, rates, strict=True)},
                                 "draws_at_100_percent": int(np.sum(rates == 1.0))},
            paper="100/100 replications within 1000 iterations (one weight draw, F* = −0.168)",
            deviations=[dev, f"threshold: 'high probability' read as P ≥ {HIGH}", *budget],
            in_regime=in_regime))
    r300 = _rates(pap, 300, dr)
    m3, se3 = V.mean_se(r300)
    claims.append(V.judge(
        "GD×LD finds the global minimum in fewer than 300 iterations (a typical run)",
        m3 - 0.5, se3, se_over=f"{len(pap)} weight draws × {dr} replications",
        effect_text="mean over draws of P(‖X_300 − x*‖ ≤ 1e-3) − 0.5 (the median run by 300)",
        measured={"success_rate_300": {"value": m3, "se": se3}},
        paper="< 300 iterations (Fig. 3, one run)", deviations=[pap_dev, *budget]))
    both = rnd + pap
    diff = [_at(d, judged) / dr - float(d["gd_reaches"]) for d in both]
    md, sed = V.mean_se(diff)
    claims.append(V.judge(
        "GD×LD beats GD, which gets stuck in a local minimum", md, sed,
        se_over=f"{len(both)} weight draws (paired)",
        effect_text=f"mean over draws of P_GD×LD(n = {judged}) − 1{{GD from (0,0) reaches x*}}",
        measured={"gd_reaches": int(sum(d["gd_reaches"] for d in both)),
                  "draws": len(both)},
        paper="GD stuck (Fig. 5)", deviations=[WEIGHTS_DEV, *budget]))
    seed2 = (f"weights of gaussian_wells(seed={result['weights_seed']}) only (F* = "
             f"{result['f_star']:.3f})")
    p = {k: r["success"][-1] / reps for k, r in rows.items()}
    se = {k: V.proportion(r["success"][-1], reps)[1] for k, r in rows.items()}
    p.setdefault("LD g=0.01", float("nan"))  # (not run in a smoke run)
    se.setdefault("LD g=0.01", float("nan"))
    claims.append(V.judge(
        "LD at γ = 0.01 is much slower than GD×LD (paper: ~1.2e5 iterations)",
        p["GDxLD"] - p["LD g=0.01"], V.diff_se(se["GDxLD"], se["LD g=0.01"]),
        se_over=f"{reps} replications (binomial)",
        effect_text=f"P_GD×LD − P_LD(γ=0.01) at n = {steps[-1]}",
        measured={k: {"value": p[k], "se": se[k]} for k in ("GDxLD", "LD g=0.01")},
        paper="LD (γ = 0.01) ~1.2e5 iterations; GD×LD < 300",
        deviations=[seed2, *budget]))
    i = steps.index(judged)
    pj = {k: r["success"][i] / reps for k, r in rows.items()}
    sej = {k: V.proportion(r["success"][i], reps)[1] for k, r in rows.items()}
    pj.setdefault("nGDxLD", float("nan"))  # (not run in a smoke run)
    sej.setdefault("nGDxLD", float("nan"))
    margin = 0.1
    claims.append(V.judge(
        "nGD×LD performs like GD×LD", margin - abs(pj["GDxLD"] - pj["nGDxLD"]),
        V.diff_se(sej["GDxLD"], sej["nGDxLD"]), se_over=f"{reps} replications (binomial)",
        effect_text=f"{margin} − |P_GD×LD − P_nGD×LD| at n = {judged} (equivalence margin "
                    f"{margin})",
        measured={k: {"value": pj[k], "se": sej[k]} for k in ("GDxLD", "nGDxLD")},
        paper="very similar (Fig. 9)", deviations=[seed2, *budget]))
    sens, n_sens = result["sensitivity"], result["sensitivity"]["steps"]
    g = {float(k): v for k, v in sens["gamma"].items()}
    inside = [k for k in g if 0.5 <= k <= 10]
    outside = [k for k in g if not 0.5 <= k <= 10]
    worst_in = min(inside, key=lambda k: g[k]["success"])
    best_out = max(outside, key=lambda k: g[k]["success"])
    claims.append(V.judge(
        "GD×LD is fast for 0.5 ≤ γ ≤ 10 and slower for γ too small or too large (h = 0.1)",
        g[worst_in]["success"] - g[best_out]["success"],
        V.diff_se(g[worst_in]["se"], g[best_out]["se"]), se_over=f"{reps} replications "
        "(binomial)", effect_text=f"min over γ ∈ [0.5, 10] − max over γ ∉ [0.5, 10] of "
        f"P(‖X_{n_sens} − x*‖ ≤ 1e-3) (γ = {worst_in:g} vs γ = {best_out:g})",
        measured={f"gamma={k:g}": {"value": v["success"], "se": v["se"]}
                  for k, v in g.items()},
        paper="fast for 0.5 ≤ γ ≤ 10 (Fig. 7)", deviations=[seed2, *budget]))
    hh = {float(k): v for k, v in sens["h"].items()}
    claims.append(V.judge(
        "at γ = 1, h = 1 converges faster than h = 0.05", hh[1.0]["success"]
        - hh[0.05]["success"], V.diff_se(hh[1.0]["se"], hh[0.05]["se"]),
        se_over=f"{reps} replications (binomial)",
        effect_text=f"P_h=1 − P_h=0.05 of ‖X_{n_sens} − x*‖ ≤ 1e-3",
        measured={f"h={k:g}": {"value": v["success"], "se": v["se"]} for k, v in hh.items()},
        paper="h = 1 the fastest, h = 0.05 the slowest of 0.05 ≤ h ≤ 1 (Fig. 8)",
        deviations=[seed2, *budget]))
    return claims


def _sens_row(res, x_star, reps) -> dict:
    near = np.linalg.norm(res.x - x_star, axis=-1) <= 1e-3
    return {"success": float(np.mean(near)), "se": V.proportion(int(near.sum()), reps)[1],
            "mean_value": float(np.nanmean(res.value))}


def _figure_wells(wells, result, out) -> str:
    plt = pyplot()

    path = os.path.join(out, "gdxld_wells.png")
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.8))
    grid = np.linspace(-1, 5, 121)
    xx, yy = np.meshgrid(grid, grid, indexing="ij")
    axes[0].contourf(xx, yy, wells.numpy_value(np.stack([xx, yy], -1)), 30, cmap="viridis")
    p = np.asarray(result["rows"]["GDxLD"]["path0"])
    axes[0].plot(p[:, 0], p[:, 1], "w.-", ms=3, lw=0.8)
    axes[0].plot(*result["x_star"], "r*", ms=10)
    axes[0].set(title=f"GD×LD: X, replication 0 (seed {result['weights_seed']})")
    reps = result["replications"]
    for name, r in result["rows"].items():
        axes[1].plot(result["steps"], np.asarray(r["success"]) / reps, label=name)
        axes[2].plot(result["steps"], r["mean_value"], label=name)
    axes[1].set(xscale="log", xlabel="n", ylabel="P(‖X_n − x*‖ ≤ 1e-3)")
    axes[2].set(xscale="log", xlabel="n", ylabel="E[F(X_n)]")
    axes[1].legend(fontsize=7)
    wd = result["weight_draws"]
    for key, color, label in (("random", "C0", "random draws"),
                              ("paper_like", "C3", "F* closest to −0.168")):
        d = wd[key]
        rates = _rates(d, wd["judged_at"], wd["replications"])
        axes[3].scatter([x["f_star"] for x in d], rates, c=color, s=14, label=label)
    axes[3].axvline(PAPER_F_STAR, color="grey", ls=":", lw=1)
    axes[3].set(xlabel="F* of the weight draw", ylabel=f"P(‖X_{wd['judged_at']} − x*‖ ≤ 1e-3)",
                title="GD×LD over weight draws", ylim=(-0.03, 1.03))
    axes[3].legend(fontsize=7)
    return save(fig, path)


def kde_weights_seed() -> int:
    """The weight draw of the KDE experiment: the one closest to the paper's F*."""
    return paper_like_seeds(1)[0]


def run_kde(quick: bool = False, out: str = "sgmc-reproduce", seed: int = 0,
            data_root=None, smoke: bool = False) -> dict:
    wseed = kde_weights_seed()
    wells = gaussian_wells(wseed)
    kde = kde_wells(wells, seed=seed)
    top = wells.centers[np.argsort(wells.weights)[::-1][:5]]
    local = minimize(kde, gd(0.05), top, 400, len(top), init_axes="replication")
    order = np.argsort(local.value)
    x_star = local.x[int(order[0])]
    gap = float(local.value[order[1]] - local.value[order[0]])
    reps, n_steps, every = ((SMOKE["reps"], SMOKE["kde_steps"], 50) if smoke else
                            (8, 300, 50) if quick else (50, 1000, 50))
    tol = 0.25
    methods = [("SGDxSGLD", sgd_x_sgld(0.1, 1.0, 1000, 0.05, 5.0)),
               ("nSGDxSGLD", sgd_x_sgld(0.1, 1.0, 1000, 0.05, 5.0, swap=False)),
               ("SGD", sgd(0.1, 1000)), ("SGLD g=0.01", sgld_opt(0.1, 0.01, 1000))]
    detail = f"{', '.join(SMOKE['kde'])} only, {reps} replications × {n_steps} iterations"
    if smoke:
        print(V.smoke_banner(detail))
        methods = [m for m in methods if m[0] in SMOKE["kde"]]
    rows, steps = _run_methods(kde, methods, n_steps, reps, every, seed, x_star, tol)
    print(f"SGD×SGLD on the online KDE (1e4 draws from gaussian_wells(seed={wseed}), the "
          f"draw closest to F* = {PAPER_F_STAR}; kernel variance σ = 0.12; minimiser "
          f"({x_star[0]:.3f}, {x_star[1]:.3f}), F̂* = {float(local.value[order[0]]):.4f}, "
          f"runner-up local minimum {gap:.4f} higher)\n")
    print(f"  {'method':<12}{'≤0.25 final':>13}{'E[F] final':>12}{'exchanges':>11}")
    for name, r in rows.items():
        print(f"  {name:<12}{r['success'][-1]:>9}/{reps:<3}{r['mean_value'][-1]:>12.4f}"
              f"{r['exchanges']:>11.2f}")
    # The threshold check (kde_threshold): t0 against the KDE's depth, minima and noise, at
    # the paper's t0 and its heuristic 1e-2, beside the kernel read as a standard deviation
    # (the old reading) for scale; then SGD×SGLD at other thresholds. Not in a smoke run.
    check, sweep = {}, []
    if not smoke:
        print("\n  threshold check (t0 against the KDE; Alg. 2, Sec. 2.5–2.6, Thm. 4):")
        for key, var, t0 in (("paper", 0.12, PAPER_T0), ("heuristic", 0.12, HEURISTIC_T0),
                             ("sd_reading", 0.0144, PAPER_T0))[:2 if quick else 3]:
            check[key] = kde_landscape(wells, var, seed=seed, threshold=t0)
            print("\n".join(landscape_lines(check[key], f"variance {var:g}, t0 = {t0:g}")))
        ts = (HEURISTIC_T0,) if quick else (0.02, HEURISTIC_T0, 0.002)
        sweep = threshold_runs(kde, x_star, ts, reps, n_steps, seed, tol)
        if not quick:
            sd = check["sd_reading"]
            sweep += [{**r, "kernel_variance": 0.0144} for r in threshold_runs(
                kde_wells(wells, kernel_variance=0.0144, seed=seed), sd["x_star"], (PAPER_T0,),
                reps, n_steps, seed, tol)]
        print("  SGD×SGLD at other thresholds: " + "; ".join(
            f"t0 = {r['t0']:g}{' (kernel sd 0.12)' if 'kernel_variance' in r else ''}: "
            f"{r['success']}/{reps}, {r['exchanges']:.1f} exchanges" for r in sweep))
    p = {k: r["success"][-1] / reps for k, r in rows.items()}
    se = {k: V.proportion(r["success"][-1], reps)[1] for k, r in rows.items()}
    meas = {k: {"value": p[k], "se": se[k]} for k in p}
    for k in ("SGD", "SGLD g=0.01"):  # (a smoke run has not every method: NaN)
        p.setdefault(k, float("nan"))
        se.setdefault(k, float("nan"))
    f_hat = float(local.value[order[0]])
    devs = [f"weights of gaussian_wells(seed={wseed}), the draw of {SCREEN_POOL} closest to "
            f"the wells' F* = {PAPER_F_STAR}; the paper's weights are unknown",
            f"success: ‖X_n − x̂*‖ ≤ {tol} with x̂* the KDE's own minimiser (the runner-up "
            f"local minimum is {gap:.4f} higher, below the threshold t0 = 0.05)",
            f"with the kernel variance 0.12 the KDE is shallow (F̂* = {f_hat:.4f}): once "
            f"F̂(X) < F̂* + t0 = {f_hat + 0.05:.4f} no exchange can pass the threshold (up to "
            "minibatch noise), so X keeps the first well that deep; how often that is the "
            "global one depends on the unknown weights"]
    if check:
        c = check["paper"]
        devs.append(
            f"threshold check: t0 = {PAPER_T0:g} is {PAPER_T0 / abs(c['f_star']):.2f} of the "
            f"KDE's depth; {c['minima_within_threshold']} of its "
            f"{len(c['local_minima'])} local minima lie within t0 of F̂*, Y0's well (X's "
            f"after the first exchange) {c['trap_above_f_star']:.4f} above it; the paper's "
            f"t0 ≤ r0/8 would need t0 ≤ {c['paper_bound_r0_over_8']:.5f}; t0 is "
            f"{PAPER_T0 / c['noise_se_of_difference']:.1f} minibatch SEs of a difference")
    if quick:
        devs.append(f"quick run: {reps} replications × {n_steps} iterations")
    over = f"{reps} replications (binomial)"
    claims = [
        V.judge("SGD×SGLD converges to the global minimum with high probability within 1e3 "
                "iterations", p["SGDxSGLD"] - HIGH, se["SGDxSGLD"], se_over=over,
                effect_text=f"P(‖X_{steps[-1]} − x̂*‖ ≤ {tol}) − {HIGH}", measured=meas,
                paper="within 1e3 iterations (Fig. 11, one run)",
                deviations=[*devs, f"threshold: 'converges' read as P ≥ {HIGH}"],
                in_regime=not quick),
        V.judge("SGD×SGLD is faster than SGLD (γ = 0.01, which needs > 2e4 iterations)",
                p["SGDxSGLD"] - p["SGLD g=0.01"], V.diff_se(se["SGDxSGLD"], se["SGLD g=0.01"]),
                se_over=over, effect_text=f"P_SGD×SGLD − P_SGLD at n = {steps[-1]}",
                measured=meas, paper="SGLD > 2e4 iterations (Fig. 12b)", deviations=devs),
        V.judge("SGD gets stuck in a local minimum; SGD×SGLD does not", p["SGDxSGLD"] - p["SGD"],
                V.diff_se(se["SGDxSGLD"], se["SGD"]), se_over=over,
                effect_text=f"P_SGD×SGLD − P_SGD at n = {steps[-1]}", measured=meas,
                paper="SGD stuck at (0, 1) from (0, 0) (Fig. 12a)", deviations=devs),
    ]
    if sweep:
        heur = next(r for r in sweep if r["t0"] == HEURISTIC_T0 and "kernel_variance" not in r)
        claims.append(heuristic_claim(heur, check["heuristic"], HIGH, devs[:1] + (
            [f"quick run: {reps} replications × {n_steps} iterations"] if quick else []),
            in_regime=not quick))
    result = {"threshold_check": check, "threshold_runs": sweep,
              "x_star": x_star.tolist(), "weights_seed": wseed, "kernel_variance": 0.12,
              "f_hat_star": f_hat, "runner_up_gap": gap, "replications": reps, "steps": steps,
              "rows": rows, "smoke": smoke,
              "claims": V.publish(V.smoke(claims, detail) if smoke else claims,
                                  "sgdxsgld-kde")}
    path = _figure_curves(result, out, "sgdxsgld_kde.png", f"P(‖X_n − x*‖ ≤ {tol})")
    result["figures"] = [path]
    return result


def _figure_curves(result, out, name, ylabel) -> str:
    plt = pyplot()

    path = os.path.join(out, name)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for label, r in result["rows"].items():
        axes[0].plot(result["steps"], np.asarray(r["success"]) / result["replications"],
                     label=label)
        axes[1].plot(result["steps"], r["mean_value"], label=label)
    axes[0].set(xlabel="n", ylabel=ylabel)
    axes[1].set(xlabel="n", ylabel="E[F(X_n)]")
    axes[0].legend(fontsize=7)
    return save(fig, path)


PAPER_BENCH = {"rastrigin": {2: "~5e2", 5: "~7e4", 10: "—", 20: "—"},
               "griewank": {2: "≤1e4", 10: "≤1e4", 50: "≤1e4"}}


def _bench_case(fname, d, boundary, reps, n_steps, every, starts, seed) -> dict:
    f, h, g = (rastrigin, 0.005, 5.0) if fname == "rastrigin" else (griewank, 0.1, 5.0)
    res = minimize(f, gd_x_ld(h, g), starts, n_steps, reps, seed=seed, bounds=(-5.0, 5.0),
                   boundary=boundary, record_every=every, init_axes="replication")
    hit = res.trace <= 1e-3
    first = [int(res.trace_steps[np.argmax(r)]) for r in hit if r.any()]
    reached_by = np.maximum.accumulate(hit, axis=1).mean(0)
    steps = np.asarray(res.trace_steps)
    by_1e4 = float(reached_by[steps <= 10_000][-1]) if np.any(steps <= 10_000) else None
    on_face = np.isclose(np.abs(res.replicas), 5.0, rtol=0, atol=1e-6)   # (reps, 2, d)
    return {"function": fname, "d": d, "boundary": boundary, "h": h, "gamma": g,
            "success": int(hit[:, -1].sum()), "reached": len(first),
            "median_first": float(np.median(first)) if first else None,
            "reached_by_1e4": by_1e4, "steps": steps.tolist(),
            "reached_by": reached_by.tolist(),
            "face_fraction_X": float(on_face[:, 0].mean()),
            "face_fraction_Y": float(on_face[:, 1].mean()),
            "final_value_mean": float(np.mean(res.value))}


def run_benchmarks(quick: bool = False, out: str = "sgmc-reproduce", seed: int = 0,
                   data_root=None, smoke: bool = False) -> dict:
    reps, n_steps, every = ((SMOKE["reps"], SMOKE["bench_steps"], 50) if smoke else
                            (10, 1000, 50) if quick else (20, 20_000, 100))
    cases = (list(SMOKE["bench"]) if smoke else
             [("rastrigin", 2, "clip"), ("griewank", 2, "clip"), ("griewank", 2, "reflect")]
             if quick else
             [("rastrigin", d, "clip") for d in (2, 5, 10, 20)]
             + [("griewank", d, b) for d in (2, 10, 50) for b in ("clip", "reflect")])
    detail = (f"{len(cases)} cases ({', '.join(f'{f} d = {d} ({b})' for f, d, b in cases)}), "
              f"{reps} replications × {n_steps} iterations")
    if smoke:
        print(V.smoke_banner(detail))
    rng = np.random.default_rng(seed)
    starts_by_d = {d: rng.uniform(-5, 5, (reps, d)).astype(np.float32)
                   for d in sorted({c[1] for c in cases})}
    rows = []
    print("GD×LD on [−5, 5]^d, uniform random starts; success: F(X_n) ≤ 1e-3; the box kept by "
          "clipping or reflection; 'on a face': fraction of coordinates at ±5 at the end")
    print(f"  {'function':<11}{'d':>4}{'box':>9}{'success':>10}{'by 1e4':>8}"
          f"{'median first n':>16}{'face X':>8}{'face Y':>8}{'paper':>8}")
    for fname, d, boundary in cases:
        row = _bench_case(fname, d, boundary, reps, n_steps, every, starts_by_d[d], seed)
        rows.append(row)
        print(f"  {fname:<11}{d:>4}{boundary:>9}{row['success']:>6}/{reps:<3}"
              f"{row['reached_by_1e4']!s:>8}{row['median_first']!s:>16}"
              f"{row['face_fraction_X']:>8.3f}{row['face_fraction_Y']:>8.3f}"
              f"{PAPER_BENCH[fname][d]:>8}")
    claims = _bench_claims(rows, reps, n_steps, quick)
    path = _figure_benchmarks(rows, out)
    return {"replications": reps, "steps": n_steps, "rows": rows, "smoke": smoke,
            "claims": V.publish(V.smoke(claims, detail) if smoke else claims,
                                "gdxld-benchmarks"),
            "figures": [path]}


def _bench_claims(rows, reps, n_steps, quick) -> list[V.Claim]:
    over = f"{reps} replications (binomial)"
    box_dev = ("box: the paper restricts to [−5, 5]^d without saying how; both clipping "
               "(projection) and reflection are run")
    budget = [f"quick run: {reps} replications × {n_steps} iterations"] if quick else []
    claims = []

    def by(row, n):
        steps = np.asarray(row["steps"])
        if not np.any(steps <= n):
            return float("nan")
        return float(np.asarray(row["reached_by"])[steps <= n][-1])

    for row in rows:
        fname, d, boundary = row["function"], row["d"], row["boundary"]
        tag = f"{fname} d = {d} ({boundary})"
        if fname == "rastrigin" and d == 2:
            n = 1000
            claim, paper = (f"GD×LD reaches the global minimum of {tag} in ~5e2 iterations",
                            "~5e2 iterations (h = 0.005, γ = 5; Fig. 14)")
        elif fname == "rastrigin" and d == 5:
            n = n_steps
            claim, paper = (f"GD×LD reaches the global minimum of {tag} in ~7e4 iterations",
                            "~7e4 iterations (h = 0.005, γ = 5; Fig. 14)")
        elif fname == "griewank":
            n = 10_000 if n_steps >= 10_000 else n_steps
            claim, paper = (f"GD×LD reaches the global minimum of {tag} within 1e4 "
                            "iterations", "within 1e4 for d up to 50 (h = 0.1, γ = 5; Fig. 15)")
        else:
            continue             # Rastrigin d ≥ 10: the paper reports no hit within 1e5
        p = by(row, n)
        se = V.proportion(round(p * reps), reps)[1]
        short = n < {"rastrigin": {2: 1000, 5: 140_000}}.get(fname, {}).get(d, 10_000)
        devs = [box_dev, f"success read as: at least half the replications reach "
                f"F ≤ 1e-3 by n = {n} (the paper shows one run per d)", *budget]
        if short:
            devs.append(f"budget: {n_steps} iterations, below the paper's horizon")
        claims.append(V.judge(
            claim, p - 0.5, se, se_over=over, effect_text=f"P(F(X_n) ≤ 1e-3 for some n ≤ {n})"
            " − 0.5", measured={"reached": {"value": p, "se": se},
                                "face_fraction_X": row["face_fraction_X"],
                                "face_fraction_Y": row["face_fraction_Y"]},
            paper=paper, deviations=devs, in_regime=not short))
    return claims


def _figure_benchmarks(rows, out) -> str:
    plt = pyplot()

    path = os.path.join(out, "gdxld_benchmarks.png")
    fig, ax = plt.subplots(figsize=(6.5, 4))
    for r in rows:
        ax.plot(r["steps"], r["reached_by"], ls="-" if r["boundary"] == "clip" else "--",
                label=f"{r['function']} d = {r['d']} ({r['boundary']})")
    ax.set(xlabel="n", ylabel="fraction that reached F ≤ 1e-3", xscale="log",
           title="GD×LD on [−5, 5]^d (solid: clip, dashed: reflect)")
    ax.legend(fontsize=6)
    return save(fig, path)


EXPERIMENTS = [
    Experiment("gdxld-wells", "25-well objective: GD×LD over weight draws (and the draws "
               "closest to the paper's F*), nGD×LD against GD and LD; sensitivity to γ and h",
               "Dong & Tong, Sec. 3.1, Fig. 3–9", 8.0, run_wells),
    Experiment("sgdxsgld-kde", "online KDE of the wells (kernel variance 0.12): SGD×SGLD "
               "against SGD and SGLD", "Dong & Tong, Sec. 3.1.3, Fig. 10–12", 2.0, run_kde),
    Experiment("gdxld-benchmarks", "Rastrigin (d = 2..20) and Griewank (d = 2..50) on "
               "[−5, 5]^d, box by clipping or reflection: success, iterations, mass on the "
               "faces", "Dong & Tong, Sec. 3.2", 8.0, run_benchmarks),
]
