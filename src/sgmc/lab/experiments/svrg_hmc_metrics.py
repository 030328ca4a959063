"""The SVRG-HMC paper's regression metrics (Li et al., Sec. 5.1–5.2), used by :mod:`.svrg_hmc`:
the test MSE of the posterior-mean prediction or the test log-likelihood of the posterior
predictive after each draw, the metric of θ = 0, and the stability test of a run."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["baseline", "curve", "is_stable"]


def curve(task: str, draws: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The metric after each draw, (chains, draws), from the running average of predictions:
    test MSE of the mean prediction (regression) or test log-likelihood of the averaged
    predictive probability (classification)."""
    z = np.einsum("cki,ni->ckn", np.asarray(draws, np.float64), X)
    counts = np.arange(1, z.shape[1] + 1)[None, :, None]
    with np.errstate(over="ignore", invalid="ignore"):
        if task == "regression":
            pred = np.cumsum(z, axis=1) / counts
            return np.mean((pred - y) ** 2, axis=2)
        prob = np.cumsum(1.0 / (1.0 + np.exp(-z)), axis=1) / counts
        prob = np.clip(prob, 1e-12, 1 - 1e-12)
        return np.mean(y * np.log(prob) + (1 - y) * np.log1p(-prob), axis=2)


def baseline(task: str, y: np.ndarray) -> float:
    """The metric of θ = 0 (predicting 0, or probability ½): a stable chain beats it."""
    return float(np.mean(np.asarray(y) ** 2)) if task == "regression" else math.log(0.5)


def is_stable(task: str, value, base: float) -> np.ndarray:
    """Per chain: the final validation metric is finite and better than θ = 0's."""
    v = np.asarray(value, np.float64)
    with np.errstate(invalid="ignore"):
        return np.isfinite(v) & (v < base if task == "regression" else v > base)
