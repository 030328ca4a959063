"""The model: what a kernel samples or minimises.

* :mod:`~sgmc.model.oracle` — :class:`~sgmc.model.oracle.Problem`, the oracle: the energy
  U(θ) and its gradients, exact, per datum and on a minibatch;
* :mod:`~sgmc.model.posterior` — :class:`~sgmc.Posterior` and :class:`~sgmc.Objective`, the
  problems written from the user's functions;
* :mod:`~sgmc.model.data` — the data's rows behind one source (arrays, a stream, rows split
  over devices): validation, chunked full passes, a stream's next buffer;
* :mod:`~sgmc.model.stream` — :class:`~sgmc.Stream`, data read from the host in chunks;
* :mod:`~sgmc.model.checks` — a model checked at a point, and the words of its errors
  (:class:`~sgmc.model.checks.ModelShapeError`);
* :mod:`~sgmc.model.constraints` — constrained parameters and their Jacobians;
* :mod:`~sgmc.model.numpyro` — a NumPyro model as a posterior (:func:`sgmc.from_numpyro`).
"""

from sgmc.model import checks, constraints, data, oracle, posterior, stream

__all__ = ["checks", "constraints", "data", "oracle", "posterior", "stream"]
