"""EWSG's index-chain length M against the data size n (Li, Wang, Zha & Tao, EWSG, Sec. 5.1,
Fig. 1d–1h): "larger M trades bias for variance", so the best M grows with n.

At each data size n and each M, EWSG (h = 0.05, γ = 10, batch 1, the paper's explicit
Euler–Maruyama, eq. 3; M + 1 per-example gradients a step) runs ``chains`` independent chains
from θ = 0 for ``passes`` data passes on the 2-D Gaussian of
:func:`~sgmc.lab.experiments.ewsg_gaussian_target.problem`; the KL between the Gaussian fitted
over the chains at the end and the exact law ranks the M, and best M(n) = argmin_M KL.

The claim's effect is the shift Δ = log2 best M(n_max) − log2 best M(n_min), averaged over R
independent replications — replication r draws the centres from ``seed + r`` and the chains
from ``seed + 3 + 1000 r`` (r = 0 is the main sweep, printed as the table) — with the standard
error sd(Δ_r)/√R over them. A bootstrap over the chains of one replication cannot give the
argmin a standard error: 10,000 chains resolve every KL gap, so the resampled argmin never
moves and its SE is 0, which the verdict rule does not accept as a standard error. The spread
over independent data sets and chains is also what "grows with n" is about.
"""

from __future__ import annotations

import math

import numpy as np

from sgmc import diagnostics, ewsg, sghmc
from sgmc.lab.experiments import verdict as V
from sgmc.lab.experiments.ewsg_gaussian_target import INTEGRATOR, problem, run_one

__all__ = ["REPLICATIONS", "best_log2m", "best_m_claim", "m_sweep", "replicate_shifts"]

#: Independent replications (data seeds and chains) of the shift of log2(best M).
REPLICATIONS = 6


def m_sweep(n: int, seed: int, chain_seed: int, ms, chains: int, passes: float) -> dict:
    """KL at the end of the run of EWSG with index-chain length M, for each M in ``ms``, on
    ``problem(n, seed)`` (chains from ``chain_seed``): {M: KL}."""
    post, mu, sigma = problem(n, seed)
    row = {}
    for m in ms:
        smp = sghmc(5e-2, friction=10.0, batch_size=1, estimator=ewsg(chain_length=m),
                    integrator=INTEGRATOR)
        res = run_one(post, smp, m + 1.0, n, passes, chains, chain_seed, points=3)
        row[m] = float(diagnostics.gaussian_kl(np.asarray(res.samples)[:, -1], mu, sigma))
    return row


def best_log2m(row: dict) -> float:
    """log2 of the M with the lowest KL in a sweep row {M: KL}."""
    return math.log2(min(row, key=row.get))


def replicate_shifts(main: dict, seed: int, chains: int, passes: float,
                     replications: int = REPLICATIONS) -> list[dict]:
    """Per replication: best M at the smallest and the largest n of the main sweep ``main``
    ({n: {M: KL}}, replication 0) and the shift Δ_r of log2(best M) between them; the others
    rerun the sweep at those two n only (module docstring)."""
    lo, hi = min(main), max(main)
    ms = sorted(main[lo])
    rows = [(main[lo], main[hi])]
    for r in range(1, replications):
        rows.append(tuple(m_sweep(n, seed + r, seed + 3 + 1000 * r, ms, chains, passes)
                          for n in (lo, hi)))
    return [{"replication": r, "data_seed": seed + r, f"best_M_n{lo}": min(a, key=a.get),
             f"best_M_n{hi}": min(b, key=b.get), "shift": best_log2m(b) - best_log2m(a),
             f"kl_n{lo}": {str(m): v for m, v in a.items()},
             f"kl_n{hi}": {str(m): v for m, v in b.items()}}
            for r, (a, b) in enumerate(rows)]


def best_m_claim(main: dict, shifts: list[dict], deviations=()) -> V.Claim:
    """The claim "the best M grows with n" judged by the rule: effect the mean over the
    replications of the shift of log2(best M) from the smallest to the largest n, SE over
    the replications (NaN with one n: no trend can be measured). Outside the paper's regime
    when the best KL at some n exceeds 0.5 (every M fails to sample there, so "best M" ranks
    failing samplers)."""
    ns = sorted(main)
    ms = sorted(main[ns[0]])
    if len(ns) > 1 and len(shifts) > 1:
        effect, se = V.mean_se([s["shift"] for s in shifts])
    else:
        effect, se = float("nan"), float("nan")
    devs = list(deviations)
    if len(ns) == 1:
        devs.append(f"n = {ns[0]} only, no trend in n can be measured")
    best_kl = {n: min(main[n].values()) for n in ns}
    failing = [n for n in ns if best_kl[n] > 0.5]
    if failing:
        devs.append(f"at n = {', '.join(map(str, failing))} the paper's fixed h = 0.05 does not "
                    f"sample accurately here (KL ≥ {min(best_kl[n] for n in failing):.2f} for "
                    "every M in the main sweep), so 'best M' compares failing samplers")
    devs.append(f"M ∈ {ms} only (the paper's best M reaches 19)")
    return V.judge(
        "larger M trades bias for variance: the best M grows with n (Fig. 1d–1h)",
        effect, se,
        se_over=(f"{len(shifts)} replications (data seeds and chains)" if shifts
                 else "no replications (one n: no shift)"),
        effect_text=f"mean over replications of log2(best M at n = {ns[-1]}) − log2(best M "
                    f"at n = {ns[0]})",
        measured={"main_sweep": {str(n): {str(m): v for m, v in main[n].items()} for n in ns},
                  "replications": shifts},
        paper="best M = 19 at n = 50 and 100 (Fig. 1g, 1h), small at n = 20",
        deviations=devs, in_regime=len(ns) > 1 and not failing)
