"""The EWSG paper's 2-D Gaussian experiment (Li, Wang, Zha & Tao, Sec. 5.1).

V(θ) = Σ_{i=1}^{n} ½‖θ − c_i‖² with c_i ~ N(0, I₂) and n = 20, i.e. a posterior with a flat
prior whose exact law at τ = 1 is N(c̄, I/n). Many independent chains (10,000) from θ = 0 are
run as one vectorised computation with batch size 1 for 30 data passes; at every draw a
Gaussian is fitted to the chains and its KL divergence to the exact target is recorded against
data passes (per-example gradients / n). Step sizes as in the paper: SGLD and pSGLD 5e-3,
SGHMC and EWSG 5e-2 with γ = 10, SVRG-LD 5e-4 (K = n). SGHMC and EWSG use the paper's
integrator, explicit Euler–Maruyama (eq. 3: θ_{k+1} = θ_k + h r_k,
r_{k+1} = r_k − (∇Ṽ(θ_k) + γ r_k)h + σ√h ξ; ``integrator="explicit"``). Also: EWSG's choices
of x, and the index-chain length M at n ∈ {20, 50, 100} (the shift of the best M between
n = 20 and 100 replicated over data seeds and chains: :mod:`~sgmc.lab.experiments.ewsg_best_m`).
Standard errors of a KL are by a bootstrap over the independent chains. The target and the
chain runner live in :mod:`~sgmc.lab.experiments.ewsg_gaussian_target` (re-exported here).

Theorem 4, eq. (6) (Fig. 1j–1l): E|φ̄_K − φ̄|² ≤ C(1/T + (h/T)·(mean SG variance) + h²),
T = K h, for EWSG with M = 1 (``sghmc(h, friction=γ, batch_size=1, estimator=ewsg(),
integrator="explicit")``). The
paper's test function is "the variance"; here φ(θ) = ‖θ − c̄‖², whose exact mean is
tr(I/n) = 2/n. φ̄_K is the time average of φ over the K draws of one chain (every step is
recorded, thin = 1); the MSE is the mean over independent chains of (φ̄_K − 2/n)². Every chain
starts from its own draw of the target N(c̄, I/n) (momentum from N(0, I), the driver's
default), so there is no initial transient to average out; within a panel all step sizes use
the same seed (common random numbers). Slopes are least-squares fits of log MSE on log T or
log h, with a bootstrap over chains for their standard error (se); "local" slopes join
consecutive points. Each slope claim is judged by the verdict rule
(:mod:`sgmc.lab.experiments.verdict`) with the effect 0.2 − |fit − theory| (the margin by which
the fit is within a stated tolerance of 0.2 of the theory's slope) and the bootstrap se.

(j) MSE against T at fixed h, γ = 10 (theory −1), at h = 0.02 and at the paper's h = 0.05;
    the bias of E φ at the largest T is printed (its square is the h² term). With the
    explicit integrator EWSG's bias of E φ changes sign near h ≈ 0.02 (negative at 0.01,
    positive from 0.03 on; printed in (k) and (l)), so at h = 0.02 the h² term stays below
    the 1/T term over T = 5–200, while at h = 0.05 it is reached within that range.
(k) MSE against h at fixed T = 5, γ = 10 (theory +1, if the h/T term dominated). Printed
    beside it: the exact MSE of the same explicit scheme with the full gradient (no SG noise
    at all; computed in closed form, the scheme being linear), i.e. how much of the MSE is
    already there without the second term.
(l) MSE against h with T → ∞ (theory +2). Runs of T = 50 after a burn-in of 5 time units
    (quick: 20 after 5); the T → ∞ MSE is the squared bias, estimated from all chains as
    ē² − s²/N (ē the mean error, s² its variance over the N chains), printed beside its Monte
    Carlo variance s²/N. Explicit Euler–Maruyama (the paper's integrator) with γ = 10 for
    h = 0.04–0.09 (γh < 1) and, in the full run, the splitting integrator with γ = 10 for
    h = 0.05–0.4 as a comparison (no γh constraint; h√n < 2 keeps it stable).
2,000 chains; ``quick``: 500 chains, T = 5, 15, 50 in (j), h = 0.01, 0.02, 0.04 in (k),
explicit h = 0.04, 0.06, 0.09 in (l) and no splitting runs (one compiled program in all).
``smoke`` (a pipeline check, :data:`SMOKE`): EWSG and SGHMC only, 100 chains, 2 passes, 3 draws
per curve, x = default only and M = 1 only (EWSG's curve, its x = default and its M = 1 run
share one compiled program), and two points per MSE panel on 100 chains (one more program):
three programs in all; the claims whose samplers or settings are not run are judged NaN.
"""

from __future__ import annotations

import itertools
import math
import os
import time

import jax.numpy as jnp
import numpy as np

