"""The driver honours ``kernel.keeps(t)``: draw j, taken right after the 0-based step
t_j = burn_in mod thin + thin·(j + 1) − 1, is kept iff t_j ≥ burn_in and keeps(t_j).

A kernel that refuses some draws must give exactly the corresponding draws (and per-draw
statistics) of the same run without the refusal — whatever the block size, through streaming
and through a checkpoint resume.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_checkpoint import interrupt_after

import sgmc
from sgmc.io import sinks as _sinks
from sgmc.run import plan

# burn_in 7 is not a multiple of thin 3 (a head block), 200 − 7 = 193 leaves one trailing step.
RUN = dict(num_steps=200, num_chains=2, burn_in=7, thin=3, seed=4)


def rule(t):
    """Kept in alternate stretches of ten steps (as a cyclical schedule's sampling stage)."""
    return (t // 10) % 2 == 1


@jax.tree_util.register_pytree_node_class
class Alternating:
    """A kernel delegating every member to ``inner`` except ``keeps`` (:func:`rule`)."""

    def __init__(self, inner):
        self.inner = inner

    def tree_flatten(self):
        return (self.inner,), None

    @classmethod
    def tree_unflatten(cls, aux, children):
        return cls(*children)

    def __getattr__(self, name):
        if name == "inner":  # (not yet set: while unpickling or copying)
            raise AttributeError(name)
        return getattr(self.inner, name)

    def keeps(self, t):
        return rule(t)


def problem():
    X, y, _ = sgmc.models.synthetic_linear_data(100, 3, correlation=0.3, seed=2)
    return sgmc.models.linear_regression(X, y)


def sampler():
    return sgmc.sgld(2e-3, batch_size=10)


INIT = jnp.zeros(3)


@pytest.fixture(scope="module")
def full():
    """The run whose every draw after burn-in is kept."""
    return sgmc.sample(problem(), sampler(), INIT, **RUN)


def expected(full: sgmc.Result) -> tuple[np.ndarray, dict]:
    """The draws of ``full`` that :func:`rule` keeps (``info["step"]`` is 1-based)."""
    keep = np.asarray(rule(jnp.asarray(full.info["step"] - 1)))
    assert 0 < keep.sum() < len(keep)
    return np.asarray(full.samples)[:, keep], {
        k: (v[keep] if k == "step" else v[:, keep]) for k, v in full.info.items()}


def assert_kept(res: sgmc.Result, full: sgmc.Result) -> None:
    samples, info = expected(full)
    np.testing.assert_array_equal(np.asarray(res.samples), samples)
    assert sorted(res.info) == sorted(info)
    for k, v in info.items():
        np.testing.assert_array_equal(np.asarray(res.info[k]), v, err_msg=k)
    assert res.meta["grad_evals_total"] == full.meta["grad_evals_total"]


def test_draw_steps_are_the_steps_the_driver_records(full):
    steps = plan.draw_steps(RUN["burn_in"], full.num_draws, RUN["thin"])
    burn_draws = RUN["burn_in"] // RUN["thin"]
    np.testing.assert_array_equal(steps[burn_draws:] + 1, full.info["step"])
    mask = plan.keep_mask(SimpleNamespace(keeps=rule), RUN["burn_in"], full.num_draws,
                          RUN["thin"])
    assert mask.shape == (full.num_draws,)  # the draws after burn-in only
    np.testing.assert_array_equal(mask, np.asarray(rule(full.info["step"] - 1)))


def test_every_kernel_keeps_every_draw(full):
    """keeps True everywhere (the samplers): the plan's mask is the burn-in cut alone."""
    mask = plan.keep_mask(sampler(), RUN["burn_in"], full.num_draws, RUN["thin"])
    assert mask.sum() == full.num_draws


@pytest.mark.parametrize("per_block", [None, 1, 4, 7, 100])
def test_kept_draws_are_the_unmasked_runs(full, per_block):
    res = sgmc.sample(problem(), Alternating(sampler()), INIT, **RUN, draws_per_block=per_block)
    assert_kept(res, full)
    assert res.data_passes.shape == (RUN["num_chains"], res.num_draws)


def test_streamed_kept_draws(full, tmp_path):
    res = sgmc.sample(problem(), Alternating(sampler()), INIT, **RUN, draws_per_block=5,
                      stream_to=tmp_path / "draws")
    assert_kept(res, full)
    assert_kept(sgmc.Result.load(tmp_path / "draws"), full)


@pytest.mark.parametrize("stream", [False, True], ids=["memory", "stream"])
def test_kept_draws_through_a_resume(full, tmp_path, monkeypatch, stream):
    path = tmp_path / "run.ckpt"
    sink_cls = _sinks.DiskSink if stream else _sinks.MemorySink
    monkeypatch.setattr(sink_cls, "append", interrupt_after(3, sink_cls.append))
    with pytest.raises(sgmc.Interrupted) as info:
        sgmc.sample(problem(), Alternating(sampler()), INIT, **RUN, draws_per_block=4,
                    checkpoint=path, checkpoint_every=12,
                    stream_to=tmp_path / "draws" if stream else None)
    monkeypatch.undo()
    part = info.value.result
    samples, _ = expected(full)
    n = part.num_draws
    assert 0 < n < samples.shape[1]
    np.testing.assert_array_equal(np.asarray(part.samples), samples[:, :n])
    assert_kept(sgmc.resume(path, problem(), Alternating(sampler())), full)
