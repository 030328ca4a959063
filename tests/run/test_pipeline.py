"""Two blocks in flight (:func:`sgmc.run.host.execute`): block k + 1 is dispatched before
block k's draws are taken to the host and stored, and what reaches the host is unchanged.
(The pinned-memory staging of an accelerator, :func:`sgmc.run.programs.to_host_async`,
cannot run on a CPU: it was checked on an H100, draws bitwise equal over block sizes.)"""

import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.run import host as host_mod


@pytest.fixture(scope="module")
def post():
    X, y, _ = sgmc.models.synthetic_linear_data(300, 2, correlation=0.5, seed=3)
    return sgmc.models.linear_regression(X, y)


SAMPLER = sgmc.sgld(2e-4, batch_size=20)


def _dispatches_seen_by_host(monkeypatch) -> list[int]:
    """Instrument the run: the number of block programs dispatched so far, recorded each
    time the host takes a block's draws (host_block)."""
    dispatched, seen = [0], []
    compile_programs, host_block = host_mod.compile_programs, host_mod.host_block

    def counting(run, args, programs):
        out = dict(compile_programs(run, args, programs))
        for name in ("full", "partial"):
            if name in out and not getattr(out[name], "counted", False):
                def call(*a, _program=out[name]):
                    dispatched[0] += 1
                    return _program(*a)
                call.counted, call.out_info = True, getattr(out[name], "out_info", None)
                out[name] = call
        return out

    def taking(buf, drop, n_draws):
        if n_draws:  # (the sinks' empty template before sampling has no draws)
            seen.append(dispatched[0])
        return host_block(buf, drop, n_draws)

    monkeypatch.setattr(host_mod, "compile_programs", counting)
    monkeypatch.setattr(host_mod, "host_block", taking)
    return seen


def test_the_next_block_runs_while_the_host_takes_this_ones_draws(post, monkeypatch):
    seen = _dispatches_seen_by_host(monkeypatch)
    res = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=60, thin=2, draws_per_block=5,
                      seed=1, progress=False)
    # 6 blocks of 5 draws: when the host takes block k's draws (k = 1..6), block k + 1 has
    # been dispatched too (not after the last block).
    assert seen == [2, 3, 4, 5, 6, 6]
    monkeypatch.undo()
    alone = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=60, thin=2, draws_per_block=30,
                        seed=1, progress=False)
    np.testing.assert_array_equal(res.samples, alone.samples)
    np.testing.assert_array_equal(res.info["step"], alone.info["step"])


def test_a_divergence_stops_at_the_block_that_diverged(post):
    """The block after the divergent one was already dispatched; the error holds the draws
    up to the divergence, as without two blocks in flight."""
    wild = sgmc.sgld(5.0, batch_size=20)
    with pytest.raises(sgmc.DivergenceError) as e:
        sgmc.sample(post, wild, jnp.zeros(2), num_steps=400, draws_per_block=10, seed=0,
                    progress=False)
    err = e.value
    assert err.result.num_draws == err.step - 1 and np.isfinite(err.result.samples).all()



def test_the_first_default_block_is_pipelined_too(post, monkeypatch):
    """Default blocks are timed (a slow first block re-cuts the rest), but timing the first
    one does not hold back the second: it is dispatched before the first block's draws are
    taken, as every block after it."""
    seen = _dispatches_seen_by_host(monkeypatch)
    res = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=2560, seed=1, progress=False)
    assert res.meta["draws_per_block"] == 256  # (MIN_BLOCK_STEPS: 10 blocks)
    assert seen == [2, 3, 4, 5, 6, 7, 8, 9, 10, 10]