from sgmc import diagnostics, ewsg, psgld, sample, sghmc, sgld, svrg
from sgmc.lab.experiments import Experiment
from sgmc.lab.experiments import verdict as V
from sgmc.lab.experiments._plot import pyplot, save
from sgmc.lab.experiments.ewsg_best_m import best_m_claim, m_sweep, replicate_shifts
from sgmc.lab.experiments.ewsg_gaussian_target import INTEGRATOR, kl_curve, problem, run_one

__all__ = ["EXPERIMENTS", "INTEGRATOR", "fullgrad_mse_exact", "kl_curve", "mse_study",
           "phi_path", "problem", "run", "run_one", "samplers"]

def samplers(n: int) -> dict:
    """The paper's samplers and step sizes for data size ``n``, batch 1: name ->
    (sampler, per-example gradient evaluations per step), the second for data-pass
    accounting (SVRG-LD's 3 counts the snapshot amortised over K = n steps)."""
    return {
        "SGLD": (sgld(5e-3, batch_size=1), 1.0),
        "pSGLD": (psgld(5e-3, batch_size=1), 1.0),
        "SGHMC": (sghmc(5e-2, friction=10.0, batch_size=1, integrator=INTEGRATOR), 1.0),
        "EWSG": (sghmc(5e-2, friction=10.0, batch_size=1, estimator=ewsg(),
                       integrator=INTEGRATOR), 2.0),
        "SVRG-LD": (sgld(5e-4, batch_size=1, estimator=svrg(n)), 2.0 + 1.0),
    }


#: The smoke run's sizes (module docstring): samplers, chains, passes, draws per curve, the x
#: choices and the M values of the sweep at n = 20.
SMOKE = {"samplers": ("SGHMC", "EWSG"), "chains": 100, "passes": 2, "points": 3,
         "x": ("default",), "M": (1,)}


def _kl_se(last, mu, sigma) -> float:
    """Bootstrap SE over chains of the KL of the Gaussian fitted to ``last`` (chains, 2)."""
    return V.bootstrap_se(lambda x: diagnostics.gaussian_kl(x, mu, sigma), last)


def run(quick: bool = False, out: str = "sgmc-reproduce", seed: int = 0, data_root=None,
        smoke: bool = False) -> dict:
    chains, passes = ((SMOKE["chains"], SMOKE["passes"]) if smoke else (2_000, 10) if quick
                      else (10_000, 30))
    points = SMOKE["points"] if smoke else 30
    n = 20
    post, mu, sigma = problem(n, seed)
    result = {"chains": chains, "passes": passes, "integrator": INTEGRATOR, "curves": {},
              "x_choices": {}, "M_sweep": {}, "smoke": smoke}
    kl_se, x_se = {}, {}
    detail = (f"{' and '.join(SMOKE['samplers'])} only, {chains} chains, {passes} passes, "
              f"x = default and M = 1 only, 2 points per MSE panel")
    if smoke:
        print(V.smoke_banner(detail))
    for name, (smp, per) in samplers(n).items():
        if smoke and name not in SMOKE["samplers"]:
            continue
        res = run_one(post, smp, per, n, passes, chains, seed + 1, points=points)
        kl = kl_curve(res.samples, mu, sigma)
        kl_se[name] = _kl_se(np.asarray(res.samples)[:, -1], mu, sigma)
        result["curves"][name] = {"passes": res.data_passes[0].tolist(), "kl": kl.tolist(),
                                  "kl_se_at_end": kl_se[name]}
    for x in SMOKE["x"] if smoke else ("default", "zero", "one", "next_zero"):
        smp = sghmc(5e-2, friction=10.0, batch_size=1, estimator=ewsg(x=x),
                    integrator=INTEGRATOR)
        res = run_one(post, smp, 2.0, n, passes, chains, seed + 2, points=3)
        result["x_choices"][x] = float(kl_curve(res.samples[:, -1:], mu, sigma)[0])
        x_se[x] = _kl_se(np.asarray(res.samples)[:, -1], mu, sigma)
    ms = SMOKE["M"] if smoke else (1, 4) if quick else (1, 2, 4, 8)
    for n_m in ((20,) if quick or smoke else (20, 50, 100)):
        result["M_sweep"][n_m] = m_sweep(n_m, seed, seed + 3, ms, chains, passes)

    final = {k: v["kl"][-1] for k, v in result["curves"].items()}
    print(f"EWSG paper, 2-D Gaussian (n = {n}, batch 1, {chains} chains, {passes} data passes; "
          f"SGHMC and EWSG with the {INTEGRATOR} integrator, eq. 3)\n")
    print(f"{'sampler':<10}{'KL at end':>12}{'± SE':>9}")
    for k, v in final.items():
        print(f"{k:<10}{v:>12.4f}{kl_se[k]:>9.4f}")
    print("\nx choice (EWSG, KL at end): " + ", ".join(
        f"{k} {v:.4f} ± {x_se[k]:.4f}" for k, v in result["x_choices"].items()))
    for n_m, row in result["M_sweep"].items():
        best = min(row, key=row.get)
        print(f"M sweep at n = {n_m}: " + ", ".join(f"M={m} {v:.4f}" for m, v in row.items())
              + f" (best M = {best})")
    claims = _kl_claims(result, final, kl_se, x_se, quick, chains, passes)
    # The best M against n: its shift replicated over data seeds and chains (ewsg_best_m).
    shifts = (replicate_shifts(result["M_sweep"], seed, chains, passes)
              if len(result["M_sweep"]) > 1 else [])
    for rep in shifts:
        print(f"  replication {rep['replication']} (data seed {rep['data_seed']}): best M "
              + ", ".join(f"{k[7:]} {v}" for k, v in rep.items() if k.startswith("best_M"))
              + f"; shift of log2(best M) {rep['shift']:+g}")
    claims.append(best_m_claim(result["M_sweep"], shifts, deviations=_size(quick, chains,
                                                                           passes)))
    print()
    mse, mse_claims = mse_study(post, mu, n, quick, seed, smoke=smoke)
    claims += mse_claims
    published = V.publish(V.smoke(claims, detail) if smoke else claims,
                          "EWSG paper, Sec. 5.1: verdicts")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "ewsg_gaussian_kl.png")
    _figure(result["curves"], path)
    mse_path = os.path.join(out, "ewsg_gaussian_mse.png")
    _mse_figure(mse, mse_path)
    print(f"\nfigures: {path}, {mse_path}")
    result.update(claims=published, figures=[path, mse_path], final=final, final_se=kl_se,
                  x_choices_se=x_se, mse=mse)
    result["M_sweep"] = {str(k): {str(m): v for m, v in row.items()}
                         for k, row in result["M_sweep"].items()}
    result["M_replications"] = shifts
    return result


