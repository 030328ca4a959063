"""The contracts: Protocols that declare every member a runner or tuner reads of a kernel and
of the pieces a kernel is composed of, each with its default (docs/architecture.md).

* :mod:`~sgmc.contracts.kernel` — what :func:`sgmc.sample` runs (:class:`Kernel`).
"""

from sgmc.contracts.kernel import KERNEL_MEMBERS, REDUCTIONS, Kernel, Reduction, check_info

__all__ = ["KERNEL_MEMBERS", "REDUCTIONS", "Kernel", "Reduction", "check_info"]
