"""Gradient estimators: how ∇U is estimated from a minibatch (the estimator axis)."""

from .base import SAMPLING_SCHEMES, Context, Estimator
from .batching import Batcher
from .ewsg import EWSG, ewsg
from .saga import SAGA, saga
from .svrg import SVRG, control_variate, svrg
from .uniform import Uniform, uniform

__all__ = ["EWSG", "SAGA", "SAMPLING_SCHEMES", "SVRG", "Batcher", "Context", "Estimator",
           "Uniform", "control_variate", "ewsg", "saga", "svrg", "uniform"]
