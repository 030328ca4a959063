"""Ready-made models: each function returns an :class:`sgmc.Posterior` built from arrays."""

from sgmc.models.linear import linear_regression, linear_regression_posterior, synthetic_linear_data
from sgmc.models.logistic import logistic_regression, synthetic_logistic_data
from sgmc.models.mixture import mixture_density, mixture_posterior, synthetic_mixture_data
from sgmc.models.mlp import MLP, mlp
from sgmc.models.softmax import softmax_regression

__all__ = ["MLP", "linear_regression", "linear_regression_posterior", "logistic_regression",
           "mixture_density", "mixture_posterior", "mlp", "softmax_regression",
           "synthetic_linear_data", "synthetic_logistic_data", "synthetic_mixture_data"]
