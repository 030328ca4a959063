"""Runs refused or flagged before compiling, and errors that name the real cause (issue 33,
items 3, 4 and 7).

* Kept draws that cannot fit in memory are refused before compiling, and a warning comes
  above half of it (the available memory is faked small: never exhaust the machine).
* A cyclical schedule built for another ``num_steps``: refused when it keeps no draw,
  a warning with the numbers when it keeps some.
* ``init_spread`` that puts starts where the model is not finite is named; ``like=`` with
  the run's leaf names in another order is named; a block that fails at run time (here a
  ``predict`` whose host callback raises) gives ``sgmc.RunError`` with the draws so far.
"""

from __future__ import annotations

import sys
import warnings
from collections import namedtuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.run import api, memory

X, Y, _ = sgmc.models.synthetic_linear_data(200, 3, seed=0)
POST = sgmc.models.linear_regression(X, Y)
SAMPLER = sgmc.sgld(1e-3, batch_size=20)


@pytest.fixture
def not_started(monkeypatch):
    """Fail the test if the run gets as far as starting (compiling its loop)."""
    def refuse(*args, **kwargs):
        raise AssertionError("the run started")

    monkeypatch.setattr(api, "start", refuse)


def _draw_bytes(num_steps, chains=4):
    """The kept draws' bytes: per chain the float32 position (d = 3), the int64 gradient
    count and three float32 drift statistics; per draw its int64 step."""
    return num_steps * (chains * (3 * 4 + 8 + 3 * 4) + 8)


@pytest.mark.parametrize("available", [0.9, 1.9])
def test_draws_that_cannot_fit_are_refused_and_a_large_share_warns(monkeypatch, not_started,
                                                                   available):
    """With the available memory faked at 0.9× (refused) or 1.9× (warned: the draws and
    the block buffers, 1/20 of them × 3, take over half) the kept draws' size, before
    anything is compiled; ``stream_to`` and ``store_draws=False``
    with ``predict`` keep the draws out of memory, and pass."""
    steps = 200_000
    free = int(available * _draw_bytes(steps))
    monkeypatch.setattr(memory, "available_memory", lambda: free)
    run = dict(num_steps=steps, num_chains=4)
    if available < 1:
        with pytest.raises(ValueError, match=r"cannot fit in memory: the run's kept draws "
                                             r"take .* MiB.*thin, store_draws=False with "
                                             r"predict=fn.*stream_to=FOLDER"):
            sgmc.sample(POST, SAMPLER, jnp.zeros(3), **run)
    else:
        with pytest.warns(sgmc.MemoryWarning, match=r"may kill the run.*thin"), \
                pytest.raises(AssertionError, match="the run started"):
            sgmc.sample(POST, SAMPLER, jnp.zeros(3), **run)
    # A thin of 100 keeps 1/100 of them: fits without a word.
    with warnings.catch_warnings():
        warnings.simplefilter("error", sgmc.MemoryWarning)
        with pytest.raises(AssertionError, match="the run started"):
            sgmc.sample(POST, SAMPLER, jnp.zeros(3), **run, thin=100)
        with pytest.raises(AssertionError, match="the run started"):
            sgmc.sample(POST, SAMPLER, jnp.zeros(3), **run, store_draws=False,
                        predict=lambda theta: X[:2] @ theta, diagnose=False)


def test_resume_checks_memory_too(monkeypatch, tmp_path):
    from test_checkpoint import interrupt_after

    from sgmc.io import sinks

    path = tmp_path / "m.ckpt"
    monkeypatch.setattr(sinks.MemorySink, "append", interrupt_after(1, sinks.MemorySink.append))
    with pytest.raises(sgmc.Interrupted):
        sgmc.sample(POST, SAMPLER, jnp.zeros(3), 2000, num_chains=2, checkpoint=path,
                    checkpoint_every=200)
    monkeypatch.undo()
    monkeypatch.setattr(memory, "available_memory", lambda: 1000)
    with pytest.raises(ValueError, match="cannot fit in memory"):
        sgmc.resume(path, POST, SAMPLER)


def test_available_memory_reads_the_system():
    free = memory.available_memory()
    if sys.platform.startswith("linux"):  # /proc/meminfo is always there
        assert free is not None
    assert free is None or 0 < free < 2**50


