"""Paper experiments, run with ``sgmc reproduce NAME`` (``--list`` shows them all).

Each experiment prints the paper's claim beside what was measured, writes figures to
``--out`` and returns a JSON-serialisable dict of its numbers (``--json PATH`` saves it).
``--quick`` runs a reduced version (under a minute) that the tests use.
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
    run: Callable[..., dict]  # run(quick: bool, out: str, seed: int, data_root) -> dict


def registry() -> dict[str, Experiment]:
    """All experiments by name (imported lazily: each pulls in its own dependencies)."""
    from sgmc.lab.experiments import (
        cyclical_mixture,
        ewsg_classification,
        ewsg_gaussian,
        gdxld,
        svrg_hmc,
        svrg_hmc_bnn,
        vr_resghmc_classifier,
        vr_resgld_mixture,
        warmup_comparison,
    )

    exps = [*svrg_hmc.EXPERIMENTS, *ewsg_gaussian.EXPERIMENTS, *ewsg_classification.EXPERIMENTS,
            *vr_resgld_mixture.EXPERIMENTS, *vr_resghmc_classifier.EXPERIMENTS,
            *gdxld.EXPERIMENTS, *svrg_hmc_bnn.EXPERIMENTS, *warmup_comparison.EXPERIMENTS,
            *cyclical_mixture.EXPERIMENTS]
    return {e.name: e for e in exps}
