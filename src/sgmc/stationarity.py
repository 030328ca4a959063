"""Is a run stationary? A drift test of the statistics every kept draw records.

:func:`sgmc.sample` records, at every kept draw, the draw's log prior, its minibatch mean
log-likelihood per datum and the minibatch estimate of its energy (``res.info["log_prior"]``,
``["loglik"]``, ``["energy"]``: :mod:`sgmc.run.stats`). A sampler whose step is too large
for the problem can drift — a network's weights growing without bound, the log prior falling
for the whole run — while its predictions, R-hat of single weights and ESS look fine. These
scalar traces show it.

**The drift test** (Geweke's, with a batch-means standard error), per statistic and chain,
on the trace x₁..x_n of the kept draws (n ≥ :data:`MIN_DRAWS`):

* drift = mean of the last :data:`LAST` of the draws (B) − mean of the first :data:`FIRST`
  (A); the gap between them keeps their means nearly independent;
* its standard error SE² = σ²_∞ (1/|A| + 1/|B|), with σ²_∞ the long-run variance (the
  variance of √n × a mean, which autocorrelation inflates) by batch means: batches of m
  draws, m ≈ 3 τ̂ (τ̂ the integrated autocorrelation time, Geyer's initial monotone
  sequence, the larger of B's and the whole trace's, each less its line) so that B holds
  between :data:`MIN_BATCHES` and :data:`MAX_BATCHES` batches; σ²_∞ = m × the variance of the batch
  means about their least-squares line within A and within B (pooled; k − 2 degrees of
  freedom per part of k ≥ 3 batches), divided by 1 − τ̂ / 2m (batch means of finite m
  underestimate σ²_∞ by that much, to first order, for AR(1)-like correlations; at most a
  factor 2). About a line: a steady trend does not inflate the SE, it is the drift itself;
* t = drift / SE, Student's t with the pooled degrees of freedom under stationarity; it is
  reported as the normal quantile z of the same tail probability (z ~ N(0, 1) for a
  stationary trace). A constant trace has z = 0; one whose batch means are constant but
  whose parts differ, z = ±inf; so does a *runaway* — the last part's mean beyond the first
  part's range by more than :data:`RUNAWAY` times that range (exponential growth, whose
  curvature would otherwise swamp the batch means).

**The verdict**: with M such tests (statistics × chains × replicas recorded), the run is
*not stationary* when any |z| exceeds the Bonferroni threshold z* = Φ⁻¹(1 − α / 2M), with
α = :data:`ALPHA` = 0.25 % (z* = 3.71 for 4 chains × 3 statistics). Measured on correctly
sampled conjugate linear-regression posteriors started from the sampler's exact stationary
law (4 chains × 3 statistics, 1,500 runs of 400 draws, 500 of 100 and 500 of 2,000): the
warning's false-alarm rate was 0.5 %, 1.0 % and 0 % (at α = 1 % it would have been 1.9 %,
3.6 % and 0.8 %: batch means of energies, skewed and autocorrelated, have heavier tails than
Student's t).
Fewer than :data:`MIN_DRAWS` kept draws per chain: no verdict ("too few draws").

A chain that mixes slowly for the length of the run (τ̂ comparable to n / 10 or more)
cannot be told from a drifting one and is flagged too: both need a longer run (or a
smaller step, if it drifts). Between chains, the split R-hat of each statistic (Gelman et
al., BDA3) is reported alongside; it does not enter the verdict.
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any, NamedTuple

import numpy as np
from scipy import special, stats

from sgmc.errors import SamplingWarning

__all__ = ["ALPHA", "FIRST", "LAST", "MAX_BATCHES", "MIN_BATCHES", "MIN_DRAWS", "RUNAWAY",
           "STATISTICS",
           "Diagnosis", "Drift", "diagnose", "drift", "split_rhat", "warn_if_not_stationary"]

#: The statistics tested, in the table's order (those a run recorded: ``res.info`` keys).
STATISTICS = ("log_prior", "loglik", "energy")
#: Fewest kept draws per chain for a verdict.
MIN_DRAWS = 20
#: The parts of the kept draws compared: the first 20 % and the last 50 % (Geweke's 10 % /
#: 50 %, with a longer first part for short runs).
FIRST, LAST = 0.2, 0.5
#: Batches of the last part for the standard error (batch size ≈ 3 τ̂ within these bounds).
MIN_BATCHES, MAX_BATCHES = 5, 10
BATCH_TAUS = 3.0
#: The nominal false-alarm rate of the verdict (Bonferroni over the tests; module docstring).
ALPHA = 0.0025
#: A trace whose last part's mean lies beyond the first part's range by more than this many
#: times that range has run away (z = ±inf): exponential growth defeats the batch means.
RUNAWAY = 100.0


class Drift(NamedTuple):
    """The drift test of one trace (module docstring): the means of the first and last parts,
    their difference, its standard error, t = drift / se with its degrees of freedom (k − 2
    for k batches), the normal-equivalent z and the two-sided p-value."""

    first: float
    last: float
    drift: float
    se: float
    t: float
    dof: int
    z: float
    p: float


_NO_TEST = Drift(*(math.nan,) * 5, 0, math.nan, math.nan)


def _integrated_time(x: np.ndarray) -> float:
    """τ̂ = 1 + 2 Σ ρ_k by Geyer's initial monotone sequence (≥ 1/len); 1 for a constant x."""
    n = len(x)
    x = x - x.mean()
    f = np.fft.rfft(x, 2 * n)
    acov = np.fft.irfft(f * np.conj(f))[:n]
    if not acov[0] > 0:
        return 1.0
    rho = acov / acov[0]
    pairs = rho[:n - n % 2].reshape(-1, 2).sum(axis=1)
    positive = np.argmax(pairs <= 0) if np.any(pairs <= 0) else len(pairs)
    pairs = np.minimum.accumulate(pairs[:positive])
    return max(2.0 * pairs.sum() - 1.0, 1.0 / n)


