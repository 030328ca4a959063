"""Run faults (issue 18): nothing silently wrong.

* a checkpoint resumes only the model it was written for — the fingerprint also compares the
  model's energy and gradient evaluated at the checkpoint's position on a few fixed rows, so a
  same-named function with another body (or one lambda for another) is refused;
* a divergence in one replica of replica exchange names the chain *and* the replica;
* ``minimize`` checks its seed's range and reports diverged replications instead of
  returning NaN silently.
"""

import json
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.io import checkpoint

DATA = np.linspace(-1.0, 1.0, 40, dtype=np.float32).reshape(20, 2)
RUN = dict(num_steps=20, num_chains=2, thin=2, seed=3, draws_per_block=2,
           init_per_chain=False)  # init (2,) with 2 chains: one point for both


def _logprior(theta):
    return -0.5 * jnp.sum(theta ** 2)


def _posterior(scale: float) -> sgmc.Posterior:
    """A Gaussian model whose ``loglik`` has the same name (and qualified name) for every
    ``scale``: only its body's behaviour differs."""
    def loglik(theta, x):
        return -0.5 * scale * jnp.sum((x - theta) ** 2)

    return sgmc.Posterior(loglik, _logprior, DATA)


def _sampler():
    return sgmc.sgld(1e-3, batch_size=5)


def _interrupted_checkpoint(tmp_path, problem, sampler, monkeypatch, after=3, **run):
    """A checkpoint of an unfinished run (Ctrl-C after ``after`` blocks)."""
    from sgmc.io import sinks as _sinks

    path = tmp_path / "run.ckpt"
    append, calls = _sinks.MemorySink.append, []

    def interrupting(sink, *args):
        append(sink, *args)
        calls.append(1)
        if len(calls) == after:
            raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(_sinks.MemorySink, "append", interrupting)
        with pytest.raises(sgmc.Interrupted):
            sgmc.sample(problem, sampler, jnp.zeros(2), checkpoint=path, **dict(RUN, **run))
    return path


# -- item 4: a checkpoint resumes only under the model it was made from --------------------

def test_resume_refuses_a_same_named_loglik_with_another_body(tmp_path, monkeypatch):
    path = _interrupted_checkpoint(tmp_path, _posterior(1.0), _sampler(), monkeypatch)
    with pytest.raises(sgmc.CheckpointError, match=r"(?s)model.*energy.*differ") as info:
        sgmc.resume(path, _posterior(2.0), _sampler())
    assert "run.ckpt" in str(info.value)
    # The stored and the found values are shown.
    assert "stored" in str(info.value) and "found" in str(info.value)


def test_resume_refuses_one_lambda_for_another(tmp_path):
    path = tmp_path / "f.ckpt"
    first = sgmc.Objective(lambda x: jnp.sum(x ** 2))  # no data: the exact term alone
    sgmc.sample(first, sgmc.sgld(1e-3), jnp.ones(3), num_steps=4, checkpoint=path)
    other = sgmc.Objective(lambda x: jnp.sum(x ** 4))
    with pytest.raises(sgmc.CheckpointError, match="energy"):
        sgmc.resume(path, other, sgmc.sgld(1e-3))
    # The same model resumes (a finished run returns its Result at once).
    again = sgmc.resume(path, sgmc.Objective(lambda x: jnp.sum(x ** 2)), sgmc.sgld(1e-3))
    assert again.num_draws == 4


def test_the_same_model_resumes_bitwise(tmp_path, monkeypatch):
    full = sgmc.sample(_posterior(1.0), _sampler(), jnp.zeros(2), **RUN)
    path = _interrupted_checkpoint(tmp_path, _posterior(1.0), _sampler(), monkeypatch)
    resumed = sgmc.resume(path, _posterior(1.0), _sampler())
    np.testing.assert_array_equal(np.asarray(resumed.samples), np.asarray(full.samples))
    np.testing.assert_array_equal(resumed.info["grad_evals"], full.info["grad_evals"])


def test_the_probe_is_a_few_numbers_in_the_header(tmp_path, monkeypatch):
    path = _interrupted_checkpoint(tmp_path, _posterior(1.0), _sampler(), monkeypatch)
    header, _ = checkpoint.read(path)
    probe = header["fingerprint"]["probe"]
    assert probe["rows"] == 20  # min(N, 64)
    numbers = [v for k, vs in probe.items() if k != "rows" for v in np.atleast_1d(vs)]
    assert 3 <= len(numbers) <= 40
    assert all(isinstance(v, float) for v in numbers)
    json.dumps(probe)


