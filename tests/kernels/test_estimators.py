"""Minibatch drawing and the uniform estimator."""

import jax
import jax.numpy as jnp
import numpy as np

import sgmc
from sgmc.kernels.estimators import Batcher


def _draws(batcher, n, steps, seed=0):
    state = batcher.init(n, jax.random.key(seed))
    out = []
    draw = jax.jit(batcher.draw, static_argnums=2)
    for t in range(steps):
        idx, state = draw(state, jax.random.fold_in(jax.random.key(seed + 1), t), n)
        out.append(np.asarray(idx))
    return np.stack(out)


def test_permutation_covers_every_datum_once_per_epoch():
    idx = _draws(Batcher(4, "permutation"), 12, 9)  # 3 epochs of 3 batches
    for epoch in idx.reshape(3, 12):
        assert sorted(epoch) == list(range(12))
    assert not np.array_equal(idx[:3].ravel(), idx[3:6].ravel())  # reshuffled each epoch


def test_permutation_with_a_ragged_last_batch_reshuffles():
    idx = _draws(Batcher(5, "permutation"), 12, 4)  # 12 = 2×5 + 2: the 2 left are skipped
    assert len(set(idx[:2].ravel())) == 10
    assert len(set(idx[2:4].ravel())) == 10


def test_permutation_orders_are_uniform():
    """Over 4,000 epochs of N = 6 in batches of 2, the ordered pair that opens an epoch is
    uniform over the 30 possibilities (chi-square, 29 degrees of freedom: the 0.999 quantile
    is 58.3), and a large N is covered exactly once per epoch."""
    idx = _draws(Batcher(2, "permutation"), 6, 3 * 4000)
    first = idx[::3]
    counts = np.bincount(first[:, 0] * 6 + first[:, 1], minlength=36)
    assert np.all(counts[[0, 7, 14, 21, 28, 35]] == 0)  # never the same datum twice
    expected = len(first) / 30
    chi2 = np.sum((counts[counts > 0] - expected) ** 2 / expected)
    assert chi2 < 58.3
    big = _draws(Batcher(1000, "permutation"), 100_003, 100)
    assert len(np.unique(big)) == 100_000


def test_replacement_is_uniform():
    idx = _draws(Batcher(50, "replacement"), 10, 200).ravel()  # 10,000 draws over 10 values
    counts = np.bincount(idx, minlength=10)
    # Chi-square with 9 degrees of freedom: the 0.999 quantile is 27.9.
    chi2 = np.sum((counts - 1000) ** 2 / 1000)
    assert chi2 < 27.9


def test_full_batch_draws_nothing_and_counts_n():
    X, y, _ = sgmc.models.synthetic_linear_data(30, 2, seed=0)
    post = sgmc.models.linear_regression(X, y)
    res = sgmc.sample(post, sgmc.sgld(1e-3), jnp.zeros(2), num_steps=4)
    np.testing.assert_array_equal(res.info["grad_evals"][0], [30, 60, 90, 120])


def test_permutation_sampling_in_a_run():
    X, y, _ = sgmc.models.synthetic_linear_data(40, 2, seed=0)
    post = sgmc.models.linear_regression(X, y)
    sampler = sgmc.sgld(1e-3, batch_size=8, estimator=sgmc.uniform(sampling="permutation"))
    res = sgmc.sample(post, sampler, jnp.zeros(2), num_steps=20, num_chains=2)
    assert res.samples.shape == (2, 20, 2) and np.all(np.isfinite(res.samples))
    # O(1) state per chain (no stored permutation): 20 steps of 8 = 4 epochs of 5 batches.
    assert res.final_state.batch.cursor.tolist() == [40, 40]
    assert res.final_state.batch.epoch.tolist() == [3, 3]
