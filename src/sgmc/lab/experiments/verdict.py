"""The one verdict rule of every reproduction and of ``sgmc demo``.

A paper's claim is turned into a measured *effect in the claimed direction* (positive when the
data agree with the claim; for a threshold claim, the margin by which the threshold is met)
with its standard error over independent replications (seeds, chains, replications or test
examples — each claim says which). Then, with z = effect / SE:

* **holds** — z > 2 (the effect exceeds 2 standard errors in the claimed direction);
* **does not hold** — z < −2 (2 standard errors the other way, or the threshold missed by
  more than 2 SE);
* **not resolved** — otherwise;
* **not tested in the paper's regime** — the run's model, data or scale differ from the
  paper's in a way that could change the answer (``in_regime=False``), and the claim did not
  hold anyway. The statistical outcome is still recorded (``outcome``).

An SE of 0 is no standard error: an effect measured once (one grid, one seed), or whose
replications happen to agree, has an unknown sampling error, and z = effect / 0 = ±∞ would
read as certainty. Such a claim is "not resolved" (with a deviation saying so) unless it
states why its effect is *exact by construction* (``exact=``: e.g. a comparison of two exact
formulas); only then does an SE of 0 decide by the sign of the effect alone. An effect of
exactly 0 with SE 0 is "not resolved". A non-finite effect or SE is "not resolved", and
:func:`check_claim_dict` refuses a "holds" whose SE is 0, missing or not finite unless the
claim carries ``exact``.

:func:`judge` returns a :class:`Claim`; :meth:`Claim.to_dict` is what ``--json`` writes per
claim: ``claim``, ``verdict``, ``rule``, ``measured`` (values with their SE), ``paper``,
``deviations``, the effect, its SE and z, and ``exact`` (why the effect has no sampling
error, or None).

A *smoke run* (``sgmc reproduce NAME --smoke``) checks the pipeline only: :func:`smoke`
re-judges its claims outside the paper's regime (the rule unchanged: a claim that holds still
says so) with the deviation "smoke run: pipeline check only, ...", and :func:`smoke_banner`
is the line its report opens with.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["HOLDS", "NOT_HOLD", "NOT_REGIME", "NOT_RESOLVED", "NO_SE", "RULE", "SMOKE",
           "VERDICTS", "Claim", "bootstrap_se", "check_claim_dict", "diff_se", "judge",
           "mean_se", "outcome", "paired", "proportion", "publish", "ratio_se", "smoke",
           "smoke_banner"]

HOLDS = "holds"
NOT_HOLD = "does not hold"
NOT_RESOLVED = "not resolved"
NOT_REGIME = "not tested in the paper's regime"
VERDICTS = (HOLDS, NOT_HOLD, NOT_RESOLVED, NOT_REGIME)

#: The rule, as printed beside every verdict.
RULE = ("holds if the effect in the claimed direction exceeds 2 SE; does not hold if it is "
        "2 SE the other way (or a threshold is missed by more than 2 SE); otherwise not "
        "resolved; 'not tested in the paper's regime' when the setting differs from the "
        "paper's in a way that could change the answer and the claim did not hold anyway; "
        "an SE of 0 decides nothing unless the effect is exact by construction")

#: How the deviation added to a claim with an SE of 0 and no ``exact`` begins (not added when
#: the claim's own deviations already say "no standard error").
NO_SE = "no standard error (SE = 0)"


@dataclass(frozen=True)
class Claim:
    """One paper claim judged by the rule (see the module docstring)."""

    claim: str
    verdict: str
    outcome: str              # the statistical outcome before the regime check
    effect: float             # in the claimed direction (> 0 supports the claim)
    se: float
    se_over: str              # what the SE is over: "4 seeds", "32 chains", ...
    measured: Mapping[str, Any]
    paper: Any = None
    deviations: Sequence[str] = field(default_factory=tuple)
    effect_text: str = ""     # how the effect is defined, e.g. "KL(SGHMC) − KL(EWSG)"
    exact: str = ""           # why the effect has no sampling error ("" unless it is exact)

    @property
    def z(self) -> float:
        return z_score(self.effect, self.se)

    def to_dict(self) -> dict:
        return {"claim": self.claim, "verdict": self.verdict, "rule": RULE,
                "outcome": self.outcome, "effect": self.effect, "se": self.se,
                "z": self.z, "se_over": self.se_over, "effect_definition": self.effect_text,
                "measured": _plain(self.measured), "paper": _plain(self.paper),
                "deviations": list(self.deviations), "exact": self.exact or None}

    def effect_str(self) -> str:
        what = f"{self.effect_text} = " if self.effect_text else "effect "
        return f"{what}{_g(self.effect)} ± {_g(self.se)} (SE over {self.se_over})"

    def line(self) -> str:
        """One printable line: claim -> verdict (effect ± SE)."""
        return f"{self.claim} -> {self.verdict.upper()} ({self.effect_str()})"

    def lines(self) -> list[str]:
        """The claim line, then its deviations (indented)."""
        out = [self.line()]
        if self.verdict == NOT_REGIME:
            out.append(f"    (statistical outcome here: {self.outcome})")
        if self.exact:
            out.append(f"    exact by construction (SE 0): {self.exact}")
        out += [f"    deviation: {d}" for d in self.deviations]
        return out


def z_score(effect: float, se: float) -> float:
    """effect / SE; ±inf for a nonzero effect with SE 0, 0 for 0 ± 0, nan if not finite."""
    if not (math.isfinite(effect) and math.isfinite(se)):
        return float("nan")
    if se > 0:
        return effect / se
    return math.copysign(math.inf, effect) if effect != 0 else 0.0


#: A z within this relative distance of ±2 is a tie, not "beyond 2 SE": an effect of exactly
#: 2 SE computed in floating point can land a rounding error above it (0.1·3 / 0.15 =
#: 2.0000000000000004; a quantised stability boundary gave 0.25 ± 0.125 this way).
Z_TIE = 1e-9


def outcome_of(z: float) -> str:
    """The rule on z: holds above 2, does not hold below −2, else (nan too, and a tie at ±2
    up to rounding, :data:`Z_TIE`) not resolved."""
    edge = 2.0 * (1.0 + Z_TIE)
    return HOLDS if z > edge else NOT_HOLD if z < -edge else NOT_RESOLVED


def _no_se(se: float) -> bool:
    """True when ``se`` is no standard error: 0, missing (None) or not finite."""
    try:
        se = float(se)
    except (TypeError, ValueError):
        return True
    return not math.isfinite(se) or se == 0


def outcome(effect: float, se: float, exact: str = "") -> str:
    """The rule on (effect, SE): :func:`outcome_of` its z, except that an SE of 0 decides
    nothing ("not resolved") unless ``exact`` says why the effect has no sampling error."""
    effect, se = float(effect), float(se)
    if se == 0 and not exact:
        return NOT_RESOLVED
    return outcome_of(z_score(effect, se))


def judge(claim: str, effect: float, se: float, *, se_over: str,
          measured: Mapping[str, Any] | None = None, paper: Any = None,
          deviations: Iterable[str] = (), in_regime: bool = True,
          effect_text: str = "", exact: str = "") -> Claim:
    """Apply the rule to an effect (in the claimed direction) and its standard error.

    Args:
        claim: the paper's claim in one sentence.
        effect: the measured effect, signed so that > 0 supports the claim (for a threshold
            claim: value − threshold in the claimed direction).
        se: its standard error (≥ 0).
        se_over: what the SE is over, e.g. ``"4 seeds"``.
        measured: the values behind the effect, each ideally ``{"value": v, "se": s}``.
        paper: the paper's numbers where it gives them.
        deviations: every setting that differs from the paper's, with the reason.
        in_regime: False when the run differs from the paper's regime in a way that could
            change the answer.
        effect_text: how the effect is computed, e.g. ``"MSE(SGHMC) − MSE(SVRG-HMC)"``.
        exact: why the effect has no sampling error (it is exact by construction). Only
            with it does an SE of 0 decide by the sign of the effect; without it a claim
            with SE 0 is "not resolved" and says so in a deviation.
    """
    effect, se = float(effect), float(se)
    if se < 0:
        raise ValueError(f"se must be ≥ 0, got {se}")
    deviations = tuple(deviations)
    out = outcome(effect, se, exact)
    if se == 0 and not exact and math.isfinite(effect) and effect != 0 \
            and not any("no standard error" in d for d in deviations):
        deviations += (f"{NO_SE} over {se_over}, and the effect is not exact by "
                       f"construction: z = {_g(z_score(effect, se))} is no evidence, so the "
                       "claim is not resolved until the effect is replicated",)
    verdict = out if in_regime or out == HOLDS else NOT_REGIME
    return Claim(claim, verdict, out, effect, se, se_over, dict(measured or {}), paper,
                 deviations, effect_text, exact)


#: How a smoke run's deviation and report begin.
SMOKE = "smoke run: pipeline check only"


def smoke(claims: Sequence[Claim], detail: str) -> list[Claim]:
    """A smoke run's claims: each judged again by the rule from its own effect and SE, with
    ``in_regime=False`` (a run of a handful of steps is not the paper's regime: a claim that
    does not hold reads "not tested in the paper's regime", one that holds still "holds")
    and the deviation ``"smoke run: pipeline check only, <detail>"`` added."""
    dev = f"{SMOKE}, {detail}"
    return [judge(c.claim, c.effect, c.se, se_over=c.se_over, measured=c.measured,
                  paper=c.paper, deviations=[*c.deviations, dev], in_regime=False,
                  effect_text=c.effect_text, exact=c.exact) for c in claims]


def smoke_banner(detail: str) -> str:
    """The first line of a smoke run's report."""
    return (f"SMOKE RUN, a pipeline check only ({detail}): its verdicts are no evidence "
            "for or against the paper\n")


