"""Predictive metrics from posterior draws by Bayesian model averaging (BMA).

The posterior predictive p(y | x, data) ≈ (1/S) Σ_s p(y | x, θ_s) averages the predictions
of S draws. :func:`predictions` evaluates a model's ``predict(params, X)`` for every draw
(compiled, in groups of draws so memory stays bounded), :func:`running_average` gives the BMA
after each draw, and :func:`classification_metrics` / :func:`regression_metrics` score an
averaged prediction against held-out labels.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import jax
import numpy as np

from sgmc import _validate as check

__all__ = ["classification_metrics", "predictions", "predictive_entropy", "regression_metrics",
           "running_average"]

PyTree = Any


def predictions(predict: Callable[[PyTree, Any], jax.Array], draws: PyTree, X,
                draws_per_batch: int = 8) -> np.ndarray:
    """``predict(θ_s, X)`` for every draw θ_s; the leaves of ``draws`` have a leading draw
    axis S (e.g. ``jax.tree.map(lambda a: a[chain], res.samples)``). Returns (S, …)."""
    size = check.integer("draws_per_batch", draws_per_batch, lo=1)
    return np.asarray(_predict_all(predict, size, draws, jax.numpy.asarray(X)))


@partial(jax.jit, static_argnums=(0, 1))
def _predict_all(predict, size, draws, X):
    # Module-level and keyed on `predict` (hashable: a function or a model's bound method),
    # with X an argument: repeated calls reuse one compiled program per shape.
    return jax.lax.map(lambda p: predict(p, X), draws, batch_size=size)


def running_average(per_draw: np.ndarray) -> np.ndarray:
    """The BMA after each draw: cumulative mean over the leading (draw) axis, in float64."""
    x = np.asarray(per_draw, np.float64)
    counts = np.arange(1, x.shape[0] + 1).reshape((-1,) + (1,) * (x.ndim - 1))
    return np.cumsum(x, axis=0) / counts


def predictive_entropy(probs) -> float:
    """Mean over rows of the entropy −Σ_k p_k log p_k of (N, K) class probabilities (each
    clipped at 10⁻¹²): labels not needed, so it scores out-of-distribution inputs too."""
    p = np.clip(np.asarray(probs, np.float64), 1e-12, 1.0)
    return float(np.mean(-np.sum(p * np.log(p), axis=1)))


def classification_metrics(probs, y, num_bins: int = 15) -> dict[str, float]:
    """Accuracy, mean log-likelihood, Brier score, mean predictive entropy and expected
    calibration error of predictive probabilities.

    Args:
        probs: (N, K) class probabilities, or (N,) probabilities of class 1 (binary).
        y: (N,) integer labels.
        num_bins: equal-width confidence bins of the ECE.

    The Brier score is the mean over data of Σ_k (p_k − 1{y = k})²; the ECE is
    Σ_bins (n_bin/N)·|accuracy_bin − mean confidence_bin| with confidence max_k p_k.
    """
    p = np.asarray(probs, np.float64)
    if p.ndim == 1:
        p = np.stack([1.0 - p, p], axis=1)
    y = np.asarray(y).astype(np.int64)
    if p.ndim != 2 or y.shape != (p.shape[0],):
        raise ValueError(f"probs must be (N, K) or (N,) with y of shape (N,); got {p.shape} "
                         f"and {y.shape}")
    bins = check.integer("num_bins", num_bins, lo=1)
    p = np.clip(p, 1e-12, 1.0)
    n = len(y)
    p_true = p[np.arange(n), y]
    onehot = np.zeros_like(p)
    onehot[np.arange(n), y] = 1.0
    conf, pred = p.max(1), p.argmax(1)
    correct = pred == y
    which = np.minimum((conf * bins).astype(np.int64), bins - 1)
    ece = 0.0
    for b in range(bins):
        mask = which == b
        if mask.any():
            ece += mask.mean() * abs(correct[mask].mean() - conf[mask].mean())
    return {"accuracy": float(correct.mean()),
            "log_likelihood": float(np.mean(np.log(p_true))),
            "brier": float(np.mean(np.sum((p - onehot) ** 2, axis=1))),
            "entropy": predictive_entropy(p),
            "ece": float(ece)}


def regression_metrics(mean, y, var=None) -> dict[str, float]:
    """RMSE of the predictive mean and, when the predictive variance is given, the mean
    Gaussian log-likelihood log N(y; mean, var)."""
    m = np.asarray(mean, np.float64)
    y = np.asarray(y, np.float64)
    if m.shape != y.shape:
        raise ValueError(f"mean and y must have the same shape, got {m.shape} and {y.shape}")
    out = {"rmse": float(np.sqrt(np.mean((m - y) ** 2)))}
    if var is not None:
        v = np.asarray(var, np.float64)
        out["log_likelihood"] = float(np.mean(-0.5 * (np.log(2 * np.pi * v) + (y - m) ** 2 / v)))
    return out
