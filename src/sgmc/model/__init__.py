"""The model: what a kernel samples or minimises.

* :mod:`~sgmc.model.oracle` — :class:`~sgmc.Posterior` and :class:`~sgmc.Objective`: the
  energy U(θ) and its gradients, exact, per datum and on a minibatch;
* :mod:`~sgmc.model.stream` — :class:`~sgmc.Stream`, data read from the host in chunks;
* :mod:`~sgmc.model.constraints` — constrained parameters and their Jacobians;
* :mod:`~sgmc.model.numpyro` — a NumPyro model as a posterior.
"""

from sgmc.model import constraints, oracle, stream

__all__ = ["constraints", "oracle", "stream"]
