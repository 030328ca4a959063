"""The stability boundary of a sampler's step size, replicated over independent seeds (issue 36).

The SVRG-HMC paper (Li et al., Sec. 5.1 and 5.3; Thm. 5: a bias term h⁴ for the splitting
integrator instead of h²) claims that SVRG2nd-HMC "tolerates a larger step" than SVRG-HMC.
Read off one step grid and one seed, that comparison has no standard error: every chain of
the grid lands on the same grid point, so the paired SE is 0 and the verdict rule
(:mod:`.verdict`) cannot judge it. Here the claim is measured as a replicated quantity:

* for each of R independent seeds r (one chain each), the **boundary** b_r is the largest
  step h on the log grid h = h₀·2^(k/res), k an integer, that is stable (the caller's
  ``stable(h, seed)``: finite, and whatever else the experiment requires) while the next grid
  step up, h₀·2^((k+1)/res), is not. It is found by :func:`boundary`: from h₀, steps of a
  factor 2 up (or down) until the outcome changes, then bisection in k down to one grid step,
  i.e. a relative resolution of 2^(1/res) (res = 8: 9 %), far finer than a search grid's
  factors 1.2–3. With one seed the minibatches and the noise are the same at every h (common
  random numbers), which keeps "stable" close to monotone in h, as bisection assumes.
* the effect of "A tolerates larger steps than B" is the mean over seeds of
  log₂(b_r(A) / b_r(B)) (paired: both samplers use seed r), its SE the sd over seeds / √R
  (:func:`paired_log2_ratio`). A boundary outside the scanned range is *censored* (recorded
  as the last stable step, or 0 when even the lowest is not) and the claim says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from sgmc.lab.experiments import verdict as V

__all__ = ["NO_SE_DEVIATION", "RESOLUTION", "boundary", "censoring_deviation",
           "paired_log2_ratio", "replicate", "summary"]

#: Grid steps per factor 2 of h: the boundary's relative resolution is 2^(1/RESOLUTION).
RESOLUTION = 8

#: The deviation of a "larger steps" claim whose effect has an SE of 0 (every seed's boundary
#: ratio is the same grid ratio): no standard error, so "not resolved" (issue 36).
NO_SE_DEVIATION = ("every seed gives the same boundary ratio at the scan's resolution "
                   f"2^(1/{RESOLUTION}): no standard error (SE 0 measures the grid, not the "
                   "sampling error); more seeds or a finer resolution are owed")


def boundary(stable: Callable[[float], bool], h0: float, *, resolution: int = RESOLUTION,
             octaves_up: int = 4, octaves_down: int = 4) -> dict:
    """The stability boundary of one seed on the grid h₀·2^(k/``resolution``).

    From k = 0, moves a factor 2 (``resolution`` grid steps) at a time up while ``stable``
    holds (at most ``octaves_up`` times) or down while it fails (at most ``octaves_down``),
    then bisects the bracket [stable k_lo, unstable k_hi] until k_hi = k_lo + 1. Each grid
    point is probed at most once. Returns ``{"boundary": h₀·2^(k_lo/res) (0.0 if no probe was
    stable), "censored": "above" | "below" | None, "resolution": 2^(1/res), "probes":
    [[h, stable], ...] in probe order}``."""
    seen: dict[int, bool] = {}

    def probe(k: int) -> bool:
        if k not in seen:
            seen[k] = bool(stable(h0 * 2.0 ** (k / resolution)))
        return seen[k]

    lo = hi = None
    if probe(0):
        lo = 0
        while hi is None and lo < octaves_up * resolution:
            k = lo + resolution
            if probe(k):
                lo = k
            else:
                hi = k
    else:
        hi = 0
        while lo is None and hi > -octaves_down * resolution:
            k = hi - resolution
            if probe(k):
                lo = k
            else:
                hi = k
    if lo is not None and hi is not None:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if probe(mid):
                lo = mid
            else:
                hi = mid
    censored = "above" if hi is None else "below" if lo is None else None
    return {"boundary": 0.0 if lo is None else h0 * 2.0 ** (lo / resolution),
            "censored": censored, "resolution": 2.0 ** (1.0 / resolution),
            "probes": [[h0 * 2.0 ** (k / resolution), ok] for k, ok in seen.items()]}


def replicate(stable: Callable[[float, int], bool], h0: float, seeds: Sequence[int],
              **kw) -> list[dict]:
    """:func:`boundary` for each seed: ``stable(h, seed)`` with the seed fixed per scan."""
    return [dict(boundary(lambda h, r=r: stable(h, r), h0, **kw), seed=int(r)) for r in seeds]


def paired_log2_ratio(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Mean over seeds of log₂(a_r / b_r) and its SE (sd / √R, :func:`.verdict.paired`);
    (nan, nan) if either list is empty, of different lengths, or holds a boundary ≤ 0 (no
    stable step was found: the ratio is undefined)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if not a.size or a.shape != b.shape or not ((a > 0).all() and (b > 0).all()):
        return float("nan"), float("nan")
    return V.paired(np.log2(a), np.log2(b))


def censoring_deviation(scans: dict[str, Sequence[dict]]) -> list[str]:
    """The deviation for boundaries outside the scanned range (``scans``: per sampler, the
    :func:`replicate` records), or [] when every boundary was bracketed."""
    out = []
    for name, recs in scans.items():
        for side in ("above", "below"):
            k = sum(r.get("censored") == side for r in recs)
            where = ("stable up to the highest step scanned" if side == "above" else
                     "stable at no step down to the lowest scanned")
            if k:
                out.append(f"{name}: the boundary of {k} of {len(recs)} seeds is censored "
                           f"{side} ({where}): the ratio is a bound there, not a measurement")
    return out


def summary(recs: Sequence[dict]) -> dict:
    """Boundaries per seed with their mean and SE of log₂ (for the JSON and the table)."""
    b = [r["boundary"] for r in recs]
    pos = [x for x in b if x > 0]
    m, se = V.mean_se(np.log2(pos)) if pos else (float("nan"), float("nan"))
    return {"per_seed": b, "log2_mean": m, "log2_se": se,
            "geo_mean": 2.0 ** m if math.isfinite(m) else float("nan"),
            "probes": sum(len(r["probes"]) for r in recs)}
