"""The kernels: samplers composed of an estimator × dynamics (× a coupling), the cyclical
schedule over any of them, and the preconditioners the dynamics move with.

* :mod:`~sgmc.kernels.estimators` — how ∇U is estimated from a minibatch;
* :mod:`~sgmc.kernels.dynamics` — how the state moves given that estimate;
* :mod:`~sgmc.kernels.coupling` — how replicas interact (replica exchange, GD×LD);
* :mod:`~sgmc.kernels.sampler` — :func:`sgmc.sgld`, :func:`sgmc.sghmc`, ... (estimator ×
  dynamics as one :class:`~sgmc.contracts.kernel.Kernel`);
* :mod:`~sgmc.kernels.cyclical` — cyclical SG-MCMC over any sampler;
* :mod:`~sgmc.kernels.preconditioners` — the metric the dynamics move in.
"""

from sgmc.kernels import coupling, cyclical, dynamics, estimators, preconditioners, sampler

__all__ = ["coupling", "cyclical", "dynamics", "estimators", "preconditioners", "sampler"]