def publish(claims: Sequence[Claim], title: str = "Verdicts") -> list[dict]:
    """Print the claims under the rule and return them as JSON-ready dicts (the ``claims``
    entry of an experiment's result)."""
    print(f"\n{title} (rule: {RULE}):")
    for c in claims:
        print("- " + "\n  ".join(c.lines()))
    return [c.to_dict() for c in claims]


def check_claim_dict(d: Mapping[str, Any]) -> None:
    """Raise AssertionError unless ``d`` is a claim as :meth:`Claim.to_dict` writes it and its
    verdict follows from its effect and SE by the rule (used by the tests on every
    experiment's ``--json``). Raise ValueError for a "holds" with no standard error (SE 0,
    missing or not finite) whose claim does not say, in ``exact``, why its effect has no
    sampling error."""
    exact = d.get("exact") or ""
    if d.get("verdict") == HOLDS and not exact and _no_se(d.get("se")):
        raise ValueError(
            f"claim {d.get('claim')!r} reads 'holds' with SE {d.get('se')!r}: an SE of 0 "
            "(or none) is no standard error, so z = effect / SE proves nothing; replicate the "
            "effect for a real SE, or state in 'exact' why it has no sampling error")
    for key in ("claim", "verdict", "rule", "measured", "paper", "deviations", "effect", "se"):
        assert key in d, f"claim {d.get('claim')!r} lacks {key!r}"
    assert d["verdict"] in VERDICTS, d["verdict"]
    effect, se = float(d["effect"]), float(d["se"])
    z = z_score(effect, se)
    expected = outcome(effect, se, exact)
    assert d["outcome"] == expected, (d["claim"], d["outcome"], z)
    if d["verdict"] == HOLDS:
        assert z > 2, (d["claim"], z)
    if d["verdict"] != NOT_REGIME:
        assert d["verdict"] == expected, (d["claim"], d["verdict"], z)
    assert isinstance(d["deviations"], list)


