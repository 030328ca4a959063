"""sgmc: scalable Bayesian sampling and global optimisation with stochastic gradients, on JAX.

A sampler is a composition problem × estimator × dynamics × coupling (docs/architecture.md):

>>> import sgmc
>>> post = sgmc.models.linear_regression(X, y)                       # doctest: +SKIP
>>> res = sgmc.sample(post, sgmc.sghmc(1e-4, friction=50.0, batch_size=100),
...                   init=jnp.zeros(5), num_steps=10_000, num_chains=4)  # doctest: +SKIP
"""

from sgmc import (
    contracts,
    datasets,
    diagnostics,
    io,
    kernels,
    metrics,
    model,
    models,
    nn,
    objectives,
    plots,
    run,
    schedules,
    stationarity,
    tune,
)
from sgmc.errors import (
    CheckpointError,
    ControlVariateWarning,
    DataError,
    DivergenceError,
    Interrupted,
    MemoryWarning,
    RunError,
    SamplingWarning,
    StorageError,
    WarmupInterrupted,
)
from sgmc.kernels.coupling import (
    cv_energy,
    exact_energy,
    geometric_ladder,
    minibatch_energy,
    replica_exchange,
)
from sgmc.kernels.cyclical import cyclical
from sgmc.kernels.estimators import control_variate, ewsg, saga, svrg, uniform
from sgmc.kernels.sampler import psgld, sghmc, sgld, sgnht
from sgmc.model.constraints import Constraints
from sgmc.model.numpyro import NumPyroPosterior, from_numpyro
from sgmc.model.posterior import Objective, Posterior
from sgmc.model.stream import Stream
from sgmc.result import Result
from sgmc.run import resume, sample
from sgmc.run.optimize import OptimizeResult, gd, gd_x_ld, ld, minimize, sgd, sgd_x_sgld, sgld_opt
from sgmc.tune.warmup import warmup

__version__ = "0.1.0"

__all__ = [
    "CheckpointError",
    "Constraints",
    "ControlVariateWarning",
    "DataError",
    "DivergenceError",
    "Interrupted",
    "MemoryWarning",
    "NumPyroPosterior",
    "Objective",
    "OptimizeResult",
    "Posterior",
    "Result",
    "RunError",
    "SamplingWarning",
    "StorageError",
    "Stream",
    "WarmupInterrupted",
    "contracts",
    "control_variate",
    "cv_energy",
    "cyclical",
    "datasets",
    "diagnostics",
    "ewsg",
    "exact_energy",
    "from_numpyro",
    "gd",
    "gd_x_ld",
    "geometric_ladder",
    "io",
    "kernels",
    "ld",
    "metrics",
    "minibatch_energy",
    "minimize",
    "model",
    "models",
    "nn",
    "objectives",
    "plots",
    "psgld",
    "replica_exchange",
    "resume",
    "run",
    "saga",
    "sample",
    "schedules",
    "sgd",
    "sgd_x_sgld",
    "sghmc",
    "sgld",
    "sgld_opt",
    "sgnht",
    "stationarity",
    "svrg",
    "tune",
    "uniform",
    "warmup",
]
