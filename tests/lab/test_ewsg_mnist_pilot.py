"""The ewsg-mnist MLP pilot chooses each sampler's setting on held-out data: the best finite
validation score wins, and a setting that diverges is never chosen."""

import jax
import numpy as np

from sgmc import models
from sgmc.lab.experiments import ewsg_mnist_pilot as pilot


def _task(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 8)).astype(np.float32)
    y = np.argmax(X[:, :3], axis=1).astype(np.int32)  # learnable: 3 classes from 3 inputs
    return X, y


def test_pilot_chooses_the_best_finite_setting(capsys):
    X, y = _task(400, 0)
    Xv, yv = _task(300, 1)
    post = models.mlp(X, y, hidden=(8,), prior_std=1.0)
    init = post.loglik.init(jax.random.key(0))
    # SGLD at h = 1e3 diverges, at 1e-9 it does not move from the start; 1e-2 trains.
    grid = {"SGLD": ((1e3, None), (1e-9, None), (1e-2, None))}
    out = pilot.choose(post, init, Xv, yv, passes=4.0, grid=grid, draws=2)
    scores = out["accuracy"]["SGLD"]
    assert np.isnan(scores["h=1000"])
    assert scores["h=0.01"] > scores["h=1e-09"] + 0.1, scores
    assert out["chosen"] == {"SGLD": (1e-2, None)}
    assert out["validation_images"] == 300 and out["train_images"] == 400
