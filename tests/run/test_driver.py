"""The driver: determinism, chains, thinning and burn-in, blocks, caching, save/load, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.run import api
from sgmc.run import plan as driver_plan


@pytest.fixture(scope="module")
def post():
    X, y, _ = sgmc.models.synthetic_linear_data(500, 2, correlation=0.5, seed=3)
    return sgmc.models.linear_regression(X, y)


SAMPLER = sgmc.sgld(2e-4, batch_size=20)


def test_same_seed_gives_bitwise_identical_draws(post):
    a = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=300, num_chains=3, seed=7)
    b = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=300, num_chains=3, seed=7)
    c = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=300, num_chains=3, seed=8)
    np.testing.assert_array_equal(a.samples, b.samples)
    assert not np.array_equal(a.samples, c.samples)


def test_draws_do_not_depend_on_block_size(post):
    a = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=300, num_chains=2, thin=3,
                    burn_in=30, draws_per_block=90)
    b = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=300, num_chains=2, thin=3,
                    burn_in=30, draws_per_block=7)
    np.testing.assert_array_equal(a.samples, b.samples)
    np.testing.assert_array_equal(a.info["grad_evals"], b.info["grad_evals"])


def test_chains_are_independent(post):
    res = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=3000, num_chains=2, burn_in=500,
                      thin=10, seed=1)
    a, b = res.samples[0, :, 0], res.samples[1, :, 0]
    assert not np.array_equal(a, b)
    # 250 draws per chain; the draws' own autocorrelation leaves an effective ~50 each, so a
    # correlation between independent chains has sd ≈ 0.14. Four sd would be 0.56.
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.56


@pytest.mark.parametrize("num_steps, burn_in, thin, draws, extra", [
    (100, 0, 1, 100, 0), (100, 10, 1, 90, 0), (100, 10, 7, 12, 6), (10, 9, 1, 1, 0)])
def test_thinning_and_burn_in_counts(post, num_steps, burn_in, thin, draws, extra):
    res = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=num_steps, burn_in=burn_in,
                      thin=thin, num_chains=2)
    assert res.samples.shape == (2, draws, 2)
    expected_steps = burn_in + thin * np.arange(1, draws + 1)
    np.testing.assert_array_equal(res.info["step"], expected_steps)
    np.testing.assert_array_equal(res.info["grad_evals"][0], 20 * expected_steps)
    # Every step is taken, including those after the last draw.
    assert res.meta["grad_evals_total"] == [20 * num_steps] * 2


def test_thin_draws_are_every_thin_th_state(post):
    full = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=60, seed=4)
    thinned = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=60, burn_in=5, thin=5, seed=4)
    np.testing.assert_array_equal(thinned.samples[0], full.samples[0, 9::5])


def test_init_per_chain_and_pytree_positions():
    def loglik(p, d):
        return -0.5 * (d - p["m"][0]) ** 2

    post = sgmc.Posterior(loglik, lambda p: -0.5 * jnp.sum(p["m"] ** 2), np.linspace(-1, 1, 50))
    init = {"m": jnp.array([[1.0], [2.0], [3.0]])}
    res = sgmc.sample(post, sgmc.sgld(1e-3, batch_size=5), init, num_steps=1, num_chains=3)
    assert res.samples["m"].shape == (3, 1, 1)
    # The first draw of each chain stays near its own starting point.
    np.testing.assert_allclose(res.samples["m"][:, 0, 0], [1.0, 2.0, 3.0], atol=0.3)


@pytest.fixture
def compiles():
    """The programs XLA compiled, or loaded from the on-disk compilation cache the test
    session keeps (tests/conftest.py), since the fixture started (a list of event names).

    ``sample`` compiles ahead of time (``lower().compile()``), which the ``jit`` caches'
    ``_cache_size()`` does not see, so compilations are counted where XLA reports them."""
    events = []

    def listen(event, duration=None, **kwargs):
        if event in ("/jax/core/compile/backend_compile_duration",
                     "/jax/compilation_cache/cache_hits"):
            events.append(event)

    jax.monitoring.register_event_duration_secs_listener(listen)
    jax.monitoring.register_event_listener(listen)
    yield events
    jax.monitoring.unregister_event_duration_listener(listen)
    jax.monitoring.unregister_event_listener(listen)


def test_second_call_with_new_numbers_does_not_recompile(post, compiles):
    first, second = jnp.zeros(2), jnp.ones(2)
    sgmc.sample(post, sgmc.sghmc(1e-3, friction=5.0, batch_size=20), first, 50)
    assert compiles  # the listener sees compilations at all
    compiles.clear()
    res = sgmc.sample(post, sgmc.sghmc(2e-3, friction=7.0, batch_size=20, temperature=0.5),
                      second, 50, seed=3)
    assert compiles == []
    assert res.num_draws == 50


def test_second_call_with_the_same_predict_does_not_recompile(post, compiles):
    # predict is a static argument of the compiled programs, keyed by the function's
    # identity: a second run with the same function reuses them.
    def predict(theta):
        return jnp.tanh(theta)

    kw = dict(num_steps=40, thin=4, predict=predict, store_draws=False)
    sgmc.sample(post, SAMPLER, jnp.zeros(2), **kw)
    compiles.clear()
    res = sgmc.sample(post, SAMPLER, jnp.ones(2), seed=3, **kw)
    assert compiles == []
    assert res.predictive["count"] == 10


def test_run_with_leftovers_compiles_once(post, compiles):
    # Burn-in not a multiple of thin, a partial last block and trailing steps: both block
    # programs run, and a second call compiles neither again.
    kw = dict(num_steps=300, burn_in=31, thin=4, num_chains=2, draws_per_block=5)
    sgmc.sample(post, SAMPLER, jnp.zeros(2), **kw)
    compiles.clear()
    res = sgmc.sample(post, SAMPLER, jnp.zeros(2), seed=1, **kw)
    assert compiles == []
    assert res.num_draws == 67


@pytest.mark.parametrize("burn_in, num_draws, thin, trailing, per_block", [
    (0, 100, 1, 0, 5), (31, 67, 4, 1, 5), (9, 1, 1, 0, 1), (3, 1, 47, 0, 1), (50, 7, 10, 6, 3)])
def test_block_plan(burn_in, num_draws, thin, trailing, per_block):
    plan = driver_plan.block_plan(burn_in, num_draws, thin, trailing, per_block)
    assert sum(n * steps for n, steps, _, _ in plan) == burn_in + num_draws * thin + trailing
    assert sum(n - min(drop, n) for n, _, _, drop in plan) == num_draws
    # Full blocks (one static-length program) have the run's shape; at most one partial
    # block of draws, and at most one block of fewer than thin steps before and after them.
    assert all((n, steps) == (per_block, thin) for n, steps, full, _ in plan if full)
    rest = [(n, steps) for n, steps, full, _ in plan if not full]
    assert sum(steps == thin for _, steps in rest) <= 1
    assert all(n == 1 and steps < thin for n, steps in rest if steps != thin)
    if thin == 1 and (burn_in + num_draws) % per_block == 0:
        assert not rest


@pytest.mark.parametrize("total, cap, expected", [
    (20000, 10**9, 1000), (2001, 10**9, 87), (10007, 10**9, 500), (20000, 300, 250),
    (19, 10**9, 1), (97, 9, 4)])
def test_default_block_size_divides_the_run_when_it_can(total, cap, expected):
    # About 1/20 of the draws, at most cap, and a divisor of the draws within a factor 2 of
    # that when there is one (10007 is prime), so that every block is full. (Draws of
    # MIN_BLOCK_STEPS steps: the floor on a block's steps is one draw.)
    thin = driver_plan.MIN_BLOCK_STEPS
    assert driver_plan.default_draws_per_block(total, cap, thin) == expected


@pytest.mark.parametrize("total, thin, cap, expected", [
    (10, 1, 10**9, 10), (2000, 1, 10**9, 250), (2000, 16, 10**9, 100), (100_000, 1, 10**9, 5000),
    (2000, 1, 64, 50)])
def test_default_blocks_hold_at_least_min_block_steps(total, thin, cap, expected):
    # A short run goes in few calls (each costs ~2 ms on a GPU): at least MIN_BLOCK_STEPS
    # = 256 steps a block (the whole run when shorter), as a divisor of the draws within a
    # factor 2 when there is one; 1/20 of the run when that is more; never above the cap.
    assert driver_plan.MIN_BLOCK_STEPS == 256
    assert driver_plan.default_draws_per_block(total, cap, thin) == expected


@pytest.mark.parametrize("backend, expected", [("cpu", 5), ("gpu", 10)])
def test_accelerator_blocks_hold_at_least_1024_steps(monkeypatch, backend, expected):
    # Ten draws of 40 steps (the CNN row of benchmarks/gpu_steps.py): on a CPU two blocks of
    # 5 draws (≥ 256 steps, a divisor of 10); on an accelerator, where a block boundary costs
    # milliseconds of device time, one block of all 400 steps (≥ 1024 steps: the whole run).
    monkeypatch.setattr(driver_plan.jax, "default_backend", lambda: backend)
    problem = sgmc.models.linear_regression(np.ones((4, 2)), np.ones(4))
    assert driver_plan.default_block_size(10, 40, 8, problem, None) == expected


def test_save_load_round_trip(post, tmp_path):
    res = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=40, num_chains=2, thin=4)
    path = tmp_path / "run.npz"
    res.save(path)
    back = sgmc.Result.load(path)
    np.testing.assert_array_equal(back.samples, res.samples)
    assert back.info.keys() == res.info.keys()
    for k in res.info:
        np.testing.assert_array_equal(back.info[k], res.info[k])
    assert back.meta == res.meta
    # Pytree samples (nested dicts and tuples) come back with the same structure.
    tree = sgmc.Result({"a": np.ones((1, 2, 3)), "b": (np.zeros((1, 2)), np.ones((1, 2)))},
                       {"grad_evals": np.zeros((1, 2), np.int64)}, {"sampler": "x"})
    tree.save(tmp_path / "tree.npz")
    again = sgmc.Result.load(tmp_path / "tree.npz")
    assert isinstance(again.samples["b"], tuple)
    np.testing.assert_array_equal(again.samples["a"], tree.samples["a"])


def test_divergence_raises_with_earlier_draws_intact(post):
    # Stable for 300 steps, then a step size far beyond 2/λ_max: the state overflows.
    jump = sgmc.schedules.from_function(lambda t: jnp.where(t < 300, 2e-4, 1.0))
    bad = sgmc.sgld(jump, batch_size=20)
    with pytest.raises(sgmc.DivergenceError) as info:
        sgmc.sample(post, bad, jnp.zeros(2), num_steps=1000, num_chains=2, thin=2, seed=9)
    err = info.value
    assert 300 < err.step < 400 and err.chain in (0, 1)
    kept = err.result
    assert kept.num_draws == (err.step - 1) // 2
    assert np.all(np.isfinite(kept.samples))
    # The draws before the divergence are exactly those of a run that stops earlier.
    good = sgmc.sample(post, bad, jnp.zeros(2), num_steps=300, num_chains=2, thin=2, seed=9)
    np.testing.assert_array_equal(kept.samples[:, :150], good.samples)


def test_divergence_is_found_at_the_draw_after_it_for_any_block_size(post):
    # Finiteness is checked after every draw, not per step: the step reported ends the
    # draw interval in which the state overflowed (draws end at burn_in mod thin + a
    # multiple of thin: the burn-in's leftover steps run first), and the error is the
    # same whatever the blocks (one draw per block, the default).
    burn_in = 12
    jump = sgmc.schedules.from_function(lambda t: jnp.where(t < 300, 2e-4, 1.0))
    errs = []
    for per_block in (1, None):
        with pytest.raises(sgmc.DivergenceError) as info:
            sgmc.sample(post, sgmc.sgld(jump, batch_size=20), jnp.zeros(2), num_steps=1000,
                        burn_in=burn_in, thin=7, seed=9, draws_per_block=per_block)
        errs.append(info.value)
    assert len({e.step for e in errs}) == 1
    step = errs[0].step
    assert 300 < step < 400 and (step - burn_in % 7) % 7 == 0
    for e in errs[1:]:
        np.testing.assert_array_equal(e.result.samples, errs[0].result.samples)


def test_to_arviz_and_summary(post):
    pytest.importorskip("arviz")
    res = sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=200, num_chains=2, thin=2)
    idata = res.to_arviz()
    assert idata.posterior["theta"].shape == (2, 100, 2)
    assert idata.sample_stats["grad_evals"].shape == (2, 100)
    assert {"mean", "sd", "ess_bulk", "r_hat"} <= set(res.summary().columns)


def test_progress_bar_updates_per_block(post, capsys):
    pytest.importorskip("tqdm")
    sgmc.sample(post, SAMPLER, jnp.zeros(2), num_steps=100, progress=True, draws_per_block=25)
    err = capsys.readouterr().err
    assert "100/100" in err and "sgld" in err


@pytest.mark.parametrize("kernel, kw", [
    ("sgld", dict(num_steps=100, thin=1)),
    # A burn-in that is not a multiple of thin and leftover steps: partial blocks (looped
    # programs) next to the unrolled full blocks.
    ("sghmc", dict(num_steps=203, burn_in=13, thin=3, num_chains=2)),
    ("sghmc", dict(num_steps=64, thin=4, num_chains=2, predict=jnp.tanh)),
])
def test_unrolled_blocks_give_the_same_draws(post, compiles, kernel, kw):
    """sample(unroll=True) compiles its full blocks without loops (for XLA:CPU's slow
    convolution gradients in loops): the same run as the looped program up to float
    rounding — XLA may fuse the longer program's arithmetic differently, a last-bit
    difference per step (measured ≤ 2.4e-7 here), where a wrong key, minibatch or step would
    differ by O(√h) = O(1e-2) — and bitwise reproducible itself."""
    smp = {"sgld": SAMPLER,
           "sghmc": sgmc.sghmc(1e-3, friction=5.0, batch_size=20, integrator="splitting")}[kernel]
    looped = sgmc.sample(post, smp, jnp.zeros(2), seed=4, **kw)
    compiles.clear()
    unrolled = sgmc.sample(post, smp, jnp.zeros(2), seed=4, unroll=True, **kw)
    assert compiles  # a different program ran
    assert unrolled.meta["draws_per_block"] * kw["thin"] <= api.MAX_UNROLLED_STEPS
    np.testing.assert_allclose(unrolled.samples, looped.samples, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(unrolled.info["grad_evals"], looped.info["grad_evals"])
    # The drift statistics of the kept draws: the same minibatch energies.
    for name in ("energy", "log_prior", "loglik"):
        np.testing.assert_allclose(unrolled.info[name], looped.info[name], rtol=1e-4)
    if "predict" in kw:
        np.testing.assert_allclose(unrolled.predictive["mean"], looped.predictive["mean"],
                                   rtol=0, atol=1e-5)
    again = sgmc.sample(post, smp, jnp.zeros(2), seed=4, unroll=True, **kw)
    np.testing.assert_array_equal(again.samples, unrolled.samples)


def test_unroll_is_validated(post):
    with pytest.raises(ValueError, match="thin must be ≤ 32"):
        sgmc.sample(post, SAMPLER, jnp.zeros(2), 100, thin=33, unroll=True)
    with pytest.raises(TypeError, match="unroll must be True, False or None"):
        sgmc.sample(post, SAMPLER, jnp.zeros(2), 100, unroll="yes")


def test_unroll_by_default_for_convolutions_on_the_cpu(post):
    """unroll=None: unrolled on a CPU when the model convolves (and thin allows it)."""
    signal = np.random.default_rng(0).normal(size=(40, 16)).astype(np.float32)

    def loglik(w, x):  # a 1-d convolution of one signal with a 3-tap filter
        out = jax.lax.conv_general_dilated(x[None, None], w[None, None], (1,), "SAME")
        return -0.5 * jnp.sum(out**2)

    conv = sgmc.Posterior(loglik, lambda w: -0.5 * jnp.sum(w**2), signal)
    on_cpu = jax.default_backend() == "cpu"
    res = sgmc.sample(conv, SAMPLER, jnp.zeros(3), 20, thin=2)
    assert res.meta.get("unroll", False) == on_cpu
    assert "unroll" not in sgmc.sample(conv, SAMPLER, jnp.zeros(3), 40, thin=40).meta
    assert "unroll" not in sgmc.sample(conv, SAMPLER, jnp.zeros(3), 20, unroll=False).meta
    assert "unroll" not in sgmc.sample(post, SAMPLER, jnp.zeros(2), 20).meta  # no convolution
