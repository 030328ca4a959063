"""Warm-up against the old hand rule, on posteriors with a trusted answer (issue 20, item 3).

One comparison (:func:`compare_tuned_untuned`) runs the same sampler twice from the same
posterior mode, with the same chains and the same total number of data passes:

* **tuned**: :func:`sgmc.warmup` chooses step size, friction and a preconditioner (its data
  passes are charged to the run), then :func:`sgmc.sample` spends the rest;
* **untuned**: the isotropic sampler at the old advice of ``docs/getting-started.md``
  ("Choosing a step size"), λ from the Hessian at the mode on the unconstrained scale
  (:func:`sgmc.tune.curvature.hessian`): SGLD ``h = 1e-3 / λ_max``; SGHMC ``h = 1e-3 / √λ_max``,
  ``D = √λ_min``. It spends all of the tuned run's passes (warm-up and sampling) on sampling;
  the Hessian and the mode are given to it for free;
* **tuned, P = I** (ablation, the synthetic case): warm-up with
  ``preconditioner="identity"``, the step-size rules alone, the same number of sampling
  steps as the tuned run;
* **tuned, no self-check** (where asked): warm-up with ``check=False``, the step-size rules'
  step as it was before warm-up checked itself (issue 31), the same sampling steps — what
  the self-check buys on a posterior far from Gaussian.

Both are judged as in ``docs/posteriordb.md`` (:func:`sgmc.lab.experiments.posteriordb.compare`):
per scalar parameter ``z = (mean − mean_ref) / sd_ref`` and ``r = sd / sd_ref``, on the draws of
the second half of the run. A run *passes* when every ``|z| ≤ 0.1`` and every ``|r − 1| ≤ 0.1``.
Along the run, at a grid of draws k, the running estimate from draws ``[k/2, k)`` is judged the
same way; ``passes_to_accuracy`` is the data-pass count of the first grid point from which the
criteria hold at every later grid point (None: not reached).

>>> row = compare_tuned_untuned(problem, reference, sgmc.sghmc(integrator="splitting"),
...                             init, num_steps=4000)                     # doctest: +SKIP
>>> row["runs"]["tuned"]["ok"], row["runs"]["untuned"]["ok"]              # doctest: +SKIP
(True, False)

The reference is a dict of draws ``(chains, draws, *shape)`` (Stan's, or exact draws of a
Gaussian: :func:`gaussian_regression`). :func:`plot` draws the curves, one panel per posterior.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
from jax.flatten_util import ravel_pytree

import sgmc
from sgmc.lab.experiments import Experiment
from sgmc.lab.experiments import posteriordb as pdb
from sgmc.lab.experiments import verdict as V

__all__ = ["CASES", "EXPERIMENTS", "SMOKE", "SYNTHETIC", "TOL", "claims", "compare_tuned_untuned",
           "gaussian_regression", "judge", "old_advice", "plot", "posteriordb_case", "run",
           "run_case", "table"]

TOL = 0.1
#: Figure colours by run.
COLORS = {"tuned": "C0", "untuned": "C3", "tuned, P = I": "C2", "tuned, no self-check": "C1"}
SYNTHETIC = "synthetic-regression-cond1e4"

#: case -> (batch size or None, SVRG?, tuned sampling steps per chain, warm-up options,
#: also run without the self-check?). SGHMC (splitting) for every case; the synthetic case
#: also with SGLD (``run_case(..., kind="sgld")``). Eight schools is no regression: a
#: hierarchical posterior whose scale τ makes it far from Gaussian, where the Gaussian bound
#: is not enough (the self-check halves the step three times); its steps are 8 × smaller
#: then, so it samples 4 × longer.
CASES: dict[str, tuple[int | None, bool, int, dict, bool]] = {
    SYNTHETIC: (100, True, 10_000, {}, False),
    "mesquite-logmesquite_logvash": (None, False, 10_000, {}, False),
    "kidiq-kidscore_momiq": (None, False, 10_000, {}, False),
    "sblri-blr": (None, False, 10_000, {}, False),
    "earnings-logearn_interaction_z": (128, True, 20_000, {}, False),
    "eight_schools-eight_schools_noncentered": (None, False, 40_000, {"adapt_steps": 2000},
                                                True),
}


#: The smoke run (a pipeline check): the synthetic case with SGHMC, warm-up as always (its
#: stages and self-check compile the same programs as in a full run), then short runs.
SMOKE = {"num_steps": 500, "isotropic": False, "num_chains": 2, "max_draws": 100,
         "points": 4}

# --------------------------------------------------------------------------- problems


def gaussian_regression(num_data: int = 2000, dim: int = 8, condition: float = 1e4,
                        lam_min: float = 2.0, noise_sd: float = 1.0, prior_sd: float = 10.0,
                        seed: int = 0, ref_draws: int = 4000
                        ) -> tuple[sgmc.Posterior, dict[str, np.ndarray], dict[str, Any]]:
    """A linear regression whose posterior precision ``A = XᵀX / σ² + I / s0²`` has
    eigenvalues log-spaced in ``[lam_min, condition · lam_min]`` along random (non-axis)
    directions. Returns ``(posterior, reference, exact)``: the reference is 10 chains of
    ``ref_draws`` independent exact draws (so :func:`judge` treats it as Stan's), ``exact``
    holds ``mean``, ``cov`` (float64) and ``A``. The parameter is ``{"theta": (dim,)}``."""
    rng = np.random.default_rng(seed)
    lam = lam_min * condition ** np.linspace(0.0, 1.0, dim)
    sing = np.sqrt((lam - 1.0 / prior_sd**2) * noise_sd**2)
    u, _ = np.linalg.qr(rng.standard_normal((num_data, dim)))
    v, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    x = (u * sing) @ v.T
    theta_true = rng.standard_normal(dim)
    y = x @ theta_true + noise_sd * rng.standard_normal(num_data)
    a = x.T @ x / noise_sd**2 + np.eye(dim) / prior_sd**2
    cov = np.linalg.inv(a)
    cov = 0.5 * (cov + cov.T)
    mean = cov @ (x.T @ y) / noise_sd**2
    draws = rng.multivariate_normal(mean, cov, size=(10, ref_draws))
    post = sgmc.Posterior(
        lambda p, r: -0.5 * ((r["y"] - r["x"] @ p["theta"]) / noise_sd) ** 2,
        lambda p: -0.5 * (p["theta"] ** 2).sum() / prior_sd**2,
        {"x": np.asarray(x, np.float32), "y": np.asarray(y, np.float32)})
    exact = {"mean": mean, "cov": cov, "A": a, "condition": float(np.linalg.cond(a))}
    return post, {"theta": draws}, exact


def posteriordb_case(name: str, root: Any = None
                     ) -> tuple[sgmc.Posterior, dict[str, np.ndarray], Any]:
    """``(posterior, Stan's reference draws, init)`` of a posteriordb posterior
    (:data:`sgmc.lab.experiments.posteriordb.MODELS`); init is NumPyro's ``initial_point(0)``.
    ``root``: the data root (:func:`sgmc.lab.experiments.posteriordb.data_folder`)."""
    data, ref = pdb.load(name, root)
    model, args = pdb.MODELS[name]
    post = sgmc.from_numpyro(model, *args(data))
    return post, ref, post.initial_point(0)


# --------------------------------------------------------------------------- judging


def judge(samples: Mapping[str, Any], reference: Mapping[str, np.ndarray],
          tol: float = TOL) -> dict[str, Any]:
    """Worst ``|z|`` and ``|r − 1|`` over every scalar parameter of ``reference`` (with their
    Monte Carlo SEs and names), and whether both are within ``tol``."""
    c = pdb.compare(samples, reference)
    zs, rs = [], []
    for k, v in c.items():
        for i in np.ndindex(np.shape(v["z"])):
            label = f"{k}{list(i) if i else ''}"
            zs.append((abs(float(v["z"][i])), float(v["se_z"][i]), label))
            rs.append((abs(float(v["sd_ratio"][i]) - 1), float(v["se_sd_ratio"][i]), label))
    z, r = max(zs), max(rs)
    ok = bool(z[0] <= tol and r[0] <= tol)
    return {"max_z": z[0], "se_z": z[1], "param_z": z[2], "max_r1": r[0], "se_r": r[1],
            "param_r": r[2], "max_se_z": max(s[1] for s in zs),
            "max_se_r": max(s[1] for s in rs), "ok": ok}


def _curve(samples, reference, passes: np.ndarray, offset: float, points: int,
           tol: float) -> dict[str, Any]:
    """Running judgement at ``points`` log-spaced draw counts k (draws ``[k/2, k)``)."""
    n = passes.shape[1]
    ks = np.unique(np.geomspace(max(16, n // 64), n, points).astype(int))
    xs, zs, rs, oks = [], [], [], []
    for k in ks:
        part = jax.tree.map(lambda a, k=k: np.asarray(a)[:, k // 2:k], samples)
        j = judge(part, reference, tol)
        xs.append(offset + float(passes[:, k - 1].mean()))
        zs.append(j["max_z"])
        rs.append(j["max_r1"])
        oks.append(j["ok"])
    reached = None
    for i in range(len(oks)):
        if all(oks[i:]):
            reached = xs[i]
            break
    return {"passes": xs, "max_z": zs, "max_r1": rs, "passes_to_accuracy": reached}


# --------------------------------------------------------------------------- the runs


def old_advice(problem: sgmc.Posterior, mode: Any, kind: str) -> dict[str, float]:
    """The step size (and friction) of docs/getting-started.md's old advice, from the
    eigenvalues of the Hessian at ``mode`` (constrained) on the unconstrained scale."""
    h = sgmc.tune.curvature.hessian(problem, problem.unconstrain(mode))
    lam = np.linalg.eigvalsh(h)
    lo, hi = float(lam[0]), float(lam[-1])
    if kind == "sgld":
        return {"step_size": 1e-3 / hi, "lam_min": lo, "lam_max": hi}
    return {"step_size": 1e-3 / math.sqrt(hi), "friction": math.sqrt(max(lo, 0.0)),
            "lam_min": lo, "lam_max": hi}


def _sample(problem, sampler, init, num_steps, num_chains, seed, thin):
    # All draws (at most max_draws per chain) in one block: one compiled program per run,
    # whatever their number (the untuned run's, e.g. 101, may have no divisor near the
    # default block size, and a partial block compiles a second program).
    t0 = time.perf_counter()
    res = sgmc.sample(problem, sampler, init=init, num_steps=num_steps, num_chains=num_chains,
                      seed=seed, thin=thin, init_per_chain=False,
                      draws_per_block=max(1, num_steps // thin))
    jax.block_until_ready(res.samples)
    return res, time.perf_counter() - t0


def _tuned_run(problem, reference, sampler, init, *, num_steps, num_chains, seed, max_draws,
               points, tol, warmup_kwargs, step_factor=1.0) -> dict[str, Any]:
    """Warm-up, then ``num_steps`` sampling steps from its mode (at ``step_factor`` × its
    step size); a run row with the warm-up's passes charged."""
    w = sgmc.warmup(problem, sampler, init, num_chains=None, seed=0, **dict(warmup_kwargs))
    tuned, mode = w
    rep = w.report
    h = float(rep.step_sizes[0]) * step_factor
    if step_factor != 1.0:
        tuned = sgmc.pytree.replace(tuned, step_size=sgmc.schedules.as_schedule(h))
    thin = max(1, num_steps // max_draws)
    res, sec = _sample(problem, tuned, mode, num_steps, num_chains, seed, thin)
    sampling = float(res.data_passes[:, -1].mean())
    curve = _curve(res.samples, reference, np.asarray(res.data_passes), rep.total_passes,
                   points, tol)
    return {**judge(_second_half(res), reference, tol),
            "total_passes": rep.total_passes + sampling, "warmup_passes": rep.total_passes,
            "warmup_stages": dict(rep.passes), "sampling_passes": sampling,
            "seconds": rep.seconds + sec, "warmup_seconds": rep.seconds, "steps": num_steps,
            "step_size": h, "friction": rep.friction, "preconditioner": rep.preconditioner,
            "report": str(rep), "curve": curve, "passes_to_accuracy": curve["passes_to_accuracy"],
            "mode": mode, "passes_per_step": sampling / num_steps}


def _second_half(res):
    return jax.tree.map(lambda a: np.asarray(a)[:, np.asarray(a).shape[1] // 2:], res.samples)


def compare_tuned_untuned(problem: sgmc.Posterior, reference: Mapping[str, np.ndarray],
                          sampler: Any, init: Any, *, num_steps: int,
                          make_untuned: Callable[[dict], Any] | None = None,
                          kind: str = "sghmc", num_chains: int = 4, seed: int = 1,
                          max_draws: int = 4000, points: int = 16, tol: float = TOL,
                          warmup_kwargs: Mapping[str, Any] | None = None,
                          isotropic: bool = False, unchecked: bool = False,
                          name: str = "") -> dict[str, Any]:
    """Tuned (warm-up, then ``num_steps`` steps) against untuned (old advice, the same total
    data passes) on one posterior; a table row (a dict).

    Args:
        problem, reference: the posterior and reference draws (``(chains, draws, *shape)``).
        sampler: the sampler with step size (and friction) unset, e.g.
            ``sgmc.sghmc(integrator="splitting", batch_size=128, estimator=sgmc.svrg())``.
        init: where warm-up starts its mode search (constrained).
        num_steps: sampling steps of the tuned run, per chain.
        make_untuned: ``advice -> sampler`` (advice from :func:`old_advice`); the same
            sampler family, batch and estimator as ``sampler`` with the advice's step size
            (and friction).
        kind: ``"sghmc"`` or ``"sgld"`` (which advice).
        num_chains, seed: every run, each started at the warm-up's mode.
        max_draws: draws kept per chain (thinning).
        points: grid points of the running judgement.
        warmup_kwargs: options for :func:`sgmc.warmup`.
        isotropic: also run warm-up with ``preconditioner="identity"`` (the step-size rules
            alone, no preconditioner), ``num_steps`` steps: row ``"tuned, P = I"``.
        unchecked: also run warm-up with ``check=False`` (no self-check), ``num_steps``
            steps: row ``"tuned, no self-check"``.

    Returns:
        ``{"name", "runs": {label: {...}}}`` with labels ``"tuned"``, ``"untuned"`` and the
        optional ones; each run has ``total_passes``, ``seconds``, ``steps``, ``step_size``,
        ``friction``, the final :func:`judge` fields (``max_z``, ``se_z``, ``max_r1``,
        ``se_r``, ``ok``...), ``curve`` (the running judgement) and
        ``passes_to_accuracy``; tuned runs also ``warmup_passes``, ``warmup_seconds`` and
        the warm-up ``report`` (as text).
    """
    if make_untuned is None:
        raise ValueError("make_untuned is required (advice -> sampler)")
    opts = {"num_chains": num_chains, "seed": seed, "max_draws": max_draws, "points": points,
            "tol": tol}
    wkw = dict(warmup_kwargs or {})
    runs = {"tuned": _tuned_run(problem, reference, sampler, init, num_steps=num_steps,
                                warmup_kwargs=wkw, **opts)}
    t = runs["tuned"]
    mode = t.pop("mode")
    budget = t["total_passes"]

    t0 = time.perf_counter()
    advice = old_advice(problem, mode, kind)
    sec_h = time.perf_counter() - t0
    steps_u = math.ceil(budget / t.pop("passes_per_step"))
    thin_u = max(1, steps_u // max_draws)
    steps_u = thin_u * math.ceil(steps_u / thin_u)
    res_u, sec_u = _sample(problem, make_untuned(advice), mode, steps_u, num_chains, seed,
                           thin_u)
    cu = _curve(res_u.samples, reference, np.asarray(res_u.data_passes), 0.0, points, tol)
    runs["untuned"] = {**judge(_second_half(res_u), reference, tol),
                       "total_passes": float(res_u.data_passes[:, -1].mean()),
                       "seconds": sec_h + sec_u, "steps": steps_u,
                       "step_size": advice["step_size"], "friction": advice.get("friction"),
                       "lam_min": advice["lam_min"], "lam_max": advice["lam_max"],
                       "curve": cu, "passes_to_accuracy": cu["passes_to_accuracy"]}
    if isotropic:
        runs["tuned, P = I"] = _tuned_run(
            problem, reference, sampler, init, num_steps=num_steps,
            warmup_kwargs={**wkw, "preconditioner": "identity"}, **opts)
    if unchecked:
        runs["tuned, no self-check"] = _tuned_run(
            problem, reference, sampler, init, num_steps=num_steps,
            warmup_kwargs={**wkw, "check": False}, **opts)
    for r in runs.values():
        r.pop("mode", None)
        r.pop("passes_per_step", None)
    d = int(ravel_pytree(problem.unconstrain(mode))[0].size)
    return {"name": name, "sampler": kind, "dim": d, "chains": num_chains, "runs": runs}


def run_case(name: str, kind: str = "sghmc", root: Any = None, **overrides: Any
             ) -> dict[str, Any]:
    """:func:`compare_tuned_untuned` on one of :data:`CASES` with ``kind`` ``"sghmc"``
    (splitting integrator) or ``"sgld"``; ``overrides`` go to it (``num_steps``...)."""
    batch, svrg, steps, wkw, unchecked = CASES[name]

    def make(step=None, friction=None):
        est = {"estimator": sgmc.svrg()} if svrg else {}
        if kind == "sgld":
            return sgmc.sgld(step, batch_size=batch, **est)
        return sgmc.sghmc(step, friction=friction, batch_size=batch, integrator="splitting",
                          **est)

    if name == SYNTHETIC:
        post, ref, _ = gaussian_regression()
        init = {"theta": np.zeros(8, np.float32)}
    else:
        post, ref, init = posteriordb_case(name, root)
    # The P = I ablation on the Gaussian case only: on the real posteriors the isotropic step
    # from the mode's curvature diverges within a few hundred steps (mesquite: log σ).
    # SGLD: its draws are more correlated than SGHMC's at the same cost; 4 × the steps
    # for the same Monte Carlo error.
    kw = {"num_steps": steps * (4 if kind == "sgld" else 1), "warmup_kwargs": wkw,
          "unchecked": unchecked,
          "isotropic": name == SYNTHETIC, **overrides}
    return compare_tuned_untuned(
        post, ref, make(), init, kind=kind, name=name,
        make_untuned=lambda a: make(a["step_size"], a.get("friction")), **kw)


# --------------------------------------------------------------------------- reporting


def _fmt_passes(x: float | None) -> str:
    return "not reached" if x is None else f"{x:,.0f}"


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    """A markdown table of :func:`compare_tuned_untuned` rows."""
    head = ("| posterior | sampler | run | step h (D) | steps | total passes | passes to "
            "accuracy | seconds | max \\|z\\| ± SE | max \\|r − 1\\| ± SE | pass |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for row in rows:
        for label, r in row["runs"].items():
            hd = f"{r['step_size']:.3g}" + ("" if r["friction"] is None
                                            else f" ({r['friction']:.3g})")
            lines.append(
                f"| {row['name']} | {row['sampler']} | {label} | {hd} | {r['steps']:,} | "
                f"{r['total_passes']:,.0f} | {_fmt_passes(r['passes_to_accuracy'])} | "
                f"{r['seconds']:.0f} | {r['max_z']:.3f} ± {r['se_z']:.3f} ({r['param_z']}) | "
                f"{r['max_r1']:.3f} ± {r['se_r']:.3f} ({r['param_r']}) | "
                f"{'yes' if r['ok'] else 'no'} |")
    return "\n".join(lines)


def plot(rows: Sequence[Mapping[str, Any]], path: str | None = None, tol: float = TOL):
    """Worst ``|z|`` and ``|r − 1|`` of the running estimate against data passes, tuned and
    untuned, one panel per row; saved to ``path`` when given. Returns the figure."""
    import matplotlib
    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(rows)
    cols = min(3, n)
    nrows = -(-n // cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.3 * nrows), squeeze=False)
    for ax, row in zip(axes.flat, rows, strict=False):
        for label, run in row["runs"].items():
            color = COLORS.get(label, "C4")
            c = run["curve"]
            ax.plot(c["passes"], np.maximum(c["max_z"], 1e-3), "-", color=color,
                    label=f"{label} |z|")
            ax.plot(c["passes"], np.maximum(c["max_r1"], 1e-3), "--", color=color,
                    label=f"{label} |r−1|")
        ax.axhline(tol, color="k", lw=0.8)
        wp = row["runs"]["tuned"]["warmup_passes"]
        ax.axvline(wp, color="C0", lw=0.6, ls=":")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{row['name']} ({row['sampler']})", fontsize=9)
        ax.set_xlabel("data passes")
        ax.set_ylabel("worst |z|, |r − 1|")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    handles = {}
    for ax in axes.flat[:n]:
        for hnd, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            handles.setdefault(lab, hnd)
    spare = list(axes.flat)[n:]
    (spare[0] if spare else axes.flat[0]).legend(
        list(handles.values()), list(handles.keys()), fontsize=8,
        loc="center" if spare else "best")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def claims(rows: Sequence[Mapping[str, Any]], tol: float = TOL) -> list[V.Claim]:
    """Per row, judged by the verdict rule: the tuned sampler meets the criterion (effect:
    the smaller margin tol − max|z|, tol − max|r − 1|, with that parameter's SE), and the
    untuned one does not (effect: the larger excess over tol, with its SE)."""
    out = []
    for row in rows:
        runs = row["runs"]
        t, u = runs["tuned"], runs["untuned"]
        margins = [(tol - t["max_z"], t["se_z"]), (tol - t["max_r1"], t["se_r"])]
        eff, se = min(margins, key=lambda m: m[0] / max(m[1], 1e-12))
        what = f"{row['name']} ({row['sampler']}, {row['chains']} chains)"
        measured = {k: {"max|z|": {"value": r["max_z"], "se": r["se_z"]},
                        "max|r-1|": {"value": r["max_r1"], "se": r["se_r"]},
                        "total passes": r["total_passes"],
                        "passes to accuracy": r["passes_to_accuracy"]}
                    for k, r in runs.items()}
        meets = f"meets |z| ≤ {tol} and |sd ratio − 1| ≤ {tol}"
        mc = "Monte Carlo error (ESS-based, reference included)"
        out.append(V.judge(
            f"{what}: warm-up with no hand-chosen step size {meets} in "
            f"{t['total_passes']:,.0f} data passes", eff, se, se_over=mc, measured=measured,
            effect_text=f"min({tol} − max|z|, {tol} − max|r − 1|)"))
        if "tuned, no self-check" in runs:
            nc = runs["tuned, no self-check"]
            eff, se = max([(nc["max_z"] - tol, nc["se_z"]), (nc["max_r1"] - tol, nc["se_r"])],
                          key=lambda m: m[0] / max(m[1], 1e-12))
            out.append(V.judge(
                f"{what}: without the self-check (check=False) the warm-up's step does not "
                f"meet the criterion, in {nc['total_passes']:,.0f} data passes", eff, se,
                se_over=mc, measured=measured,
                effect_text=f"max(max|z| − {tol}, max|r − 1| − {tol})"))
        excess = [(u["max_z"] - tol, u["se_z"]), (u["max_r1"] - tol, u["se_r"])]
        eff, se = max(excess, key=lambda m: m[0] / max(m[1], 1e-12))
        out.append(V.judge(
            f"{what}: the isotropic sampler at the old advice (h from λ_max) does not, in the "
            "same passes", eff, se,
            se_over=mc, measured=measured,
            effect_text=f"max(max|z| − {tol}, max|r − 1| − {tol})"))
    return out


def run(quick: bool = False, out: str = "sgmc-reproduce", seed: int = 0,
        data_root: Any = None, smoke: bool = False) -> dict[str, Any]:
    """``sgmc reproduce warmup-comparison``: every case of :data:`CASES` with SGHMC (the
    synthetic one with SGLD too); cases whose posteriordb files are absent are skipped.
    ``quick``: the synthetic regression only, 3,000 steps; ``smoke`` (a pipeline check):
    the same case at :data:`SMOKE`'s sizes. Prints the table and the verdicts, writes
    ``warmup_comparison.png`` to ``out``."""
    import os

    cases = [(n, "sghmc") for n in CASES]
    cases.insert(1, (SYNTHETIC, "sgld"))
    if quick or smoke:
        cases = [(SYNTHETIC, "sghmc")]
    detail = (f"{SYNTHETIC} only, {SMOKE['num_steps']} sampling steps, "
              f"{SMOKE['num_chains']} chains, {SMOKE['max_draws']} draws per chain")
    if smoke:
        print(V.smoke_banner(detail))
    folder = pdb.data_folder(data_root)
    rows, skipped = [], []
    for name, kind in cases:
        if name != SYNTHETIC and not os.path.isdir(os.path.join(folder, name)):
            skipped.append(name)
            continue
        kw = (dict(SMOKE) if smoke else {"num_steps": 3_000, "isotropic": False} if quick
              else {})
        rows.append(run_case(name, kind, root=data_root, seed=seed + 1, **kw))
        print(table(rows[-1:]), flush=True)
    if skipped:
        print(f"skipped (not in {folder}): {', '.join(skipped)}")
    print(table(rows))
    judged = claims(rows)
    published = V.publish(V.smoke(judged, detail) if smoke else judged,
                          "Warm-up against the old advice: verdicts")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "warmup_comparison.png")
    plot(rows, path)
    print(f"figure: {path}")
    for row in rows:
        for r in row["runs"].values():
            r.pop("report", None)
    return {"rows": rows, "claims": published, "figures": [path], "skipped": skipped,
            "smoke": smoke}


EXPERIMENTS = [Experiment(
    "warmup-comparison", "sgmc.warmup (no step size, self-checked) against the old hand rule "
    "at the same data passes on the posteriordb regressions, eight schools and a "
    "condition-1e4 regression", "sgmc, issues 20 and 31 (Stan reference draws)", 8.0, run)]


if __name__ == "__main__":  # python -m sgmc.lab.experiments.warmup_comparison [out]
    import sys

    run(out=sys.argv[1] if len(sys.argv) > 1 else "sgmc-reproduce")
