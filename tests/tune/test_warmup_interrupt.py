"""Ctrl-C during sgmc.warmup (issue 33 item 5): in every stage it raises
sgmc.WarmupInterrupted (a KeyboardInterrupt) with the stage, the mode once found, the
preconditioner and curvature once measured, and a message that says how to go on — never a
bare KeyboardInterrupt (the mode search's, before) nor the inner run's sgmc.Interrupted that
speaks of "draws kept" (stage 5's, before).

Ctrl-C is simulated without signals: a function the stage calls is patched to raise
KeyboardInterrupt (for stage 5, the inner sgmc.sample's sink, so that the run itself turns it
into sgmc.Interrupted, as a real Ctrl-C would). Each test failed on the code before the
change (checked once, 2026-11-27, with warmup's ``except KeyboardInterrupt`` removed).
"""

from __future__ import annotations

import importlib

import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.io import sinks as _sinks

warmup_module = importlib.import_module("sgmc.tune.warmup")

X, Y, _ = sgmc.models.synthetic_linear_data(200, 3, seed=0)
POST = sgmc.models.linear_regression(X, Y)
MEAN, COV = sgmc.models.linear_regression_posterior(X, Y)
INIT = jnp.zeros(3)
CHEAP = dict(optimizer_steps=200, noise_points=4, noise_replicates=2, check=False)


def _raise(*args, **kwargs):
    raise KeyboardInterrupt


def _interrupted(**kw):
    """The error warmup raises; a bare KeyboardInterrupt is returned too (not let through to
    pytest, which would stop the session), so that the test fails on its type."""
    try:
        sgmc.warmup(POST, sgmc.sghmc(batch_size=20), INIT, **{**CHEAP, **kw})
    except KeyboardInterrupt as err:
        return err
    pytest.fail("warmup was not interrupted")


def _common(err, stage):
    assert isinstance(err, sgmc.WarmupInterrupted), type(err)
    assert isinstance(err, sgmc.Interrupted) and isinstance(err, KeyboardInterrupt)
    assert err.stage == stage and err.step == 0 and err.result is None
    msg = str(err)
    assert f"in its {stage} stage" in msg and "draws kept" not in msg, msg
    assert err.__suppress_context__


def test_ctrl_c_in_the_mode_search_keeps_nothing(monkeypatch):
    monkeypatch.setattr(warmup_module, "adam_mode", _raise)
    err = _interrupted()
    _common(err, "mode")
    assert err.mode is None and err.curvature is None and err.preconditioner is None
    assert "starts over" in str(err)


@pytest.mark.parametrize("stage, target", [
    ("curvature", (warmup_module, "whitened_extremes")),
    ("noise", (warmup_module.noise, "for_sampler")),
    ("check", (warmup_module.selfcheck, "check_sampler")),
])
def test_ctrl_c_after_the_mode_carries_it(monkeypatch, stage, target):
    monkeypatch.setattr(*target, _raise)
    err = _interrupted(check=stage == "check")
    _common(err, stage)
    mode = np.asarray(err.mode)
    assert mode.shape == INIT.shape and np.all(np.isfinite(mode))
    # Adam then Newton land on the Gaussian posterior's mode (= its mean).
    assert np.all(np.abs(mode - MEAN) <= 1e-2 * np.sqrt(np.diag(COV))), (mode, MEAN)
    assert err.preconditioner is not None and err.passes["mode"] > 0
    if stage == "curvature":
        assert err.curvature is None
    else:
        lo, hi = err.curvature
        assert 0 < lo <= hi < np.inf
    assert "err.mode" in str(err) and "optimizer_steps=1" in str(err)
    if stage == "noise":  # going on as the message says: no new mode search
        monkeypatch.undo()
        w = sgmc.warmup(POST, sgmc.sghmc(batch_size=20), err.mode,
                        **{**CHEAP, "optimizer_steps": 1}, learning_rate=1e-6)
        np.testing.assert_allclose(np.asarray(w[1]), mode, atol=1e-4 * np.sqrt(COV.max()))
        assert w.report.passes["mode"] < err.passes["mode"] and w.report.step_sizes[0] > 0


def test_ctrl_c_in_the_adaptation_run_is_not_the_inner_runs(monkeypatch):
    append = _sinks.MemorySink.append

    def interrupt(sink, *args):  # as sgmc.sample's Ctrl-C: after the first block is stored
        append(sink, *args)
        raise KeyboardInterrupt

    monkeypatch.setattr(_sinks.MemorySink, "append", interrupt)
    err = _interrupted(adapt_steps=200)
    _common(err, "adapt")
    assert np.all(np.isfinite(np.asarray(err.mode)))
    assert err.preconditioner.kind == "dense" and err.curvature is not None
