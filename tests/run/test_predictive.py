"""Predictive averages in the compiled loop: ``sample(..., predict=fn)``.

Every chain's running moments of fn(draw) over the kept draws (Welford, float32) must equal
the mean and variance of fn computed afterwards from the stored draws of the same run — with
burn-in, thinning, several chains, replica exchange and a kernel that refuses some draws —
survive a checkpoint resume, and not need the draws stored at all (``store_draws=False``).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_checkpoint import interrupt_after
from test_keeps import Alternating

import sgmc
from sgmc.io import sinks as _sinks
from sgmc.result import pool_moments

X, Y, _ = sgmc.models.synthetic_linear_data(100, 3, correlation=0.3, seed=2)
X_TEST = X[:6]
INIT = jnp.zeros(3)
# 8 burn-in draws and 120 kept (before a kernel's keeps): blocks of 16 draws are all full,
# so each run compiles one program (compilation is most of these tests' time).
RUN = dict(num_steps=384, num_chains=3, burn_in=24, thin=3, seed=8, draws_per_block=16)


def problem():
    return sgmc.models.linear_regression(X, Y)


def predict(theta):
    """A model output on test points: a squashed linear predictor, shape (6,)."""
    return jnp.tanh(X_TEST @ theta)


def from_draws(res: sgmc.Result) -> np.ndarray:
    """predict at every stored draw, float64: (chains, draws, 6)."""
    theta = np.asarray(res.samples, np.float64)
    return np.tanh(np.einsum("nk,cdk->cdn", np.asarray(X_TEST, np.float64), theta))


def assert_matches_draws(res: sgmc.Result) -> None:
    f = from_draws(res)
    c, d = f.shape[:2]
    p = res.predictive
    assert d > 0 and p["count"] == c * d
    np.testing.assert_array_equal(p["chain_count"], np.full(c, d))
    tol = dict(rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p["mean"], f.reshape(c * d, -1).mean(0), **tol)
    np.testing.assert_allclose(p["var"], f.reshape(c * d, -1).var(0), **tol)
    np.testing.assert_allclose(p["chain_mean"], f.mean(1), **tol)
    np.testing.assert_allclose(p["chain_var"], f.var(1), **tol)


KERNELS = {
    "sgld": lambda: sgmc.sgld(2e-3, batch_size=10),
    "sghmc": lambda: sgmc.sghmc(2e-3, friction=2.0, batch_size=10),
    "replica-exchange": lambda: sgmc.replica_exchange(sgmc.sgld(2e-3, batch_size=10),
                                                      [1.0, 2.0]),
    "keeps-mask": lambda: Alternating(sgmc.sgld(2e-3, batch_size=10)),
}


@functools.cache
def run(kernel: str, store: bool = True, with_predict: bool = True) -> sgmc.Result:
    """The run of RUN with ``kernel`` (shared by the tests)."""
    return sgmc.sample(problem(), KERNELS[kernel](), INIT, **RUN, store_draws=store,
                       predict=predict if with_predict else None)


@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_predictive_equals_the_stored_draws_average(kernel):
    res = run(kernel)
    assert_matches_draws(res)
    if kernel == "keeps-mask":
        assert res.num_draws < (RUN["num_steps"] - RUN["burn_in"]) // RUN["thin"]


def test_one_chain_and_leftover_blocks():
    """One unbatched chain; a block size that leaves partial blocks (the traced program)."""
    res = sgmc.sample(problem(), KERNELS["sgld"](), INIT, num_steps=301, burn_in=10, thin=4,
                      draws_per_block=9, predict=predict)
    assert_matches_draws(res)


def test_predict_does_not_change_the_draws():
    plain, res = run("sgld", with_predict=False), run("sgld")
    np.testing.assert_array_equal(np.asarray(res.samples), np.asarray(plain.samples))
    assert plain.predictive is None


def test_store_draws_false_stores_nothing_and_gives_the_same_predictive(tmp_path):
    stored, res = run("keeps-mask"), run("keeps-mask", store=False)
    assert res.num_draws == 0 and np.asarray(res.samples).shape == (RUN["num_chains"], 0, 3)
    assert res.meta["store_draws"] is False
    for k, v in stored.predictive.items():
        np.testing.assert_allclose(res.predictive[k], v, rtol=1e-6, atol=1e-7, err_msg=k)
    np.testing.assert_array_equal(res.final_state.position, stored.final_state.position)
    # Saved and loaded with the result.
    res.save(tmp_path / "r.npz")
    loaded = sgmc.Result.load(tmp_path / "r.npz")
    for k, v in res.predictive.items():
        np.testing.assert_array_equal(loaded.predictive[k], v, err_msg=k)


@pytest.mark.parametrize("store", [True, False], ids=["draws", "no-draws"])
def test_predictive_through_a_resume(tmp_path, monkeypatch, store):
    kernel = KERNELS["keeps-mask"]
    args = dict(RUN, predict=predict, store_draws=store)
    full = run("keeps-mask", store)
    path = tmp_path / "run.ckpt"
    if store:
        monkeypatch.setattr(_sinks.MemorySink, "append",
                            interrupt_after(4, _sinks.MemorySink.append))
        with pytest.raises(sgmc.Interrupted):
            sgmc.sample(problem(), kernel(), INIT, **args, checkpoint=path, checkpoint_every=48)
        monkeypatch.undo()
    else:  # nothing is stored: stop the run at its second checkpoint instead
        from sgmc.run import host as run_mod

        save, calls = run_mod.Run.save_checkpoint, []

        def stop_after_second(self):
            out = save(self)
            calls.append(1)
            if len(calls) == 2:
                raise KeyboardInterrupt
            return out

        monkeypatch.setattr(run_mod.Run, "save_checkpoint", stop_after_second)
        with pytest.raises(KeyboardInterrupt):
            sgmc.sample(problem(), kernel(), INIT, **args, checkpoint=path, checkpoint_every=48)
        monkeypatch.undo()
    header, _ = sgmc.io.checkpoint.read(path)
    assert 0 < header["t0"] < RUN["num_steps"]
    with pytest.raises(sgmc.CheckpointError, match="predict"):
        sgmc.resume(path, problem(), kernel())
    resumed = sgmc.resume(path, problem(), kernel(), predict=predict)
    for k, v in full.predictive.items():
        np.testing.assert_array_equal(resumed.predictive[k], v, err_msg=k)
    np.testing.assert_array_equal(np.asarray(resumed.samples), np.asarray(full.samples))
    if store:
        assert_matches_draws(resumed)


def test_pool_moments_is_chans_formula():
    rng = np.random.default_rng(0)
    xs = [rng.normal(c, 1 + c, size=(n, 4)) for c, n in enumerate([5, 1, 12])]
    count = np.array([len(x) for x in xs])
    mean = np.stack([x.mean(0) for x in xs])
    m2 = np.stack([((x - x.mean(0)) ** 2).sum(0) for x in xs])
    p = pool_moments(count, mean, m2)
    every = np.concatenate(xs)
    np.testing.assert_allclose(p["mean"], every.mean(0))
    np.testing.assert_allclose(p["var"], every.var(0))
    assert p["count"] == len(every)
    empty = pool_moments(np.zeros(2, np.int32), np.zeros((2, 3)), np.zeros((2, 3)))
    assert np.isnan(empty["mean"]).all() and np.isnan(empty["chain_var"]).all()


@pytest.mark.parametrize("fn, match", [
    (lambda th: float(th[0]), "predict must be a JAX-traceable"),
    (lambda th: {"a": th}, "predict must return one real array"),
    (lambda th: th.no_such_attribute, "predict must be a JAX-traceable"),
    ("not a function", "predict must be a function"),
])
def test_bad_predict_is_refused_before_compiling(fn, match):
    with pytest.raises(TypeError, match=match):
        sgmc.sample(problem(), KERNELS["sgld"](), INIT, num_steps=10, predict=fn)


def test_store_draws_false_with_stream_to_is_refused(tmp_path):
    with pytest.raises(ValueError, match="store_draws"):
        sgmc.sample(problem(), KERNELS["sgld"](), INIT, num_steps=10, store_draws=False,
                    stream_to=tmp_path / "draws")
    with pytest.raises(TypeError, match="store_draws"):
        sgmc.sample(problem(), KERNELS["sgld"](), INIT, num_steps=10, store_draws="no")


def test_a_pytree_draw_reaches_predict_whole():
    """Draws that are pytrees (on the model's scale) are passed to predict as one draw."""
    posterior = sgmc.Posterior(
        lambda p, d: -0.5 * jnp.sum((d["y"] - d["x"] @ p["w"] - p["b"]) ** 2),
        lambda p: -0.5 * (jnp.sum(p["w"] ** 2) + p["b"] ** 2),
        data={"x": X, "y": Y})
    init = {"w": jnp.zeros(3), "b": jnp.zeros(())}
    res = sgmc.sample(posterior, sgmc.sgld(1e-3, batch_size=10), init, num_steps=64,
                      num_chains=2, thin=2, draws_per_block=8,
                      predict=lambda p: X_TEST @ p["w"] + p["b"])
    f = (np.einsum("nk,cdk->cdn", np.asarray(X_TEST), np.asarray(res.samples["w"]))
         + np.asarray(res.samples["b"])[..., None])
    np.testing.assert_allclose(res.predictive["mean"], f.reshape(-1, 6).mean(0), rtol=1e-5,
                               atol=1e-6)
    assert jax.tree.structure(res.samples) == jax.tree.structure(init)


class Unhashable:
    """A callable that cannot be hashed (as an Equinox module holding arrays)."""

    __hash__ = None

    def __init__(self, x):
        self.x = x

    def __call__(self, theta):
        return jnp.tanh(self.x @ theta)


def test_an_unhashable_callable_is_a_predict():
    res = sgmc.sample(problem(), KERNELS["sgld"](), INIT, **RUN, predict=Unhashable(X_TEST))
    np.testing.assert_array_equal(res.predictive["mean"], run("sgld").predictive["mean"])


def test_draws_longer_than_a_chunk_of_randomness():
    """thin above the steps whose randomness is drawn at once (256 here): a draw spans
    several chunks (the loop's other branch, as for a large network's draws)."""
    res = sgmc.sample(problem(), KERNELS["sgld"](), INIT, num_steps=3_000, num_chains=2,
                      burn_in=600, thin=300, draws_per_block=2, predict=predict)
    assert res.num_draws == 8
    assert_matches_draws(res)