def _size(quick: bool, chains: int, passes: float) -> list[str]:
    return [f"quick run: {chains} chains and {passes} passes (paper: 10,000 and 30)"] \
        if quick else []


def _kl_claims(result, final, kl_se, x_se, quick, chains, passes) -> list[V.Claim]:
    """The KL claims of Sec. 5.1 (Fig. 1a, 1c) judged by the rule; SE: bootstrap over the
    independent chains (the samplers' runs are independent, so SEs of differences add in
    quadrature)."""
    over = f"{chains} chains (bootstrap)"
    size = _size(quick, chains, passes)
    # (A smoke run has some samplers and x choices only: a claim without its runs is NaN.)
    nan = float("nan")
    final = {**dict.fromkeys(("SGLD", "pSGLD", "SGHMC", "EWSG", "SVRG-LD"), nan), **final}
    kl_se = {**dict.fromkeys(final, nan), **kl_se}
    others = {k: final[k] for k in ("SGHMC", "SGLD", "pSGLD")}
    best = min(others, key=lambda k: (math.isnan(others[k]), others[k]))
    not_svrg = {k: v for k, v in final.items() if k != "SVRG-LD"}
    rival = min(not_svrg, key=lambda k: (math.isnan(not_svrg[k]), not_svrg[k]))
    xs = {k: v for k, v in result["x_choices"].items() if k != "default"}
    x_best = min(xs, key=xs.get) if xs else "none run"
    xs.setdefault(x_best, nan)
    x_se = {**{x_best: nan}, **x_se}
    ran = {k: {"value": v, "se": kl_se[k]} for k, v in final.items() if not math.isnan(v)}
    claims = [
        V.judge("EWSG is more accurate (lower KL) than SGHMC, SGLD and pSGLD (Fig. 1a)",
                final[best] - final["EWSG"], V.diff_se(kl_se[best], kl_se["EWSG"]),
                se_over=over, effect_text=f"KL({best}, the best other) − KL(EWSG)",
                measured=ran, paper="Fig. 1a: EWSG below SGHMC, SGLD, pSGLD at 30 passes",
                deviations=size),
        V.judge("SVRG-LD is the most accurate (but slowest per pass) (Fig. 1a)",
                final[rival] - final["SVRG-LD"], V.diff_se(kl_se[rival], kl_se["SVRG-LD"]),
                se_over=over, effect_text=f"KL({rival}, the best other) − KL(SVRG-LD)",
                measured=ran, paper="Fig. 1a: SVRG-LD lowest KL at 30 passes",
                deviations=size),
        V.judge("x = √h γ r/σ beats x = 0, x = 1 and the r_{k+1} = 0 choice (Fig. 1c)",
                xs[x_best] - result["x_choices"]["default"],
                V.diff_se(x_se[x_best], x_se["default"]), se_over=over,
                effect_text=f"KL(x = {x_best}, the best other) − KL(default x)",
                measured={k: {"value": v, "se": x_se[k]}
                          for k, v in result["x_choices"].items()},
                paper="Fig. 1c: the default x clearly best", deviations=size),
    ]
    return claims