def test_a_rounding_difference_is_not_a_mismatch():
    problem = _posterior(1.0)
    probe = checkpoint.probe(problem, jnp.array([0.3, -0.2]))
    nudged = {k: v if k == "rows" else (np.asarray(v) * (1 + 2e-6)).tolist()
              for k, v in probe.items()}
    assert checkpoint.probe_mismatch(probe, nudged) is None
    other = checkpoint.probe(_posterior(1.0 + 1e-3), jnp.array([0.3, -0.2]))
    assert "energy" in checkpoint.probe_mismatch(probe, other)


# -- item 13: a divergence in one replica names the chain and the replica ------------------

def test_divergence_in_one_replica_names_chain_and_replica():
    problem = _posterior(1.0)
    base = sgmc.sgld(1e-3, batch_size=5)
    # The hottest replica's step size is far beyond 2/λ_max: it alone overflows.
    coupling = sgmc.replica_exchange(base, [1.0, 2.0, 4.0, 8.0],
                                     step_sizes=[1e-3, 1e-3, 1e-3, 5.0])
    with pytest.raises(sgmc.DivergenceError) as info:
        sgmc.sample(problem, coupling, jnp.zeros(2), num_steps=200, num_chains=2, seed=1,
                    init_per_chain=False)
    err = info.value
    assert err.replica == 3
    assert err.chain in (0, 1)
    assert f"chain {err.chain}, replica 3 " in str(err)
    assert err.step < 200


def test_divergence_of_a_single_chain_names_no_replica():
    jump = sgmc.schedules.from_function(lambda t: jnp.where(t < 10, 1e-3, 50.0))
    with pytest.raises(sgmc.DivergenceError) as info:
        sgmc.sample(_posterior(1.0), sgmc.sgld(jump, batch_size=5), jnp.zeros(2),
                    num_steps=100, seed=2)
    assert info.value.replica is None
    assert "replica" not in str(info.value)
    assert str(info.value).startswith("chain 0 diverged")


# -- item 11: minimize checks its seed and reports divergence ------------------------------

@pytest.mark.parametrize("seed", [2**32, 2**64, -1])
def test_minimize_seed_range(seed):
    with pytest.raises(ValueError, match=r"seed.*4294967295"):
        sgmc.minimize(lambda x: jnp.sum(x ** 2), sgmc.gd(0.1), np.ones(2), 4, seed=seed)


def test_minimize_best_point_when_the_start_value_is_nan():
    # F is NaN at the start only (its gradient is finite): the best point is a later one.
    def f(x):
        return jnp.sum((x - 1.0) ** 2) - 4.78 + jax.lax.stop_gradient(
            jnp.where(x[0] == 0.0, jnp.nan, 0.0))

    res = sgmc.minimize(f, sgmc.gd(0.1), np.zeros(2), 60, num_replications=2)
    assert np.all(np.isfinite(res.best_value)) and np.all(res.best_value < -4.77)
    np.testing.assert_allclose(res.best_x, 1.0, atol=1e-2)
    assert not res.diverged.any()


def test_minimize_reports_a_diverged_replication():
    # GD with h = 1.5 on F = x²: |1 − 2h| = 2, the iterate doubles every step until it
    # overflows (float32 beyond ~2^128: about step 128); replication 1 starts at 0 and stays.
    init = np.array([[1.0], [0.0]], np.float32)
    with pytest.warns(RuntimeWarning, match=r"replication 0 diverged.*step \d+") as rec:
        res = sgmc.minimize(lambda x: jnp.sum(x ** 2), sgmc.gd(1.5), init, 200,
                            num_replications=2, init_axes="replication", record_path=True)
    assert len(rec) == 1
    np.testing.assert_array_equal(res.diverged, [True, False])
    step = int(res.diverged_step[0])
    assert 100 < step < 200 and res.diverged_step[1] == -1
    assert f"step {step}" in str(rec[0].message)
    # What was made before it is kept: the path up to that step is finite.
    assert np.all(np.isfinite(res.path[0, :step - 1])) and np.isnan(res.path[0, -1]).all()
    assert not np.isfinite(res.value[0]) and res.value[1] == 0.0
    # The best point is the start's (F = 1), not NaN.
    assert res.best_value[0] == 1.0 and res.best_x[0, 0] == 1.0
    assert "diverged" in repr(res)


