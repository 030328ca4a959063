"""sgmc: scalable Bayesian sampling and global optimisation with stochastic gradients, on JAX.

A sampler is a composition problem × estimator × dynamics × coupling (docs/architecture.md):

>>> import sgmc
>>> post = sgmc.models.linear_regression(X, y)                       # doctest: +SKIP
>>> res = sgmc.sample(post, sgmc.sghmc(1e-4, friction=50.0, batch_size=100),
...                   init=jnp.zeros(5), num_steps=10_000, num_chains=4)  # doctest: +SKIP
"""

from . import (
    coupling,
    curvature,
    datasets,
    diagnostics,
    metrics,
    models,
    objectives,
    plots,
    preconditioners,
    schedules,
    stationarity,
    tuning,
)
from .constraints import Constraints
from .coupling import cv_energy, exact_energy, geometric_ladder, minibatch_energy, replica_exchange
from .cyclical import cyclical
from .driver import resume, sample
from .errors import (
    CheckpointError,
    DataError,
    DivergenceError,
    Interrupted,
    SamplingWarning,
    StorageError,
)
from .estimators import control_variate, ewsg, saga, svrg, uniform
from .numpyro_model import NumPyroPosterior
from .optimize import OptimizeResult, gd, gd_x_ld, ld, minimize, sgd, sgd_x_sgld, sgld_opt
from .problem import Objective, Posterior
from .result import Result
from .sampler import psgld, sghmc, sgld, sgnht
from .streaming import Stream
from .warmup import warmup

__version__ = "0.1.0"

__all__ = ["CheckpointError", "Constraints", "DataError", "DivergenceError", "Interrupted",
           "NumPyroPosterior", "Objective",
           "OptimizeResult", "Posterior", "Result", "SamplingWarning", "StorageError", "Stream",
           "control_variate",
           "coupling", "curvature", "cv_energy", "cyclical", "datasets", "diagnostics", "ewsg",
           "exact_energy", "gd", "gd_x_ld", "geometric_ladder", "ld",
           "metrics", "minibatch_energy", "minimize", "models", "objectives", "plots",
           "preconditioners", "psgld",
           "replica_exchange", "resume", "saga", "sample", "schedules", "sgd", "sgd_x_sgld",
           "sghmc", "sgld", "sgld_opt", "sgnht", "stationarity", "svrg", "tuning", "uniform",
           "warmup"]