# -- standard errors -----------------------------------------------------------------------
def mean_se(values) -> tuple[float, float]:
    """Mean and standard error (ddof = 1) of independent replications; SE nan for one."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        return float("nan"), float("nan")
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else float("nan")
    return float(v.mean()), se


def paired(a, b) -> tuple[float, float]:
    """Mean and SE of a − b over paired replications (same seeds / chains)."""
    return mean_se(np.asarray(a, np.float64) - np.asarray(b, np.float64))


def bootstrap_se(stat, data, reps: int = 200, seed: int = 0) -> float:
    """SE of ``stat(data)`` by resampling ``data``'s leading axis (independent chains or
    replications) with replacement ``reps`` times."""
    x = np.asarray(data)
    rng = np.random.default_rng(seed)
    vals = [stat(x[rng.integers(0, x.shape[0], x.shape[0])]) for _ in range(reps)]
    return float(np.std(vals, ddof=1))


def diff_se(se_a: float, se_b: float) -> float:
    """SE of the difference of two independent estimates."""
    return float(math.hypot(se_a, se_b))


def ratio_se(a: float, se_a: float, b: float, se_b: float) -> tuple[float, float]:
    """a/b and its delta-method SE for independent a and b."""
    r = a / b
    return float(r), float(abs(r) * math.hypot(se_a / a, se_b / b))


def proportion(successes: float, trials: int) -> tuple[float, float]:
    """A success rate s/n and its binomial SE sqrt(p̃(1 − p̃)/n), with p̃ = (s + 1)/(n + 2)
    (Laplace's rule) so that 0/n and n/n do not claim an SE of 0."""
    p_tilde = (float(successes) + 1.0) / (trials + 2.0)
    return float(successes) / trials, float(math.sqrt(p_tilde * (1 - p_tilde) / trials))


def _g(x: float) -> str:
    return f"{x:.3g}" if isinstance(x, (int, float)) and math.isfinite(x) else str(x)


def _plain(x):
    """JSON-ready copy (NumPy scalars and arrays to Python numbers and lists)."""
    if isinstance(x, Mapping):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    return x
