"""Per-call cost of ``sgmc.sample`` (issue 35, item 3): what depends only on the problem
object, the sampler's structure and the shapes is worked out once (:mod:`sgmc.run.cache`),
never from a stale entry, and the draws are bitwise those of a fresh process. No test
asserts on time."""

import gc
import weakref

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.model.posterior import Posterior
from sgmc.run import cache, plan, preflight

KINDS = ("init_states", "draw_bytes", "check_params")


def _problem(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (rng.random(n) < 0.5).astype(np.float32)
    return sgmc.models.logistic_regression(X, y)


@pytest.fixture(scope="module")
def post():
    return _problem()


def _run(post, sampler=None, init=None, **kw):
    kw = {"num_steps": 10, "seed": 0, "progress": False, **kw}
    sampler = sampler or sgmc.sgld(step_size=1e-4, batch_size=20)
    return sgmc.sample(post, sampler, init=jnp.zeros(3) if init is None else init, **kw)


def _counts():
    return {k: (cache._stats[("hit", k)], cache._stats[("miss", k)]) for k in KINDS}


def test_second_call_reuses_the_traced_answers(post, monkeypatch):
    calls = []
    original = Posterior.check_params
    monkeypatch.setattr(Posterior, "check_params",
                        lambda self, *a, **k: (calls.append(1), original(self, *a, **k))[1])
    cache.clear()
    _run(post)
    assert calls and _counts() == {k: (0, 1) for k in KINDS}
    traced = len(calls)
    # Another seed, step size and length: hyper-parameter values and run settings, not
    # structure — nothing is traced again.
    _run(post, sgmc.sgld(step_size=3e-4, batch_size=20), seed=5, num_steps=7)
    assert len(calls) == traced
    assert _counts() == {k: (1, 1) for k in KINDS}


@pytest.mark.parametrize("change", ["problem", "data_shape", "init_shape", "sampler_class",
                                    "static_option", "chains", "prng"])
def test_what_changes_the_structure_misses(post, change):
    cache.clear()
    _run(post)
    kw, problem, sampler, init = {}, post, None, None
    if change == "problem":  # equal in every way but identity
        problem = _problem()
    elif change == "data_shape":
        problem = _problem(n=300)
    elif change == "init_shape":
        problem, init = _problem(d=4), jnp.zeros(4)
    elif change == "sampler_class":
        sampler = sgmc.sghmc(step_size=1e-4, batch_size=20, friction=1.0)
    elif change == "static_option":
        sampler = sgmc.sgld(step_size=1e-4, batch_size=10)
    elif change == "chains":
        kw["num_chains"] = 2
    elif change == "prng":
        kw["prng"] = "rbg"
    before = _counts()
    _run(problem, sampler, init, **kw)
    after = _counts()
    assert after["init_states"][1] == before["init_states"][1] + 1
    assert after["init_states"][0] == before["init_states"][0]


def test_draws_are_bitwise_the_same_with_and_without_the_cache(post):
    sampler = sgmc.sgld(step_size=1e-4, batch_size=20)
    kw = {"num_chains": 3, "num_steps": 40, "thin": 2, "init_spread": 0.5}
    cache.clear()
    plan._KEYS.clear()
    fresh = {s: _run(post, sampler, seed=s, **kw) for s in (0, 1)}
    hit = {s: _run(post, sampler, seed=s, **kw) for s in (1, 0)}
    assert cache._stats[("hit", "init_states")] == 3
    for s in (0, 1):
        np.testing.assert_array_equal(fresh[s].samples, hit[s].samples)
        np.testing.assert_array_equal(fresh[s].info["grad_evals"], hit[s].info["grad_evals"])
    assert not np.array_equal(hit[0].samples, hit[1].samples)


@pytest.mark.parametrize("prng", ["threefry", "rbg"])
def test_chain_keys_are_the_eager_splits(prng):
    impl = plan.PRNG_IMPLS[prng]

    for seed in (0, 7, 2**31 + 5, 2**32 - 1):
        s = type("S", (), {"seed": seed, "num_chains": 3, "prng": prng})
        got = plan.chain_keys(s)
        keys = jax.random.split(jax.random.key(seed, impl=impl), 3)
        pairs = jax.vmap(jax.random.split)(keys)
        for a, b in zip(got, (pairs[:, 0], pairs[:, 1]), strict=True):
            np.testing.assert_array_equal(jax.random.key_data(a), jax.random.key_data(b))
        assert plan.chain_keys(s) is got  # remembered


def test_keep_mask_and_schedules_compiled_agree_with_eager():
    kernel = sgmc.cyclical(sgmc.sgld(step_size=1e-3, batch_size=10), 4, num_steps=400)
    mask = plan.keep_mask(kernel, 3, 397, 1)
    t = jnp.asarray(plan.draw_steps(3, 397, 1, 3), jnp.int32)
    np.testing.assert_array_equal(mask, np.broadcast_to(np.asarray(kernel.keeps(t)), t.shape))
    for _, schedule in preflight._schedules(kernel):
        ts = jnp.arange(400, dtype=jnp.int32)
        np.testing.assert_array_equal(preflight._evaluate(schedule, ts),
                                      jax.vmap(schedule)(ts))


def test_value_checks_still_run_on_every_call(post):
    cache.clear()
    _run(post)
    with pytest.raises(ValueError, match="init contains non-finite"):
        _run(post, init=jnp.array([0.0, jnp.nan, 0.0]))
    with pytest.raises(ValueError, match="step_size"):
        _run(post, sgmc.sgld(step_size=-1e-4, batch_size=20))
    # A schedule negative after step 5: of the run of 10 steps, not of one of 5.
    decaying = sgmc.sgld(step_size=sgmc.schedules.from_function(
        lambda t: jnp.where(t > 5, -1.0, 1e-4)), batch_size=20)
    _run(post, decaying, num_steps=5)
    with pytest.raises(ValueError, match="step 6"):
        _run(post, decaying)


def test_a_refusal_is_not_remembered(post):
    cache.clear()
    for _ in range(2):
        with pytest.raises(ValueError):
            _run(post, init=jnp.zeros(5))
    assert cache._stats[("hit", "check_params")] == 0


def test_an_entry_of_another_problem_at_the_same_id_misses():
    a, b = _problem(seed=1), _problem(seed=2)
    cache.clear()
    key = ("k",)
    cache._entries[("kind", id(b), bool(jax.config.jax_enable_x64), key)] = (
        weakref.ref(a), "stale")
    assert cache.remember("kind", b, key, lambda: "fresh") == "fresh"
    assert cache.remember("kind", b, key, lambda: "again") == "fresh"


def test_jax_64_bit_mode_misses(post):
    # The same problem and key: a trace under 64-bit mode may give other dtypes.
    cache.clear()
    assert cache.remember("kind", post, ("k",), lambda: "x32") == "x32"
    with jax.enable_x64(True):
        assert cache.remember("kind", post, ("k",), lambda: "x64") == "x64"
    assert cache.remember("kind", post, ("k",), lambda: "again") == "x32"


def test_the_cache_is_bounded():
    cache.clear()
    objs = [_problem(n=20, seed=i) for i in range(3)]
    for i in range(cache.SIZE + 50):
        cache.remember("kind", objs[i % 3], (i,), lambda i=i: i)
    assert len(cache._entries) == cache.SIZE
    assert cache.signature(object()) is None  # not keyable: computed every time


def test_a_repeated_call_reuses_its_compiled_program(post):
    """The block program is remembered (a new program object's first call takes JAX's slow
    Python path), and a run that needs another program (other block size) compiles it."""
    cache.clear()
    first = _run(post)
    assert (cache._stats[("hit", "program")], cache._stats[("miss", "program")]) == (0, 1)
    again = _run(post, sgmc.sgld(step_size=1e-4, batch_size=20), seed=0)
    assert (cache._stats[("hit", "program")], cache._stats[("miss", "program")]) == (1, 1)
    np.testing.assert_array_equal(first.samples, again.samples)
    _run(post, num_steps=10, thin=2)  # 5 draws a block, not 10: another program
    assert cache._stats[("miss", "program")] == 2


def test_entries_of_a_problem_that_is_gone_are_dropped():
    """A problem's compiled programs (and whatever its functions close over) do not outlive
    it: they go at the next miss."""
    cache.clear()
    gone = _problem(n=50, seed=7)
    cache.remember("program", gone, ("k",), lambda: "program of a dropped problem")
    del gone
    gc.collect()
    kept = _problem(n=50, seed=8)
    cache.remember("program", kept, ("k",), lambda: "program")
    assert [v for _, v in cache._entries.values()] == ["program"]
