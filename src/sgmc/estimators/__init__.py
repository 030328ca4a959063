"""Gradient estimators: how ∇U is estimated from a minibatch (DESIGN.md, the estimator axis)."""

from .base import SAMPLING_SCHEMES, Context, Estimator
from .batching import Batcher
from .uniform import Uniform, uniform

__all__ = ["SAMPLING_SCHEMES", "Batcher", "Context", "Estimator", "Uniform", "uniform"]
