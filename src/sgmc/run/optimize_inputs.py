"""What :func:`sgmc.minimize` makes of its inputs: the objective as a problem, and ``init``
read as one point, or stacked over replicas, replications or both (``init_axes``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from sgmc.model.checks import TRACER_ERRORS
from sgmc.model.oracle import Problem
from sgmc.model.posterior import Objective

__all__ = ["INIT_AXES", "as_problem", "is_point", "stack_init"]

INIT_AXES = ("auto", "none", "replica", "replication", "both")


def as_problem(objective) -> Problem:
    if isinstance(objective, Problem):
        if not isinstance(objective, Objective):
            raise TypeError("objective must be an sgmc.Objective or a function f(x) -> scalar, "
                            f"got {type(objective).__name__}")
        return objective
    if callable(objective):
        return Objective(objective)
    raise TypeError("objective must be an sgmc.Objective or a function f(x) -> scalar, got "
                    f"{type(objective).__name__}")


def is_point(problem, x) -> bool:
    try:
        problem.check_params(jnp.asarray(x))
    except (ValueError, TypeError) as err:
        # NumPy (or Python control flow) inside the objective fails at every shape: that
        # message, not "init is neither a point nor a stack", names the mistake.
        if isinstance(err.__cause__, TRACER_ERRORS):
            raise
        return False
    return True


def stack_init(problem, init, k: int, r: int, axes: str) -> np.ndarray:
    """init as (R, K, ...) (K > 1) or (R, ...) (K = 1)."""
    x = np.asarray(init, np.float32) if not isinstance(init, jax.Array) else np.asarray(init)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float32)
    if not np.all(np.isfinite(x)):
        raise ValueError("init must be finite (it contains NaN or inf)")
    if axes == "auto":
        if x.ndim == 0 or is_point(problem, x):
            axes = "none"
        elif k > 1 and x.shape[0] == k and is_point(problem, x[0]):
            axes = "replica"
        elif x.shape[0] == r and is_point(problem, x[0]):
            axes = "replication"
        elif k > 1 and x.ndim >= 2 and x.shape[:2] == (r, k) and is_point(problem, x[0, 0]):
            axes = "both"
        else:
            raise ValueError(f"init of shape {x.shape} is neither a point the objective accepts "
                             f"nor a stack of {k} (replicas) or {r} (replications) points")
    lead = {"none": (), "replica": (k,), "replication": (r,), "both": (r, k)}[axes]
    if k == 1 and axes in ("replica", "both"):
        raise ValueError(f"init_axes={axes!r} needs a method with several replicas")
    if x.shape[:len(lead)] != lead:
        raise ValueError(f"init must have leading axes {lead} for init_axes={axes!r}, "
                         f"got shape {x.shape}")
    point = x[(0,) * len(lead)]
    problem.check_params(jnp.asarray(point))
    if axes in ("none", "replica"):
        x = np.broadcast_to(x, (r, *x.shape))
    if k > 1 and axes in ("none", "replication"):
        x = np.broadcast_to(x[:, None], (r, k, *x.shape[1:]))
    return np.ascontiguousarray(x)
