"""Randomness drawn ahead of the steps (sgmc._hoist): the split step is the step."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc import _hoist, driver
from sgmc._hoist import chunk_limit, split_step

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
}


def _whole_and_split(post, sampler, t):
    state = driver._init_chains(post, sampler, jnp.zeros((1, D)), jax.random.split(
        jax.random.key(1), 1))
    state = jax.tree.map(lambda x: x[0], state)
    split = split_step(driver._step_fn, (post, sampler, state), jax.random.key(0),
                       jnp.int32(0))
    key = jax.random.fold_in(jax.random.key(2), t)
    whole = jax.jit(driver._step_fn)(post, sampler, state, key, jnp.int32(t))
    parts = jax.jit(lambda k, tt, *a: split.post(split.pre(k, tt), *a))(
        key, jnp.int32(t), post, sampler, state)
    return split, whole, parts


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_split_step_equals_the_step(post, name):
    # The same operations on the same inputs: equal up to how XLA fuses them (float32
    # rounding), at ordinary steps and at periodic ones (t = 0, 4: snapshots, refreshes).
    for t in (0, 3, 4):
        split, whole, parts = _whole_and_split(post, SAMPLERS[name](), t)
        assert split is not None and split.nbytes > 0
        assert jax.tree.structure(whole) == jax.tree.structure(parts)
        for a, b in zip(jax.tree.leaves(whole), jax.tree.leaves(parts), strict=True):
            a, b = np.asarray(a), np.asarray(b)
            if np.issubdtype(a.dtype, np.floating):
                np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
            else:
                np.testing.assert_array_equal(a, b)


def test_minibatch_and_noise_are_hoisted_t_only_draws_are_not_keyed(post):
    state = driver._init_chains(post, SAMPLERS["svrg-ld"](), jnp.zeros((1, D)),
                                jax.random.split(jax.random.key(1), 1))
    split = split_step(driver._step_fn,
                       (post, SAMPLERS["svrg-ld"](), jax.tree.map(lambda x: x[0], state)),
                       jax.random.key(0), jnp.int32(0))
    res = jax.eval_shape(split.pre, jax.random.key(0), jnp.int32(0))
    kinds = {(r.size, jnp.issubdtype(r.dtype, jnp.integer)) for r in res}
    assert (10, True) in kinds and (D, False) in kinds  # minibatch indices, Gaussian noise
    # The snapshot test (t mod period = 0) depends on t alone: unkeyed, so that a batched
    # caller keeps it unbatched and the snapshot stays a branch.
    assert not all(split.keyed)


def test_periodic_work_stays_a_branch_over_many_chains(post):
    # With 4 chains vmapped, a batched snapshot predicate would turn the SVRG full pass
    # into a select computed at every step; it must remain a conditional.
    sampler = SAMPLERS["svrg-ld"]()
    keys = jax.random.split(jax.random.key(0), 4)
    states = driver._init_chains(post, sampler, jnp.zeros((4, D)), keys)
    counters = driver._Counters(jnp.zeros(4, jnp.uint32), jnp.zeros(4, jnp.uint32),
                                jnp.full(4, -1, jnp.int32))
    text = driver._run_block.lower(post, sampler, states, counters, keys, np.int32(0),
                                   n_draws=8, thin=1).as_text()
    assert "stablehlo.case" in text


def test_nothing_to_hoist_and_effects_stay_in_the_step():
    def deterministic(x, key, t):
        return x * 2.0

    assert split_step(deterministic, (jnp.ones(3),), jax.random.key(0), jnp.int32(0)) is None

    calls = []

    def noisy(x, key, t):
        z = jax.random.normal(key, (3,))
        jax.debug.callback(lambda v: calls.append(v), z)   # an effect on a key-only value
        return x + z

    split = split_step(noisy, (jnp.ones(3),), jax.random.key(0), jnp.int32(0))
    res = split.pre(jax.random.key(0), jnp.int32(0))
    assert calls == []                     # effects are never run ahead
    out = split.post(res, jnp.ones(3))
    jax.effects_barrier()
    assert len(calls) == 1
    np.testing.assert_allclose(out, noisy(jnp.ones(3), jax.random.key(0), 0))


def test_chunk_limit_bounds_memory():
    class Fake:
        nbytes = 4 * 2**20
    assert chunk_limit(None, 1) == 1
    assert chunk_limit(Fake(), 1) == _hoist.CHUNK_BYTES // Fake.nbytes
    assert chunk_limit(Fake(), 64) == 1
    Fake.nbytes = 8
    assert chunk_limit(Fake(), 1) == _hoist.MAX_CHUNK


@pytest.mark.parametrize("thin, per_block, name", [
    (1, 7, "sghmc"), (3, 64, "vr-resgld"), (300, 1, "svrg-ld"), (257, 2, "sghmc")])
def test_draws_do_not_depend_on_the_chunking(post, thin, per_block, name, monkeypatch):
    # Chunks of many draws (thin small), chunks within one draw (thin > chunk), prime
    # sizes: every way of drawing the randomness ahead gives the same draws bitwise, as
    # one step at a time does (chunk limit 1).
    sampler = SAMPLERS[name]()
    kw = dict(num_steps=3 * thin * per_block + thin + 5, burn_in=thin + 2, thin=thin,
              num_chains=2, progress=False, draws_per_block=per_block)
    ref = sgmc.sample(post, sampler, jnp.zeros(D), **kw)
    monkeypatch.setattr(_hoist, "MAX_CHUNK", 1)
    jax.clear_caches()  # the block programs are cached without the chunk limit in the key
    one = sgmc.sample(post, sampler, jnp.zeros(D), **kw)
    np.testing.assert_array_equal(ref.samples, one.samples)
    assert ref.info.keys() == one.info.keys()
    for k in ref.info:
        np.testing.assert_array_equal(ref.info[k], one.info[k])
    jax.clear_caches()


def test_rbg_draws_are_not_hoisted_and_do_not_depend_on_the_block_size(post):
    # JAX batches rbg keys by drawing the whole batch from its first key: drawn K steps at
    # a time, a step's randomness would depend on K. rbg steps draw their own.
    state = jax.tree.map(lambda x: x[0], driver._init_chains(
        post, SAMPLERS["sgld"](), jnp.zeros((1, D)), jax.random.split(jax.random.key(1), 1)))
    rbg = jax.random.key(0, impl="rbg")
    assert split_step(driver._step_fn, (post, SAMPLERS["sgld"](), state), rbg,
                      jnp.int32(0)) is None
    runs = [sgmc.sample(post, SAMPLERS["sgld"](), jnp.zeros(D), 600, num_chains=2,
                        prng="rbg", draws_per_block=n, progress=False) for n in (100, 60)]
    np.testing.assert_array_equal(runs[0].samples, runs[1].samples)
