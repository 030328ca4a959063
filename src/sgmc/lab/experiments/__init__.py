"""Paper experiments, run with ``sgmc reproduce NAME`` (``--list`` shows them all).

Each experiment prints the paper's claim beside what was measured, writes figures to
``--out`` and returns a JSON-serialisable dict of its numbers (``--json PATH`` saves it).
``--quick`` runs a reduced version (under a minute; the slow tests use it) and ``--smoke``
the smallest one (seconds, mostly compiling: fewest samplers, a handful of steps and chains,
tiny data subsets), which the default tests use as a pipeline check: run, claims judged by
the rule (outside the paper's regime, :func:`~sgmc.lab.experiments.verdict.smoke`), printed
report, JSON and figures.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Experiment:
    name: str
    summary: str
    paper: str
    minutes_full: float
    run: Callable[..., dict]  # run(quick, out, seed, data_root, smoke=False) -> dict


def registry() -> dict[str, Experiment]:
    """All experiments by name (imported lazily: each pulls in its own dependencies)."""
    from sgmc.lab.experiments import (
        bnn_uci,
        cyclical_mixture,
        ewsg_classification,
        ewsg_gaussian,
        gdxld,
        svrg_hmc,
        svrg_hmc_bnn,
        vr_resghmc_classifier,
        vr_resgld_mixture,
        vr_resgld_regime,
        warmup_comparison,
    )

    exps = [*svrg_hmc.EXPERIMENTS, *ewsg_gaussian.EXPERIMENTS, *ewsg_classification.EXPERIMENTS,
            *vr_resgld_mixture.EXPERIMENTS, *vr_resgld_regime.EXPERIMENTS,
            *vr_resghmc_classifier.EXPERIMENTS,
            *gdxld.EXPERIMENTS, *svrg_hmc_bnn.EXPERIMENTS, *warmup_comparison.EXPERIMENTS,
            *cyclical_mixture.EXPERIMENTS, *bnn_uci.EXPERIMENTS]
    return {e.name: e for e in exps}
