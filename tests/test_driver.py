"""The driver: determinism, chains, thinning and burn-in, blocks, caching, save/load, errors."""

import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc import driver


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


def test_second_call_with_new_numbers_does_not_recompile(post):
    sgmc.sample(post, sgmc.sghmc(1e-3, friction=5.0, batch_size=20), jnp.zeros(2), 50)
    before = driver._run_block._cache_size()
    res = sgmc.sample(post, sgmc.sghmc(2e-3, friction=7.0, batch_size=20, temperature=0.5),
                      jnp.ones(2), 50, seed=3)
    assert driver._run_block._cache_size() == before
    assert res.num_draws == 50


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