def test_minimize_without_divergence_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = sgmc.minimize(lambda x: jnp.sum(x ** 2), sgmc.gd(0.1), np.ones(2), 10)
    assert not res.diverged.any() and res.diverged_step.tolist() == [-1]


def test_minimize_names_the_diverged_replica_of_a_coupled_method():
    # X starts at the minimum 0 of F = x² and stays (gradient 0, no noise); Y at 1 with
    # h = 1.5 doubles and overflows. F(Y) < F(X) = 0 never holds: no exchange.
    init = np.array([[0.0], [1.0]], np.float32)
    with pytest.warns(RuntimeWarning, match=r"replication 0 \(replica 1;.*diverged"):
        res = sgmc.minimize(lambda x: jnp.sum(x ** 2), sgmc.gd_x_ld(1.5, 1.0), init, 200,
                            init_axes="replica")
    assert res.diverged.tolist() == [True]
    assert res.value[0] == 0.0 and res.exchanges[0] == 0


# --- Item 12: blocks cut by wall time ------------------------------------------------------


@pytest.fixture
def tiny_block_seconds(monkeypatch):
    """Every default block 'takes too long': after the first, blocks are cut to one draw."""
    from sgmc.run import api
    monkeypatch.setattr(api, "BLOCK_SECONDS", 1e-9)


LONG = dict(num_steps=400, num_chains=2, burn_in=30, seed=5, init_per_chain=False)


def test_default_blocks_are_cut_by_wall_time_with_the_same_draws(tiny_block_seconds):
    """A default-size block that takes longer than 2·BLOCK_SECONDS makes the rest of the run
    use short blocks (here one draw each); the draws are bitwise those of fixed blocks."""
    cut = sgmc.sample(_posterior(1.0), _sampler(), jnp.zeros(2), **LONG)
    fixed = sgmc.sample(_posterior(1.0), _sampler(), jnp.zeros(2), draws_per_block=20, **LONG)
    assert cut.meta["draws_per_block"] == 1 and fixed.meta["draws_per_block"] == 20
    np.testing.assert_array_equal(np.asarray(cut.samples), np.asarray(fixed.samples))
    np.testing.assert_array_equal(cut.info["grad_evals"], fixed.info["grad_evals"])


def test_blocks_the_user_chose_are_not_cut(tiny_block_seconds):
    res = sgmc.sample(_posterior(1.0), _sampler(), jnp.zeros(2), draws_per_block=20, **LONG)
    assert res.meta["draws_per_block"] == 20


def test_cut_blocks_keep_the_checkpoint_cadence_and_resume_bitwise(tiny_block_seconds,
                                                                     tmp_path, monkeypatch):
    """Checkpoints keep the cadence of the original blocks (not one per short block), and a
    checkpoint written after the blocks were cut resumes to the uninterrupted draws."""
    writes = []
    real = checkpoint.write
    monkeypatch.setattr(checkpoint, "write", lambda *a: writes.append(a[0]) or real(*a))
    path = tmp_path / "run.ckpt"
    full = sgmc.sample(_posterior(1.0), _sampler(), jnp.zeros(2), checkpoint=path, **LONG)
    # 20 original blocks (the first of which includes the burn-in), and the final one.
    assert full.meta["draws_per_block"] == 1 and len(writes) <= 21
    prev = checkpoint.read(f"{path}.prev")[0]
    assert 0 < prev["t0"] < LONG["num_steps"]
    res = sgmc.resume(f"{path}.prev", _posterior(1.0), _sampler())
    np.testing.assert_array_equal(np.asarray(res.samples), np.asarray(full.samples))


def test_streamed_blocks_are_not_cut(tiny_block_seconds):
    """A stream's data buffers are tied to the blocks: its block size never changes."""
    def loglik(theta, x):
        return -0.5 * jnp.sum((x - theta) ** 2)

    post = sgmc.Posterior(loglik, _logprior, sgmc.Stream(np.tile(DATA, (5, 1)),
                                                         buffer_rows=50))
    sampler = sgmc.sgld(1e-3, batch_size=5, estimator=sgmc.uniform("permutation"))
    res = sgmc.sample(post, sampler, jnp.zeros(2), **LONG)
    assert res.meta["draws_per_block"] > 1
