"""Randomness drawn ahead of the steps (sgmc.rng, sgmc.run.loop): record, then replay.

A step run in replay mode on the draws it recorded is the step run live (the same
``jax.random`` calls on the same keys); a run's draws do not depend on how many steps'
randomness is drawn at once; periodic work keyed on t stays a branch over many chains; and
a step that asks for its draws in another order in replay fails loudly.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.rng import Rng, record, replay
from sgmc.run import cache, loop

N, D = 200, 3


@pytest.fixture(scope="module")
def post():
    x, y, _ = sgmc.models.synthetic_logistic_data(N, D, seed=0)
    return sgmc.models.logistic_regression(x, y)


SAMPLERS = {
    "sgld": lambda: sgmc.sgld(1e-3, batch_size=10),
    "sgld-permutation": lambda: sgmc.sgld(1e-3, batch_size=10,
                                          estimator=sgmc.uniform("permutation")),
    "sghmc": lambda: sgmc.sghmc(1e-3, friction=10.0, batch_size=10),
    "sghmc-splitting": lambda: sgmc.sghmc(1e-3, friction=10.0, batch_size=10,
                                          integrator="splitting"),
    "psgld": lambda: sgmc.psgld(1e-3, batch_size=10),
    "svrg-ld": lambda: sgmc.sgld(1e-3, batch_size=10, estimator=sgmc.svrg(period=4)),
    "saga-hmc": lambda: sgmc.sghmc(1e-3, friction=10.0, batch_size=10, estimator=sgmc.saga()),
    "ewsg": lambda: sgmc.sghmc(1e-3, friction=10.0, batch_size=1,
                               estimator=sgmc.ewsg(chain_length=3)),
    "vr-resgld": lambda: sgmc.replica_exchange(
        sgmc.sgld(1e-3, batch_size=10), [1.0, 3.0],
        energy=sgmc.cv_energy(period=4, batch_size=10)),
    "resgld-4": lambda: sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=10),
                                              [1.0, 2.0, 4.0, 8.0]),
}


def _state(post, sampler):
    states = loop.init_chains(post, sampler, jnp.zeros((1, D)),
                              jax.random.split(jax.random.key(1), 1))
    return jax.tree.map(lambda x: x[0], states)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_replayed_step_equals_the_live_step(post, name):
    # At ordinary steps and at periodic ones (t = 0, 4: snapshots, refreshes, swaps).
    sampler = SAMPLERS[name]()
    state = _state(post, sampler)
    for t in (0, 3, 4):
        key = jax.random.fold_in(jax.random.key(2), t)
        live = jax.jit(lambda s, k, tt: sampler.step(post, s, Rng(k), tt))(state, key, t)
        draws = jax.jit(lambda s, k, tt: record(
            lambda r: sampler.step(post, s, r, tt), k))(state, key, t)
        assert jax.tree.leaves(draws), "every sampler here draws something"
        again = jax.jit(lambda s, d, tt: replay(
            lambda r: sampler.step(post, s, r, tt), d))(state, draws, t)
        assert jax.tree.structure(live) == jax.tree.structure(again)
        for a, b in zip(jax.tree.leaves(live), jax.tree.leaves(again), strict=True):
            a, b = np.asarray(a), np.asarray(b)
            if np.issubdtype(a.dtype, np.floating):  # fused differently: float32 rounding
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            else:
                np.testing.assert_array_equal(a, b)


def test_recorded_draws_do_not_read_the_state(post):
    # The same key gives the same draws from any state: what lets the driver draw them for
    # many steps before running them.
    sampler = SAMPLERS["sghmc"]()
    state = _state(post, sampler)
    moved = jax.tree.map(lambda x: x + 1.0 if jnp.issubdtype(x.dtype, jnp.floating) else x,
                         state)
    key = jax.random.key(5)
    a = record(lambda r: sampler.step(post, state, r, 0), key)
    b = record(lambda r: sampler.step(post, moved, r, 0), key)
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))


def test_replay_in_another_order_fails_loudly():
    def step(rng):
        return rng.normal((3,)), rng.randint((2,), 0, 5)

    draws = record(step, jax.random.key(0))
    with pytest.raises(RuntimeError, match="different order"):
        replay(lambda rng: (rng.randint((2,), 0, 5), rng.normal((3,))), draws)
    with pytest.raises(RuntimeError, match="recorded draws"):
        replay(lambda rng: rng.normal((3,)), draws)


def test_periodic_work_stays_a_branch_over_many_chains(post):
    # With 4 chains vmapped, a batched snapshot predicate would turn the SVRG full pass
    # into a select computed at every step; it must remain a conditional.
    sampler = SAMPLERS["svrg-ld"]()
    keys = jax.random.split(jax.random.key(0), 4)
    states = loop.init_chains(post, sampler, jnp.zeros((4, D)), keys)
    counters = loop.Counters.start(4, 0)
    text = loop.run_block.lower(post, sampler, states, counters, keys, np.int32(0),
                                n_draws=8, thin=1).as_text()
    assert "stablehlo.case" in text


@pytest.mark.parametrize("backend", ["cpu", "gpu"])
def test_chunks_of_randomness_stay_within_their_bytes(post, backend, monkeypatch):
    # A CPU draws ahead as many steps as fit in CHUNK_BYTES (at most MAX_CHUNK, live when
    # fewer than two fit); an accelerator all MAX_CHUNK steps when one step draws at most
    # ACCELERATOR_STEP_BYTES, else live. The bytes of one step's draws, for 4 chains:
    sampler, chains = SAMPLERS["sghmc"](), 4
    keys = jax.random.split(jax.random.key(0), chains)
    states = loop.init_chains(post, sampler, jnp.zeros((chains, D)), keys)
    one = jax.eval_shape(lambda s, k: record(lambda r: sampler.step(post, s, r, 0), k),
                         jax.tree.map(lambda x: x[0], states), keys[0])
    per_step = chains * sum(loop._nbytes(x) for x in jax.tree.leaves(one))
    monkeypatch.setattr(jax, "default_backend", lambda: backend)

    def chunk(**limits):
        for name, value in limits.items():
            monkeypatch.setattr(loop, name, value)
        return loop._parts(post, sampler, states, loop.Counters.start(chains, 0), keys,
                           np.int32(0)).chunk

    if backend == "cpu":
        assert chunk(CHUNK_BYTES=2 * per_step - 1) == 1
        assert chunk(CHUNK_BYTES=2 * per_step) == 2
        assert chunk(CHUNK_BYTES=7 * per_step + 3) == 7
        assert chunk(CHUNK_BYTES=10**4 * per_step) == loop.MAX_CHUNK
    else:
        assert chunk(ACCELERATOR_STEP_BYTES=per_step) == loop.MAX_CHUNK
        assert chunk(ACCELERATOR_STEP_BYTES=per_step - 1) == 1


@pytest.mark.parametrize("thin, per_block, name", [
    (1, 7, "sghmc"), (3, 64, "vr-resgld"), (300, 1, "svrg-ld"), (257, 2, "sghmc")])
def test_draws_do_not_depend_on_the_chunking(post, thin, per_block, name, monkeypatch):
    # Chunks of many draws (thin small), chunks within one draw (thin > chunk), prime
    # sizes: every way of drawing the randomness ahead gives the same draws bitwise, as
    # steps that draw their own do (chunk limit 1: live mode, as on an accelerator).
    sampler = SAMPLERS[name]()
    kw = dict(num_steps=3 * thin * per_block + thin + 5, burn_in=thin + 2, thin=thin,
              num_chains=2, progress=False, draws_per_block=per_block)
    ref = sgmc.sample(post, sampler, jnp.zeros(D), **kw)
    monkeypatch.setattr(loop, "MAX_CHUNK", 1)
    jax.clear_caches()  # the block programs are cached without the chunk limit in the key
    cache.clear()  # (and sgmc keeps its compiled programs)
    one = sgmc.sample(post, sampler, jnp.zeros(D), **kw)
    np.testing.assert_array_equal(ref.samples, one.samples)
    assert ref.info.keys() == one.info.keys()
    for k in ref.info:
        np.testing.assert_array_equal(ref.info[k], one.info[k])
    jax.clear_caches()
    cache.clear()


@pytest.mark.parametrize("name", ["sghmc", "vr-resgld"])
def test_live_draws_do_not_depend_on_the_block_size(post, name, monkeypatch):
    # Live mode (an accelerator, or a large model): each step draws its own randomness
    # inside the barriers (replica exchange through map_split); blocks of 3 and 7 draws,
    # partial last blocks and leftover steps give the same draws bitwise.
    monkeypatch.setattr(loop, "CHUNK_BYTES", 1)
    monkeypatch.setattr(loop, "ACCELERATOR_STEP_BYTES", 0)
    jax.clear_caches()
    cache.clear()
    kw = dict(num_steps=5 * 23 + 7 + 3, burn_in=7, thin=5, num_chains=2, progress=False)
    runs = [sgmc.sample(post, SAMPLERS[name](), jnp.zeros(D), draws_per_block=n, **kw)
            for n in (7, 3)]
    for run in runs[1:]:
        np.testing.assert_array_equal(runs[0].samples, run.samples)
    jax.clear_caches()
    cache.clear()


def test_rbg_draws_do_not_depend_on_the_block_size(post):
    # JAX batches rbg keys by drawing the whole batch from its first key: drawn K steps at
    # a time, a step's randomness would depend on K. rbg steps draw their own (live mode).
    runs = [sgmc.sample(post, SAMPLERS["sgld"](), jnp.zeros(D), 600, num_chains=2,
                        prng="rbg", draws_per_block=n, progress=False) for n in (100, 60)]
    np.testing.assert_array_equal(runs[0].samples, runs[1].samples)
