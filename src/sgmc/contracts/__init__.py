"""The contracts: Protocols that declare every member a runner or tuner reads of a kernel and
of the pieces a kernel is composed of, each with its default (docs/architecture.md).

* :mod:`~sgmc.contracts.kernel` — what :func:`sgmc.sample` runs (:class:`Kernel`);
* :mod:`~sgmc.contracts.tunable` — what :func:`sgmc.warmup` reads of a kernel;
* :mod:`~sgmc.contracts.estimator` — how ∇U is estimated from a minibatch;
* :mod:`~sgmc.contracts.integrator` — how the state moves given that estimate (and what the
  warm-up reads of it);
* :mod:`~sgmc.contracts.exchange` — how replicas exchange positions;
* :mod:`~sgmc.contracts.replica` — what replica exchange reads of its base sampler.

Runners and tuners read only these members: no probing for optional attributes, no
dispatch on concrete classes.
"""

from collections.abc import Iterable
from typing import Any

from sgmc.contracts.kernel import KERNEL_MEMBERS, REDUCTIONS, Kernel, Reduction, check_info

__all__ = ["KERNEL_MEMBERS", "REDUCTIONS", "Kernel", "Reduction", "check_info", "missing_text"]


def missing_text(obj: Any, members: Iterable[str], contract: str) -> str:
    """", which lacks a, b (see <contract>)" for an error message about ``obj`` failing a
    contract's ``isinstance`` check; empty when nothing is missing."""
    missing = [m for m in members if not hasattr(obj, m)]
    return f", which lacks {', '.join(missing)} (see {contract})" if missing else ""
