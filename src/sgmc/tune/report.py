"""What :func:`sgmc.warmup` returns: ``(tuned, start)`` as a :class:`Warmup`, with the
:class:`WarmupReport` of what it measured and chose; and the error a Ctrl-C in it raises."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from sgmc.errors import WarmupInterrupted

__all__ = ["Warmup", "WarmupReport"]

PyTree = Any


@dataclasses.dataclass(frozen=True)
class WarmupReport:
    """What :func:`warmup` measured and chose; passes are full data passes (per-example
    gradient evaluations / N; a Hessian-vector product counts 2)."""

    passes: dict          # by stage: "mode", "curvature", "noise", "draws", "check"
    seconds: float
    preconditioner: str   # identity | diagonal | dense | low_rank
    curvature: tuple      # (λ_min, λ_max) of the whitened Hessian Lᵀ H L
    raw_curvature: tuple  # (λ_min, λ_max) of H itself (nan for d > dense_max: H not formed)
    noise: float          # B at the first step size: the largest eigenvalue of the whitened
    #                       gradient-noise covariance where a run keeps its anchor
    step_sizes: tuple     # one per replica (one for a plain sampler): the steps sample uses
    friction: float | None
    inflation: tuple      # at each step size, the predicted variance ratio farthest from 1
    svrg_period: int | None
    energy_at_mode: float
    noise_se: float = math.nan    # standard error of the independent-draw measurement of B
    noise_detail: dict = dataclasses.field(default_factory=dict)  # how B was measured:
    #   rows, "independent" (B, SE) at an anchor independent of the point, "near" at 1/8 of
    #   that distance, "ages" of the anchor, "at step" (B, SE, g) at the step's own distance
    checks: tuple = ()    # the self-check's pilots (sgmc.tune.selfcheck.Check), in order
    step_given: bool = False  # the step size was the user's (kept; no self-check)
    #: steps after which the draws were stationary in warm-up's pilots (the network guard,
    #: :mod:`sgmc.tune.stationary`): ``sample(..., burn_in=report.burn_in)``; None when
    #: no pilot measured it (small d: the mode is a start in the bulk)
    burn_in: int | None = None

    @property
    def total_passes(self) -> float:
        return float(sum(self.passes.values()))

    def __str__(self) -> str:
        h = ", ".join(f"{v:.4g}" for v in self.step_sizes)
        lines = [f"warmup: {self.total_passes:.1f} data passes ("
                 + ", ".join(f"{k} {v:.1f}" for k, v in self.passes.items())
                 + f"), {self.seconds:.1f} s",
                 f"  preconditioner {self.preconditioner}; whitened curvature "
                 f"[{self.curvature[0]:.3g}, {self.curvature[1]:.3g}] (raw "
                 + (f"[{self.raw_curvature[0]:.3g}, {self.raw_curvature[1]:.3g}])"
                    if math.isfinite(self.raw_curvature[0]) else "not formed for large d)")
                 + f"; gradient noise B = {self.noise:.3g} ± {self.noise_se:.2g}",
                 f"  step size {h}" + ("" if self.friction is None
                                       else f", friction {self.friction:.4g}")
                 + "; predicted inflation "
                 + ", ".join(f"{v:.3f}" for v in self.inflation)]
        if self.step_given:
            lines.append("  step size given by the sampler (model units): kept, not checked")
        if self.burn_in is not None:
            lines.append(f"  burn-in {self.burn_in} steps (stationary after them in the "
                         "guard's pilots: sample(..., burn_in=report.burn_in))")
        if self.svrg_period is not None:
            lines.append(f"  SVRG period {self.svrg_period}")
        lines += [f"  check {c}" for c in self.checks]
        return "\n".join(lines)


class Warmup(tuple):
    """``(tuned, start)``, as unpacked by ``tuned, start = sgmc.warmup(...)``, with the
    :class:`WarmupReport` as ``.report``."""

    report: WarmupReport

    def __new__(cls, tuned: Any, start: PyTree, report: WarmupReport) -> Warmup:
        out = super().__new__(cls, (tuned, start))
        out.report = report
        return out


def interrupted(problem, at: dict, passes: dict) -> WarmupInterrupted:
    """Ctrl-C in a stage: what the warm-up holds (``at``), and how to go on from it."""
    z = at["mode"]
    held = [text for k, text in (("mode", "the mode (.mode, on the model's scale)"),
                                 ("preconditioner", "the preconditioner (.preconditioner)"),
                                 ("curvature", "its whitened curvature (.curvature)"))
            if at[k] is not None]
    held = " and ".join([", ".join(held[:-1]), held[-1]] if len(held) > 1 else held)
    head = (f"warmup interrupted in its {at['stage']} stage after "
            f"{sum(passes.values()):.3g} data passes")
    if z is None:
        return WarmupInterrupted(at["stage"], passes=passes, message=(
            f"{head}; the mode search had not finished and nothing is kept: sgmc.warmup "
            "starts over (a smaller optimizer_steps shortens its mode search)"))
    return WarmupInterrupted(at["stage"], problem.constrain(z), at["curvature"],
                             at["preconditioner"], passes, message=(
        f"{head}; it holds {held}. sgmc.warmup(problem, sampler, err.mode, "
        "optimizer_steps=1, learning_rate=1e-6), err being this error, starts from that "
        "mode without searching again (one negligible Adam step) and redoes the later stages"))