def _line_residuals(v: np.ndarray) -> np.ndarray:
    """``v`` less its least-squares line (over its index)."""
    t = np.arange(len(v)) - (len(v) - 1) / 2
    return v - v.mean() - t * (t @ v) / (t @ t)


def _batch_ss(x: np.ndarray, m: int) -> tuple[float, int]:
    """(Σ squared residuals of x's batch means of m draws about their line, degrees of
    freedom): the batches are x's first k·m draws, k = len(x) // m; none below 3 batches."""
    k = len(x) // m
    if k < 3:
        return 0.0, 0
    r = _line_residuals(x[:k * m].reshape(k, m).mean(axis=1))
    return float(r @ r), k - 2


def drift(trace: Any) -> Drift:
    """The drift test of one chain's trace of one statistic (module docstring). NaN
    everywhere (no test) for fewer than :data:`MIN_DRAWS` draws or a non-finite value."""
    x = np.asarray(trace, np.float64).reshape(-1)
    n = len(x)
    if n < MIN_DRAWS or not np.all(np.isfinite(x)):
        return _NO_TEST
    n_a, n_b = max(1, round(FIRST * n)), int(LAST * n)
    a, b = x[:n_a], x[n - n_b:]
    tau = max(_integrated_time(_line_residuals(b)), _integrated_time(_line_residuals(x)))
    k = max(min(MIN_BATCHES, n_b), min(MAX_BATCHES, n_b // max(1, math.ceil(BATCH_TAUS * tau))))
    m = n_b // k
    ss_b, dof_b = _batch_ss(b[n_b - k * m:], m)
    ss_a, dof_a = _batch_ss(a, m)
    dof = dof_a + dof_b
    # Batch means of m draws underestimate σ²_∞ by about τ / 2m (to first order, for
    # AR(1) correlations): corrected, by at most a factor 2.
    long_run = m * (ss_a + ss_b) / dof / max(0.5, 1 - tau / (2 * m))
    d = float(b.mean() - a.mean())
    se = math.sqrt(long_run * (1 / n_a + 1 / n_b))
    means = float(a.mean()), float(b.mean())
    beyond = max(b.mean() - a.max(), a.min() - b.mean())
    rounding = 1e-12 * float(np.abs(x).max())  # an SE below this is float noise: none
    if not se > rounding or beyond > RUNAWAY * (a.max() - a.min()):  # no noise, a runaway
        z = 0.0 if d == 0 else math.copysign(math.inf, d)
        return Drift(*means, d, se, z, dof, z, float(d == 0))
    log_tail = stats.t.logsf(abs(d) / se, dof)  # one side; z of the same tail below
    z = math.copysign(float(-special.ndtri_exp(log_tail)), d)
    return Drift(*means, d, se, d / se, dof, z, float(min(1.0, 2 * math.exp(log_tail))))


def split_rhat(traces: Any) -> float:
    """Split R-hat (Gelman et al., BDA3 §11.4) of traces shaped (chains, draws): each chain
    cut in halves, √(var⁺ / W). NaN with fewer than 4 draws or a non-finite value; 1 for
    constant traces."""
    x = np.asarray(traces, np.float64)
    half = x.shape[1] // 2
    if half < 2 or not np.all(np.isfinite(x)):
        return math.nan
    parts = np.concatenate([x[:, :half], x[:, x.shape[1] - half:]])
    within = parts.var(axis=1, ddof=1).mean()
    between = half * parts.mean(axis=1).var(ddof=1)
    if not within > 0:
        return 1.0 if not between > 0 else math.inf
    return math.sqrt(((half - 1) / half * within + between / half) / within)


#: The table's columns.
COLUMNS = ("statistic", "chain", "draws", "first", "last", "drift", "se", "t", "dof", "z",
           "r_hat")


class Table:
    """A plain table (used when pandas is not installed): ``rows``, a list of dicts keyed by
    :data:`COLUMNS`; prints aligned."""

    def __init__(self, rows: list[dict]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __str__(self) -> str:
        cells = [list(COLUMNS)] + [[_cell(r[c]) for c in COLUMNS] for r in self.rows]
        widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]
        return "\n".join("  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True))
                         for row in cells)

    __repr__ = __str__


def _cell(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _table(rows: list[dict]) -> Any:
    try:
        import pandas as pd
    except ImportError:  # pandas is optional (the diagnostics extra)
        return Table(rows)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _text(table: Any) -> str:
    """Every row and column of the table (a DataFrame's ``to_string``)."""
    return table.to_string(float_format=_cell) if hasattr(table, "to_string") else str(table)


class Diagnosis:
    """The outcome of :func:`diagnose` (``res.diagnose()``).

    Attributes:
        verdict: ``"ok"``, ``"not stationary"``, ``"too few draws"`` (fewer than
            :data:`MIN_DRAWS` kept draws per chain) or ``"not recorded"`` (no statistics in
            ``res.info``: a run with ``diagnose=False``).
        table: one row per statistic and chain (and replica, for draws that keep every
            replica): the means of the first and last parts, the drift, its standard
            error, z, and the statistic's split R-hat across chains — a
            ``pandas.DataFrame``, or a printable :class:`Table` without pandas.
        threshold: z* = Φ⁻¹(1 − α / 2M); a run is not stationary when any |z| > z*.
        tests: M, the number of drift tests; ``alpha``: the false-alarm rate α.
        worst: the row of the largest |z| (a dict), or None.
    """

    def __init__(self, rows: list[dict], verdict: str, alpha: float, draws: int) -> None:
        self.rows, self.verdict, self.alpha, self.draws = rows, verdict, alpha, draws
        tested = [r for r in rows if not math.isnan(r["z"])]
        self.tests = len(tested)
        self.threshold = float(stats.norm.isf(alpha / (2 * max(1, self.tests))))
        self.worst = max(tested, key=lambda r: abs(r["z"])) if tested else None

    @functools.cached_property
    def table(self) -> Any:
        """The rows as a table, built when first read (a DataFrame costs ~1 ms: a short
        run that is stationary never needs it)."""
        return _table(self.rows)

    @property
    def ok(self) -> bool:
        """True unless the verdict is "not stationary"."""
        return self.verdict != "not stationary"

    def summary(self) -> str:
        """One sentence: the verdict and, when not stationary, the worst statistic."""
        if self.verdict == "not recorded":
            return ("no drift statistics in res.info (a run with diagnose=False, or by an "
                    "older sgmc): nothing to judge")
        if self.verdict == "too few draws":
            return (f"too few draws to judge: {self.draws} kept per chain, at least "
                    f"{MIN_DRAWS} needed")
        w = self.worst
        where = (f"{w['statistic']} of chain {w['chain']} changes by {w['drift']:+.4g} ± "
                 f"{w['se']:.2g} from the first {FIRST:.0%} to the last {LAST:.0%} of the kept "
                 f"draws (t = {w['t']:+.3g} on {w['dof']} d.f.: z = {w['z']:+.1f})")
        rule = (f"|z| > {self.threshold:.2f} flags a drift: {self.tests} tests, a "
                f"nominal false-alarm rate of {100 * self.alpha:.2g} %")
        if self.verdict == "ok":
            return f"ok: no drift; the largest: {where}; {rule}"
        return f"not stationary: {where}; {rule}"

    def __str__(self) -> str:
        rhat = [r["r_hat"] for r in self.rows if np.isfinite(r["r_hat"])]
        note = (f"\nthe chains disagree: R-hat up to {max(rhat):.3g} (more steps, or "
                "dispersed starts, tell whether they meet)" if rhat and max(rhat) > 1.1
                else "")
        table = f"{_text(self.table)}\n" if len(self.rows) else ""
        return ("Drift of the kept draws' statistics (last part − first part, ± batch-means "
                f"standard error; split R-hat across chains):\n{table}"
                f"verdict: {self.summary()}{note}")

    def __repr__(self) -> str:
        return f"Diagnosis(verdict={self.verdict!r}, tests={self.tests})"


def _series(info: dict) -> list[tuple[str, np.ndarray]]:
    """(label, traces (chains, draws)) of every recorded statistic (per replica when the
    draws keep every replica: ``energy[r]``)."""
    out = []
    for name in STATISTICS:
        x = info.get(name)
        if x is None or np.ndim(x) < 2:
            continue
        x = np.asarray(x, np.float64)
        if x.ndim == 2:
            out.append((name, x))
            continue
        flat = x.reshape(*x.shape[:2], -1)
        out.extend((f"{name}[{r}]", flat[:, :, r]) for r in range(flat.shape[2]))
    return out


def diagnose(result: Any, alpha: float = ALPHA) -> Diagnosis:
    """The drift test (module docstring) of a :class:`sgmc.Result`'s recorded statistics:
    ``res.diagnose()``.

    Args:
        result: a Result (its ``info``), or a dict of ``info`` arrays.
        alpha: the false-alarm rate on a stationary run, in (0, 1).
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    info = result if isinstance(result, dict) else result.info
    series = _series(info)
    if not series:
        return Diagnosis([], "not recorded", alpha, 0)
    draws = series[0][1].shape[1]
    rows = []
    for label, x in series:
        rhat = split_rhat(x)
        for c in range(x.shape[0]):
            rows.append(dict(zip(COLUMNS[:3], (label, c, x.shape[1]), strict=True),
                             **drift(x[c])._asdict(), r_hat=rhat))
    rows = [{k: r[k] for k in COLUMNS} for r in rows]
    if draws < MIN_DRAWS:
        return Diagnosis(rows, "too few draws", alpha, draws)
    diagnosis = Diagnosis(rows, "ok", alpha, draws)
    if diagnosis.worst is not None and abs(diagnosis.worst["z"]) > diagnosis.threshold:
        diagnosis.verdict = "not stationary"
    return diagnosis


def warn_if_not_stationary(result: Any, alpha: float = ALPHA, stacklevel: int = 2) -> None:
    """``warnings.warn`` an :class:`sgmc.SamplingWarning` when :func:`diagnose` finds the run
    not stationary (the end of ``sgmc.sample`` and ``sgmc.resume``)."""
    d = diagnose(result, alpha)
    if d.ok:
        return
    warnings.warn(
        f"sgmc.sample: the run is {d.summary()}. A sampler whose step is too large drifts "
        "(and a chain that mixes too slowly for the run looks the same): try a smaller step "
        "size (half), a longer burn_in or more steps, or sgmc.warmup(..., check=True); "
        "res.diagnose() shows every statistic and chain (sample(..., diagnose=False) turns "
        "this check off)", SamplingWarning, stacklevel=stacklevel + 1)