# --- Theorem 4, eq. (6): MSE of the time average against T and h (Fig. 1j–1l) -------------

#: Draws per compiled block in the MSE runs. Every run is a whole number of blocks (its length
#: rounded up; the time averages use exactly the steps asked for), so that all explicit runs —
#: any h, γ or length — share one compiled program (and the splitting runs a second).
_MSE_BLOCK = 125
_BOOTSTRAP = 400
_FRICTION = 10.0


def _mse_settings(quick: bool, smoke: bool = False) -> dict:
    if smoke:  # two points per panel (a slope), 100 chains, runs of one or two blocks
        return {"chains": 100, "j_h": (0.02, 0.05), "j_T": (2.5, 5.0), "k_T": 2.5,
                "k_h": (0.02, 0.04), "l_burn": 1.0, "l_T": 2.5, "l_explicit_h": (0.04, 0.09),
                "l_split_h": ()}
    if quick:
        return {"chains": 500, "j_h": (0.02, 0.05), "j_T": (5.0, 15.0, 50.0),
                "k_T": 5.0, "k_h": (0.01, 0.02, 0.04),
                "l_burn": 5.0, "l_T": 20.0, "l_explicit_h": (0.04, 0.06, 0.09), "l_split_h": ()}
    return {"chains": 2000, "j_h": (0.02, 0.05), "j_T": (5.0, 10.0, 20.0, 50.0, 100.0, 200.0),
            "k_T": 5.0, "k_h": (0.0025, 0.005, 0.01, 0.02, 0.04),
            "l_burn": 5.0, "l_T": 50.0, "l_explicit_h": (0.04, 0.05, 0.06, 0.07, 0.08, 0.09),
            "l_split_h": (0.05, 0.1, 0.2, 0.4)}