def test_cyclical_built_for_another_run_length(not_started):
    """K = 10,000 in 4 cycles (2,500 steps, 1,250 exploring) run for 1,000 steps: every
    draw is in an exploration stage — refused; run for 3,000 steps: it keeps those of steps
    1,250 … 2,499, 1,250 of 3,000 —
    a SamplingWarning with the numbers; with the same K: no word."""
    csgld = sgmc.cyclical(SAMPLER, 4, num_steps=10_000)
    with pytest.raises(ValueError, match=r"built for a run of 10,000 steps and this run has "
                                         r"num_steps=1,000: .*keeps none of the run's 1,000 "
                                         r"draws.*pass the same num_steps"):
        sgmc.sample(POST, csgld, jnp.zeros(3), 1000)
    with pytest.warns(sgmc.SamplingWarning, match=r"keeps 1,250 of its 3,000 draws"), \
            pytest.raises(AssertionError, match="the run started"):
        sgmc.sample(POST, csgld, jnp.zeros(3), 3000)
    re = sgmc.replica_exchange(csgld, temperatures=(1.0, 2.0), correction=1.0)
    assert re.run_length == 10_000  # a coupling of cyclical samplers declares its K
    with warnings.catch_warnings():
        warnings.simplefilter("error", sgmc.SamplingWarning)
        with pytest.raises(AssertionError, match="the run started"):
            sgmc.sample(POST, csgld, jnp.zeros(3), 10_000)


def test_init_spread_that_leaves_the_support_is_named(not_started):
    """A positive parameter, sampled as log s: starts exp(log 1 + 100 ξ) overflow float32
    for ξ > 0.89, where the model is not finite; the message names init_spread."""
    pytest.importorskip("numpyro")
    data = {"y": jnp.asarray(np.random.default_rng(0).normal(size=50), jnp.float32)}
    post = sgmc.Posterior(lambda p, d: -0.5 * (d["y"] / p["s"]) ** 2 - jnp.log(p["s"]),
                          lambda p: -p["s"], data, constraints={"s": "positive"})
    with pytest.raises(ValueError, match=r"not finite.*init_spread=100: a smaller "
                                         r"init_spread keeps every start"):
        sgmc.sample(post, SAMPLER, {"s": jnp.ones(())}, 10, num_chains=32, init_spread=100.0)


def test_like_with_the_names_in_another_order_is_named(tmp_path):
    Point = namedtuple("Point", "w b")
    Swapped = namedtuple("Swapped", "b w")
    data = {"x": X[:, :2], "y": Y}
    post = sgmc.Posterior(lambda p, d: -0.5 * (d["y"] - d["x"] @ p.w - p.b) ** 2,
                          lambda p: -0.5 * (jnp.sum(p.w ** 2) + p.b ** 2), data)
    path = tmp_path / "nt.ckpt"
    sgmc.sample(post, SAMPLER, Point(jnp.zeros(2), jnp.zeros(())), 200, checkpoint=path)
    with pytest.raises(sgmc.CheckpointError, match=r"like= holds the run's arrays in another "
                                                   r"order \(b, w; the run's: w, b\)"):
        sgmc.resume(path, post, SAMPLER, like=Swapped(jnp.zeros(()), jnp.zeros(2)))


def test_a_block_that_fails_at_run_time_keeps_the_draws(tmp_path):
    """``predict`` whose host callback raises part-way: sgmc.RunError with the draws kept
    before the failed block and the last checkpoint, from which the run resumes."""
    calls, limit = [], [300]

    def host(v):
        calls.append(1)
        if len(calls) > limit[0]:
            raise RuntimeError("the callback broke")
        return np.asarray(v)

    def predict(theta):
        v = X[:5] @ theta
        return jax.pure_callback(host, jax.ShapeDtypeStruct(v.shape, v.dtype), v)

    path = tmp_path / "f.ckpt"
    with pytest.raises(sgmc.RunError, match=r"failed after step [1-9][0-9]*: JaxRuntimeError"
                                            r".*the callback broke.*draws per chain kept") as e:
        sgmc.sample(POST, SAMPLER, jnp.zeros(3), 4000, thin=5, seed=1, predict=predict,
                    checkpoint=path, checkpoint_every=400)
    err = e.value
    assert err.result.num_draws == err.step // 5 > 0 and err.checkpoint == str(path)
    limit[0] = np.inf  # the callback works again
    out = sgmc.resume(path, POST, SAMPLER, predict=predict)
    assert out.num_draws == 800
    np.testing.assert_array_equal(out.samples[:, :err.result.num_draws], err.result.samples)
