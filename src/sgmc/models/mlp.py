"""Bayesian multilayer perceptrons (Bayesian neural networks) with a Gaussian prior.

Network: h₀ = x, h_l = act(h_{l−1} W_l + b_l) for the hidden layers, f(x) = h_{L−1} W_L + b_L.
Parameters are ``{"layers": [{"w": (d_{l−1}, d_l), "b": (d_l,)}, ...]}`` with every weight
and bias ~ N(0, s² I) a priori, plus ``"log_noise"`` for a regression net that learns its
noise.

- Classification (K classes): P(y = k | x, θ) = softmax(f(x))_k.
- Regression: y ~ N(f(x), σ²) with σ fixed, or learned as σ = exp(log_noise) with the prior
  log σ ~ N(0, 1).

These are the BNNs of the SVRG-HMC paper (one hidden layer of 50 or 100 ReLU units) and of
the EWSG paper (784-100-10 on MNIST); any layer sizes are allowed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc.model.posterior import Posterior
from sgmc.models._common import GaussianLogPrior, check_xy, xy_data

__all__ = ["MLP", "mlp"]

_ACTIVATIONS = {"relu": jax.nn.relu, "tanh": jnp.tanh}
_TASKS = ("classification", "regression")


@dataclass(frozen=True)
class MLP:
    """A fully connected network and its likelihood; the ``loglik`` of the posterior that
    :func:`mlp` builds (value-hashable, so equal networks share compiled programs).

    Attributes:
        sizes: layer widths (d_in, h_1, …, d_out).
        activation: ``"relu"`` or ``"tanh"``.
        task: ``"classification"`` (d_out = K logits) or ``"regression"`` (d_out = 1).
        noise_std: σ of a regression net, or ``None`` when σ is a parameter.
    """

    sizes: tuple[int, ...]
    activation: str = "relu"
    task: str = "classification"
    noise_std: float | None = 1.0

    def init(self, key: jax.Array) -> dict:
        """Parameters for a starting point: weights ~ N(0, 2/fan_in) (He) for ReLU or
        N(0, 1/fan_in) for tanh, biases 0, log σ = 0."""
        gain = 2.0 if self.activation == "relu" else 1.0
        layers = []
        keys = jax.random.split(key, len(self.sizes) - 1)
        for k, a, b in zip(keys, self.sizes[:-1], self.sizes[1:], strict=True):
            layers.append({"w": jax.random.normal(k, (a, b)) * np.sqrt(gain / a),
                           "b": jnp.zeros(b)})
        params = {"layers": layers}
        if self.task == "regression" and self.noise_std is None:
            params["log_noise"] = jnp.zeros(())
        return params

    def apply(self, params: dict, x: jax.Array) -> jax.Array:
        """The network's output f(x) for one input (d_in,) or a batch (…, d_in)."""
        act = _ACTIVATIONS[self.activation]
        *hidden, last = params["layers"]
        h = x
        for layer in hidden:
            h = act(h @ layer["w"] + layer["b"])
        return h @ last["w"] + last["b"]

    def predict(self, params: dict, x: jax.Array) -> jax.Array:
        """Class probabilities (…, K), or the regression mean (…,)."""
        out = self.apply(params, x)
        return jax.nn.softmax(out, axis=-1) if self.task == "classification" else out[..., 0]

    def __call__(self, params: dict, datum) -> jax.Array:
        out = self.apply(params, datum["x"])
        if self.task == "classification":
            return jnp.take(jax.nn.log_softmax(out), datum["y"], axis=-1)
        log_sigma = (params["log_noise"] if self.noise_std is None
                     else jnp.log(jnp.asarray(self.noise_std, out.dtype)))
        r = (datum["y"] - out[0]) * jnp.exp(-log_sigma)
        return -0.5 * r ** 2 - log_sigma - 0.5 * jnp.log(2 * jnp.pi)


@dataclass(frozen=True)
class _MLPLogPrior:
    """N(0, s² I) on weights and biases; N(0, 1) on log σ when the net learns its noise."""

    std: float

    def __call__(self, params: dict) -> jax.Array:
        total = GaussianLogPrior(self.std)(params["layers"])
        if "log_noise" in params:
            total = total + GaussianLogPrior(1.0)(params["log_noise"])
        return total


def mlp(X, y, hidden: Sequence[int] = (50,), task: str = "classification",
        activation: str = "relu", prior_std: float = 1.0, noise_std: float | None = 1.0,
        num_classes: int | None = None, chunk_size: int = 1024,
        buffer_rows: int | None = None) -> Posterior:
    """The posterior of a Bayesian MLP; ``post.loglik`` is the :class:`MLP`, whose
    ``init(key)`` gives a starting point and ``predict(params, X)`` the predictions.

    Args:
        X: inputs (N, d).
        y: integer labels in {0, …, K−1} (classification) or real targets (regression), (N,).
        hidden: widths of the hidden layers, each ≥ 1 (may be empty: a linear model).
        task: ``"classification"`` or ``"regression"``.
        activation: ``"relu"`` or ``"tanh"``.
        prior_std: s > 0, prior standard deviation of every weight and bias.
        noise_std: regression noise σ > 0, or ``None`` to learn it (ignored for
            classification).
        num_classes: K ≥ 2 (default max(y) + 1).
        chunk_size: rows per chunk in full-data passes.
        buffer_rows: stream the data (:class:`sgmc.Stream`): the device holds this many
            rows at a time, and X — typically ``np.load(path, mmap_mode="r")`` — is never
            read whole. Default: all data in memory.

    Example:
        >>> post = sgmc.models.mlp(X, y, hidden=(100,))                  # doctest: +SKIP
        >>> init = post.loglik.init(jax.random.key(0))                   # doctest: +SKIP
    """
    check.choice("task", task, _TASKS)
    check.choice("activation", activation, tuple(_ACTIVATIONS))
    widths = tuple(check.integer("hidden", h, lo=1) for h in hidden)
    s = check.positive("prior_std", prior_std)
    X, y = check_xy(X, y, y_dtype=None, streamed=buffer_rows is not None)
    if task == "classification":
        if not np.all(np.mod(y, 1) == 0):
            raise ValueError("y must contain integer class labels for classification")
        k = (int(y.max()) + 1 if num_classes is None
             else check.integer("num_classes", num_classes, lo=2))
        if y.min() < 0 or y.max() >= k:
            raise ValueError(f"y must contain labels in [0, {k - 1}] (num_classes = {k})")
        net = MLP((X.shape[1], *widths, k), activation, task, None)
        y = y.astype(np.int32)
    else:
        sigma = None if noise_std is None else check.positive("noise_std", noise_std)
        net = MLP((X.shape[1], *widths, 1), activation, task, sigma)
        y = y.astype(np.float32)
    return Posterior(net, _MLPLogPrior(s), xy_data(X, y, buffer_rows), chunk_size=chunk_size)
