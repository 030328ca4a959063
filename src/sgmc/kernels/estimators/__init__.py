"""Gradient estimators: how ∇U is estimated from a minibatch (the estimator axis)."""

from sgmc.contracts.estimator import SAMPLING_SCHEMES, Context, Estimator
from sgmc.kernels.estimators.batching import Batcher
from sgmc.kernels.estimators.ewsg import EWSG, ewsg
from sgmc.kernels.estimators.saga import SAGA, saga
from sgmc.kernels.estimators.svrg import SVRG, control_variate, svrg
from sgmc.kernels.estimators.uniform import Uniform, uniform

__all__ = ["EWSG", "SAGA", "SAMPLING_SCHEMES", "SVRG", "Batcher", "Context", "Estimator",
           "Uniform", "control_variate", "ewsg", "saga", "svrg", "uniform"]