def phi_path(post, mu, sampler, init, num_steps: int, seed: int) -> np.ndarray:
    """φ(θ_k) = ‖θ_k − c̄‖² after every step k = 1, 2, … (at least ``num_steps`` of them),
    shaped (chains, steps), in float64; one chain per row of ``init``."""
    steps = -(-num_steps // _MSE_BLOCK) * _MSE_BLOCK
    res = sample(post, sampler, init, num_steps=steps, num_chains=init.shape[0], thin=1,
                 seed=seed, progress=False, draws_per_block=_MSE_BLOCK)
    x = np.asarray(res.samples)
    phi = np.empty(x.shape[:2])
    for a in range(0, x.shape[0], 256):  # float64, a slice of chains at a time
        phi[a:a + 256] = np.sum((x[a:a + 256].astype(np.float64) - mu) ** 2, axis=-1)
    return phi


def fullgrad_mse_exact(h: float, friction: float, n: int, num_steps: int, dim: int = 2,
                       integrator: str = INTEGRATOR) -> float:
    """Exact E(φ̄_K − 2/n)² for the scheme with the full gradient n(θ − c̄) (no SG noise) from
    θ₀ ~ N(c̄, I/n), r₀ ~ N(0, I). Each coordinate (x, r) is a linear Gaussian AR(1),
    z_{k+1} = A z_k + b σ√h ξ, so E φ̄ and Var φ̄ follow from the covariances
    Cov(x_{j+ℓ}, x_j) = (A^ℓ Σ_j)₀₀ and Cov(x_j², x_k²) = 2 Cov(x_j, x_k)². Explicit
    Euler–Maruyama (eq. 3): A = [[1, h], [−hn, 1 − γh]], b = (0, 1); semi-implicit Euler
    ("euler"): A = [[1 − h²n, h(1 − γh)], [−hn, 1 − γh]], b = (h, 1)."""
    a = 1.0 - friction * h
    if integrator == "explicit":
        trans, b = np.array([[1.0, h], [-h * n, a]]), np.array([0.0, 1.0])
    else:
        trans, b = np.array([[1.0 - h * h * n, h * a], [-h * n, a]]), np.array([h, 1.0])
    q = 2.0 * friction * h * np.outer(b, b)
    cov = np.diag([1.0 / n, 1.0])
    col = np.empty((num_steps, 2))  # Σ_k[:, 0] for the draws k = 1 … K
    for k in range(num_steps):
        cov = trans @ cov @ trans.T + q
        col[k] = cov[:, 0]
    row = np.array([1.0, 0.0])  # first row of A^ℓ
    total = 0.0  # Σ_{j,k} Cov(x_j, x_k)²
    for lag in range(num_steps):
        c = col[:num_steps - lag] @ row
        total += (1.0 if lag == 0 else 2.0) * float(c @ c)
        row = row @ trans
    mean = dim * col[:, 0].mean()
    return float((mean - dim / n) ** 2 + dim * 2.0 * total / num_steps ** 2)


def _loglog(x, y):
    """Least-squares slope and intercept of log y on log x along the last axis, and the local
    slopes between consecutive points."""
    lx = np.log(np.asarray(x, np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        ly = np.log(y)
    dx = lx - lx.mean()
    slope = (ly - ly.mean(-1, keepdims=True)) @ dx / (dx @ dx)
    return slope, ly.mean(-1) - slope * lx.mean(), np.diff(ly, axis=-1) / np.diff(lx)


def _mse(err):
    return np.mean(err ** 2, axis=-2)


def _bias2(err):
    """ē² − s²/N: unbiased for the squared bias (the T → ∞ MSE); chains on axis −2."""
    return np.mean(err, axis=-2) ** 2 - np.var(err, axis=-2, ddof=1) / err.shape[-2]


#: A slope claim's tolerance: the effect is SLOPE_TOL − |fit − theory|.
SLOPE_TOL = 0.2


def _fit(x, stat, err, theory: float, rng) -> dict:
    """Slope of log stat(err) against log x (err: (chains, points)), with bootstrap standard
    errors over chains, and the margin SLOPE_TOL − |slope − theory| (the rule's effect)."""
    slope, intercept, local = _loglog(x, stat(err))
    idx = rng.integers(0, err.shape[0], (_BOOTSTRAP, err.shape[0]))
    b_slope, _, b_local = _loglog(x, stat(err[idx]))
    se = float(np.nanstd(b_slope))
    local_se = np.nanstd(b_local, axis=0)
    margin = SLOPE_TOL - abs(float(slope) - theory)
    return {"slope": float(slope), "slope_se": se, "intercept": float(intercept),
            "local_slopes": local.tolist(), "local_slopes_se": local_se.tolist(),
            "theory": theory, "margin": margin,
            "z": margin / se if se > 0 else float("nan")}


def _verdict(fit: dict) -> str:
    """The rule's statistical outcome for a slope (before any regime check)."""
    return V.judge("", fit["margin"], fit["slope_se"], se_over="").outcome


def _slope_claim(claim: str, fit: dict, chains: int, paper: str, deviations=(),
                 in_regime: bool = True, label: str = "") -> V.Claim:
    return V.judge(claim, fit["margin"], fit["slope_se"],
                   se_over=f"{chains} chains (bootstrap of the fit)",
                   effect_text=f"{SLOPE_TOL:g} − |slope − ({fit['theory']:+g})|{label}",
                   measured={"slope": {"value": fit["slope"], "se": fit["slope_se"]},
                             "local_slopes": fit["local_slopes"]},
                   paper=paper, deviations=deviations, in_regime=in_regime)


def _slope_text(fit: dict) -> str:
    local = ", ".join(f"{v:+.2f}" for v in fit["local_slopes"])
    return f"{fit['slope']:+.2f} ± {fit['slope_se']:.2f} (local {local})"


def mse_study(post, mu, n: int, quick: bool, seed: int,
              smoke: bool = False) -> tuple[dict, list[V.Claim]]:
    """Panels (j), (k), (l) of Fig. 1: the MSE of the time average of φ = ‖θ − c̄‖² against T
    and h, with fitted log-log slopes (see the module docstring). Returns the numbers and
    the judged claims (``smoke``: the smoke run's sizes, :func:`_mse_settings`)."""
    cfg = _mse_settings(quick, smoke)
    t_start = time.perf_counter()
    chains, target = cfg["chains"], 2.0 / n
    start = np.random.default_rng(seed + 10).standard_normal((chains, 2)) / math.sqrt(n)
    init = jnp.asarray(mu + start, jnp.float32)  # one draw of the target per chain
    boot = np.random.default_rng(seed + 11)

    def ewsg_sampler(h, integrator=INTEGRATOR):
        return sghmc(h, friction=_FRICTION, batch_size=1, estimator=ewsg(),
                     integrator=integrator)

    def steps(t, h):
        return max(1, round(t / h))

    print(f"Theorem 4 / eq. (6): MSE of the time average of φ = ‖θ − c̄‖² (exact mean "
          f"2/n = {target:g}); EWSG, M = 1, γ = {_FRICTION:g}, {INTEGRATOR} integrator; "
          f"{chains} chains, each from a draw of the target; every step recorded")

    # (j) MSE against T at fixed h.
    runs = {}
    for h in cfg["j_h"]:
        ks = [steps(t, h) for t in cfg["j_T"]]
        phi = phi_path(post, mu, ewsg_sampler(h), init, max(ks), seed + 4)
        err = np.stack([phi[:, :k].mean(1) for k in ks], axis=1) - target
        del phi
        t_vals = [round(k * h, 9) for k in ks]
        mse = _mse(err)
        bias = float(err[:, -1].mean())
        runs[str(h)] = {"h": h, "T": t_vals, "mse": mse.tolist(), "bias_at_T_max": bias,
                        "bias2_share_at_T_max": float(bias ** 2 / mse[-1]),
                        **_fit(t_vals, _mse, err, -1.0, boot)}
    main_j = runs[str(cfg["j_h"][0])]
    vs_t = {"friction": _FRICTION, "h": cfg["j_h"][0], "slope": main_j["slope"],
            "slope_se": main_j["slope_se"], "theory": -1.0, "margin": main_j["margin"],
            "runs": runs}
    print("\n(j) MSE against T at fixed h")
    print(f"{'T':>8}" + "".join(f"{'h = ' + str(h):>14}" for h in cfg["j_h"]))
    for i, t in enumerate(cfg["j_T"]):
        print(f"{t:>8g}" + "".join(f"{r['mse'][i]:>14.3e}" for r in runs.values()))
    for r in runs.values():
        print(f"h = {r['h']}: slope {_slope_text(r)}, theory −1 -> {_verdict(r)}; bias at "
              f"T = {r['T'][-1]:g}: {r['bias_at_T_max']:+.4f} (bias² = "
              f"{100 * r['bias2_share_at_T_max']:.0f}% of the MSE there)")

    # (k) MSE against h at fixed T.
    k_t = cfg["k_T"]
    err = np.stack([phi_path(post, mu, ewsg_sampler(h), init, steps(k_t, h), seed + 5)
                    [:, :steps(k_t, h)].mean(1) for h in cfg["k_h"]], axis=1) - target
    exact = [fullgrad_mse_exact(h, _FRICTION, n, steps(k_t, h), integrator=INTEGRATOR)
             for h in cfg["k_h"]]
    vs_h = {"T": k_t, "friction": _FRICTION, "h": list(cfg["k_h"]), "mse": _mse(err).tolist(),
            "variance": err.var(0).tolist(), "bias": err.mean(0).tolist(),
            "bias_se": (err.std(0, ddof=1) / math.sqrt(chains)).tolist(),
            "fullgrad_exact_mse": exact, **_fit(cfg["k_h"], _mse, err, 1.0, boot)}
    print(f"\n(k) MSE against h at fixed T = {k_t:g}")
    print(f"{'h':>8}{'MSE':>12}{'full-grad':>12}{'variance':>12}{'bias':>10}{'± se':>9}")
    for i, h in enumerate(cfg["k_h"]):
        print(f"{h:>8g}{vs_h['mse'][i]:>12.3e}{exact[i]:>12.3e}{vs_h['variance'][i]:>12.3e}"
              f"{vs_h['bias'][i]:>+10.4f}{vs_h['bias_se'][i]:>9.4f}")
    print(f"slope {_slope_text(vs_h)}, theory +1 -> {_verdict(vs_h)} (full-grad: the exact MSE "
          f"of the same {INTEGRATOR} scheme without SG noise)")

    # (l) MSE against h with T → ∞: the squared bias.
    def t_inf(hs, integrator):
        rows = []
        for h in hs:
            burn, k = steps(cfg["l_burn"], h), steps(cfg["l_T"], h)
            phi = phi_path(post, mu, ewsg_sampler(h, integrator), init, burn + k, seed + 6)
            rows.append(phi[:, burn:burn + k].mean(1) - target)
        e = np.stack(rows, axis=1)
        b2, mc_var = _bias2(e), e.var(0, ddof=1) / chains
        return {"integrator": integrator, "friction": _FRICTION, "h": list(hs),
                "T": cfg["l_T"], "burn_in_T": cfg["l_burn"], "bias": e.mean(0).tolist(),
                "bias2": b2.tolist(), "mc_variance": mc_var.tolist(),
                "bias2_over_mc_variance": float(np.min(b2 / mc_var)),
                "mse_at_T": _mse(e).tolist(), **_fit(hs, _bias2, e, 2.0, boot)}

    vs_inf = {INTEGRATOR: t_inf(cfg["l_explicit_h"], INTEGRATOR)}
    if cfg["l_split_h"]:
        vs_inf["splitting"] = t_inf(cfg["l_split_h"], "splitting")
    print(f"\n(l) MSE against h with T → ∞: bias² = ē² − s²/N from runs of T = {cfg['l_T']:g} "
          f"after {cfg['l_burn']:g} of burn-in, against its MC variance s²/N")
    print(f"{'integrator':<11}{'h':>7}{'bias':>10}{'bias²':>11}{'MC var':>11}{'MSE at T':>11}")
    for r in vs_inf.values():
        for i, h in enumerate(r["h"]):
            print(f"{r['integrator']:<11}{h:>7g}{r['bias'][i]:>+10.4f}{r['bias2'][i]:>11.3e}"
                  f"{r['mc_variance'][i]:>11.3e}{r['mse_at_T'][i]:>11.3e}")
        print(f"{r['integrator']}: slope {_slope_text(r)}, theory +2 -> {_verdict(r)}; "
              f"bias² ≥ {r['bias2_over_mc_variance']:.0f} × its MC variance")
    # Biases resolved at 2 se, of (k) and of (l)'s explicit runs together, ordered by h.
    sign = [(h, b) for h, b, se in zip(vs_h["h"], vs_h["bias"], vs_h["bias_se"], strict=True)
            if abs(b) > 2 * se]
    sign += list(zip(vs_inf[INTEGRATOR]["h"], vs_inf[INTEGRATOR]["bias"], strict=True))
    flips = [(h0, h1) for (h0, b0), (h1, b1) in itertools.pairwise(sorted(sign))
             if b0 * b1 < 0 and h0 < h1]
    if flips:
        print(f"EWSG's bias of E φ ({INTEGRATOR}, γ = 10) changes sign between h = "
              + " and between h = ".join(f"{a:g} and {b:g}" for a, b in flips)
              + " ((k) and (l)): near there the log-log slope of bias² is not meaningful")
    elapsed = time.perf_counter() - t_start
    print(f"(MSE study: {elapsed:.0f} s)")

    # Claims, each judged by the rule (effect SLOPE_TOL − |slope − theory|, bootstrap se).
    paper_j = runs[str(cfg["j_h"][1])]
    ratio = np.asarray(vs_h["mse"]) / np.asarray(exact)
    size = [f"quick run: {chains} chains, {len(cfg['j_T'])} points per panel"] if quick else []
    claims = [_slope_claim(
        f"(Thm. 4, Fig. 1j) at fixed h = {main_j['h']:g} the MSE of the time average falls "
        f"like 1/T (T = {cfg['j_T'][0]:g}–{cfg['j_T'][-1]:g})", main_j, chains,
        "Fig. 1j: slope −1", deviations=size)]
    reached = paper_j["bias2_share_at_T_max"] > 0.5
    claims.append(_slope_claim(
        f"(Thm. 4, Fig. 1j) at the paper's h = {paper_j['h']:g} the MSE falls like 1/T "
        f"(T = {cfg['j_T'][0]:g}–{cfg['j_T'][-1]:g})", paper_j, chains, "Fig. 1j: slope −1",
        deviations=size + ([f"the h² term of eq. (6) is reached in this T range (bias² = "
                            f"{100 * paper_j['bias2_share_at_T_max']:.0f}% of the MSE at T = "
                            f"{paper_j['T'][-1]:g}), where eq. (6) itself predicts the MSE to "
                            "level off; the paper does not give its T range"]
                           if reached else []),
        in_regime=not reached))
    k_dominated = bool(np.max(np.abs(ratio - 1)) < 0.3)
    claims.append(_slope_claim(
        f"(Thm. 4, Fig. 1k) at fixed T = {k_t:g} and small h the MSE grows like h (the h/T "
        f"term; h = {cfg['k_h'][0]:g}–{cfg['k_h'][-1]:g})", vs_h, chains, "Fig. 1k: slope +1",
        deviations=size + ([f"the h/T term does not dominate at any h measured: EWSG's MSE is "
                            f"{min(ratio):.2f}–{max(ratio):.2f} × that of the same scheme "
                            "with the full gradient (no SG noise; exact), i.e. the 1/T term "
                            "dominates"] if k_dominated else []),
        in_regime=not k_dominated))
    for r in vs_inf.values():
        lo_h, hi_h = r["h"][0], r["h"][-1]
        inside = [f for f in flips if lo_h <= f[1] and f[0] <= hi_h] \
            if r["integrator"] == INTEGRATOR else []
        devs = list(size)
        if r["integrator"] != INTEGRATOR:
            devs.append(f"{r['integrator']} integrator: a comparison, not the paper's eq. (3), "
                        "for which Thm. 4 is stated")
        if inside:
            devs.append("EWSG's bias of E φ changes sign at the low end of or inside this "
                        "h range (between h = " + " and between h = ".join(
                            f"{a:g} and {b:g}" for a, b in inside) + "), so bias² is not one "
                        "power of h there; a clean h² needs h well below the sign change, "
                        "and far longer runs")
        claims.append(_slope_claim(
            f"(Thm. 4, Fig. 1l) with T → ∞ the MSE (bias²) grows like h², even for large h "
            f"({r['integrator']}, h = {lo_h:g}–{hi_h:g}; bias² ≥ "
            f"{r['bias2_over_mc_variance']:.0f} × its MC variance)", r, chains,
            "Fig. 1l: slope +2", deviations=devs,
            in_regime=not inside and r["integrator"] == INTEGRATOR))
    return {"test_function": "phi(theta) = |theta - mean(c)|^2, exact mean 2/n",
            "chains": chains, "start": "one draw of the target per chain",
            "friction": _FRICTION, "vs_T": vs_t, "vs_h": vs_h, "vs_h_T_inf": vs_inf,
            "bias_sign_changes": flips, "seconds": elapsed}, claims


def _mse_figure(mse: dict, path: str) -> None:
    plt = pyplot()
    from matplotlib.ticker import NullFormatter

    def fitted(ax, x, r, color):
        x = np.asarray(x, np.float64)
        ax.loglog(x, np.exp(r["intercept"]) * x ** r["slope"], "--", color=color, lw=1)

    def theory(ax, x, y0, slope):  # the theory's slope through the first point
        x = np.asarray(x, np.float64)
        ax.loglog(x, y0 * (x / x[0]) ** slope, ":", color="grey", lw=1,
                  label=f"slope {slope:+g} (theory)")

    fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
    ax = axes[0]
    for r in mse["vs_T"]["runs"].values():
        (line,) = ax.loglog(r["T"], r["mse"], "o", label=f"h = {r['h']}: slope "
                            f"{r['slope']:+.2f} ± {r['slope_se']:.2f}")
        fitted(ax, r["T"], r, line.get_color())
    first = next(iter(mse["vs_T"]["runs"].values()))
    theory(ax, first["T"], first["mse"][0], -1.0)
    ax.set(xlabel="T = K h", ylabel="MSE of the time average φ̄_K",
           title="(j) against T, fixed h (theory slope −1)")
    ax = axes[1]
    r = mse["vs_h"]
    (line,) = ax.loglog(r["h"], r["mse"], "o", label=f"EWSG: slope {r['slope']:+.2f} ± "
                        f"{r['slope_se']:.2f}")
    fitted(ax, r["h"], r, line.get_color())
    ax.loglog(r["h"], r["fullgrad_exact_mse"], "k-", lw=1, label="full gradient (exact)")
    theory(ax, r["h"], r["mse"][0], 1.0)
    ax.set_ylim(min(r["mse"]) / 3, max(max(r["mse"]) * 3, r["mse"][0] * r["h"][-1] / r["h"][0]))
    ax.set(xlabel="step size h", ylabel="MSE",
           title=f"(k) against h, T = {r['T']:g} (theory slope +1)")
    ax = axes[2]
    for r in mse["vs_h_T_inf"].values():
        (line,) = ax.loglog(r["h"], r["bias2"], "o", label=f"{r['integrator']}: slope "
                            f"{r['slope']:+.2f} ± {r['slope_se']:.2f}")
        fitted(ax, r["h"], r, line.get_color())
        ax.loglog(r["h"], r["mc_variance"], "x", color=line.get_color(), ms=5,
                  label=f"{r['integrator']}: MC variance s²/N")
    first = next(iter(mse["vs_h_T_inf"].values()))
    theory(ax, first["h"], first["bias2"][0], 2.0)
    ax.set(xlabel="step size h", ylabel="bias² (T → ∞ MSE)",
           title="(l) against h, T → ∞ (theory slope +2)")
    ticks = [mse["vs_T"]["runs"][str(mse["vs_T"]["h"])]["T"], mse["vs_h"]["h"],
             sorted({h for r in mse["vs_h_T_inf"].values() for h in r["h"]})]
    for ax, xs in zip(axes, ticks, strict=True):
        ax.legend(fontsize=7)
        ax.set_xticks(xs, [f"{x:.3g}" for x in xs], fontsize=7, rotation=45)
        ax.xaxis.set_minor_formatter(NullFormatter())
    fig.suptitle(f"EWSG (M = 1, γ = {mse['friction']:g}) on the 2-D Gaussian: MSE of the time "
                 "average of ‖θ − c̄‖²", fontsize=10)
    save(fig, path)


def _figure(curves: dict, path: str) -> None:
    plt = pyplot()

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, c in curves.items():
        ax.semilogy(c["passes"], c["kl"], label=name)
    ax.set(xlabel="data passes", ylabel="KL(fitted Gaussian ‖ target)",
           title="2-D Gaussian, n = 20, batch 1")
    ax.legend(fontsize=8)
    save(fig, path)


EXPERIMENTS = [Experiment("ewsg-gaussian", "2-D Gaussian, 10,000 chains: KL vs data passes for "
                          "SGLD, pSGLD, SGHMC, EWSG, SVRG-LD; x choices; M sweep; Thm. 4 MSE "
                          "slopes against T and h (Fig. 1j-l)",
                          "Li et al., EWSG, Sec. 5.1", 5.0, run)]
