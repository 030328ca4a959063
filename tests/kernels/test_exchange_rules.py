"""Exchange rules as pluggable pieces (:mod:`sgmc.kernels.coupling.rules`).

- A rule written here in a few lines (swap every pair at every attempt) runs in
  ``replica_exchange`` under ``sgmc.sample`` and ``sgmc.minimize`` with the documented effect:
  the coupling applies its permutation to the positions and labels, counts its swaps, and
  attempts it every ``swap_every`` steps; a rule without ``uses_energy`` spends no swap-energy
  evaluations.
- The Metropolis rule is called directly through its API (``attempt`` with an
  ``ExchangeContext``) on a case whose acceptance probability is known in closed form, and its
  even–odd pair schedule is checked.
- The factory accepts any object of the contract, rejects others with a TypeError, and keeps
  the Metropolis shortcuts (``correction``, ``schedule``).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.kernels.coupling import (
    Exchange,
    ExchangeContext,
    ExchangeRule,
    MetropolisRule,
    Rule,
    metropolis_rule,
    pair_permutation,
)
from sgmc.pytree import pytree_dataclass
from sgmc.run.optimize import Method


@pytree_dataclass
class AlwaysSwap(Rule):
    """Swap every adjacent pair at every attempt (a rule in five lines)."""

    def attempt(self, problem, position, key, ctx):
        every = jnp.ones(ctx.temperature.shape[0] - 1, bool)
        return Exchange(pair_permutation(every), every, every, jnp.int32(0))


@pytest.fixture(scope="module")
def post():
    x = jnp.linspace(-1.0, 1.0, 20)
    return sgmc.Posterior(loglik=lambda th, d: -0.5 * jnp.sum((d - th) ** 2),
                          logprior=lambda th: -0.5 * jnp.sum(th ** 2), data=x)


def test_a_custom_rule_implements_the_contract():
    assert isinstance(AlwaysSwap(), ExchangeRule)
    assert isinstance(metropolis_rule(), ExchangeRule)
    assert isinstance(sgmc.kernels.coupling.greedy_rule(), ExchangeRule)


def test_custom_rule_in_sample(post):
    """Two replicas swapped at every step: the labels alternate, every attempt is a swap, and
    only the dynamics spend evaluations (no swap energies for a rule without uses_energy)."""
    b, steps = 5, 12
    rx = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=b), [1.0, 2.0], rule=AlwaysSwap(),
                               output="all")
    assert rx.name == "resgld" and rx.rule == AlwaysSwap()
    res = sgmc.sample(post, rx, jnp.array([0.3]), num_steps=steps, num_chains=2, seed=0,
                      progress=False)
    labels = res.info["replica_labels"]                       # (chains, draws, K)
    expect = np.array([[1, 0] if t % 2 == 0 else [0, 1] for t in range(steps)])
    np.testing.assert_array_equal(labels, np.broadcast_to(expect, labels.shape))
    np.testing.assert_array_equal(res.info["swaps"], 1.0)
    np.testing.assert_array_equal(res.info["swap_attempts"], 1.0)
    np.testing.assert_array_equal(res.info["energy_variance"], 0.0)
    # K replicas × b per-example gradients per step, nothing else.
    assert int(res.meta["grad_evals_total"][0]) == 2 * b * steps

    # swap_every applies to any rule: an attempt every third step only.
    rx3 = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=b), [1.0, 2.0], rule=AlwaysSwap(),
                                swap_every=3)
    res3 = sgmc.sample(post, rx3, jnp.array([0.3]), num_steps=steps, seed=0, progress=False,
                       init_per_chain=False)
    every_third = (np.arange(steps) % 3 == 2).astype(np.float32)
    np.testing.assert_array_equal(res3.info["swaps"][0, :, 0], every_third)
    np.testing.assert_array_equal(res3.info["swap_attempts"][0, :, 0], every_third)


def test_custom_rule_with_three_replicas_follows_its_permutation(post):
    """K = 3, all pairs 'accepted' at once is not a disjoint set: the rule's own permutation
    is applied as returned; here a rule that cycles the slots."""

    @pytree_dataclass
    class Cycle(Rule):
        def attempt(self, problem, position, key, ctx):
            k = ctx.temperature.shape[0]
            none = jnp.zeros(k - 1, bool)
            return Exchange(jnp.roll(jnp.arange(k), -1), none, none, jnp.int32(0))

    rx = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=4), [1.0, 2.0, 4.0], rule=Cycle())
    res = sgmc.sample(post, rx, jnp.array([0.0]), num_steps=3, seed=1, progress=False,
                      init_per_chain=False)
    np.testing.assert_array_equal(res.info["replica_labels"][0],
                                  [[1, 2, 0], [2, 0, 1], [0, 1, 2]])


def test_custom_rule_in_minimize():
    """The same rule under minimize: one exchange per step and replication."""
    obj = sgmc.Objective(lambda x: jnp.sum(x ** 2))
    coupling = sgmc.replica_exchange(sgmc.sgld(0.05, None, 0.0), [0.1, 1.0], rule=AlwaysSwap())
    res = sgmc.minimize(obj, Method("always_swap", coupling), jnp.full(2, 1.0), num_steps=8,
                        num_replications=3, seed=0)
    np.testing.assert_array_equal(res.exchanges, 8)
    assert res.replicas.shape == (3, 2, 2)


def test_with_positions_sets_every_replica(post):
    rx = sgmc.replica_exchange(sgmc.sgld(1e-3, batch_size=4), [1.0, 2.0])
    state = rx.init(post, jnp.array([0.0]), jax.random.key(0))
    pos = jnp.array([[1.0], [-2.0]])
    new = rx.with_positions(state, pos)
    np.testing.assert_array_equal(new.position, pos)
    np.testing.assert_array_equal(new.labels, state.labels)
    np.testing.assert_array_equal(rx.draw(new), pos[0])


# -- the Metropolis rule through its API ------------------------------------------------------
CALLS = 40_000


def _context(post, taus, variance, positions, attempt=0):
    energy = sgmc.exact_energy()
    state = jax.vmap(lambda _: energy.init(post, positions[0]))(jnp.arange(len(taus)))
    return ExchangeContext(jnp.asarray(taus, jnp.float32), jnp.int32(3), jnp.int32(attempt),
                           jnp.full(len(taus) - 1, variance, jnp.float32), energy, state, 1)


@pytest.mark.parametrize("correction", [1.0, 4.0])
def test_metropolis_acceptance_is_the_corrected_swap_rate(post, correction):
    """P(swap) = min(1, exp(a (U₁ − U₂) − a² σ̂² / (2F))), a = 1/τ₁ − 1/τ₂, exact energies."""
    rule = metropolis_rule(correction=correction)
    taus, variance = (2.0, 5.0), 3.0
    pos = jnp.array([[0.5], [0.6]])
    ctx = _context(post, taus, variance, pos)
    u1, u2 = (float(post.full_energy(p)) for p in pos)
    a = 1 / taus[0] - 1 / taus[1]
    p = min(1.0, math.exp(a * (u1 - u2) - a * a * variance / (2 * correction)))
    assert 0.05 < p < 0.95

    def one(key):
        ex = rule.attempt(post, pos, key, ctx)
        return ex.accepted[0], ex.attempted[0], ex.perm, ex.evals

    acc, att, perm, evals = jax.jit(jax.vmap(one))(jax.random.split(jax.random.key(2), CALLS))
    assert bool(jnp.all(att))
    rate, se = float(jnp.mean(acc)), math.sqrt(p * (1 - p) / CALLS)
    assert abs(rate - p) < 5 * se, (rate, p, se)
    # An accepted swap exchanges the two slots, a rejected one leaves them.
    np.testing.assert_array_equal(perm, np.where(np.asarray(acc)[:, None], [1, 0], [0, 1]))
    assert int(evals[0]) > 0


def test_metropolis_even_odd_pairs_and_certain_swaps(post):
    """Four replicas, every swap certain (the hotter replica of each pair sits lower, σ̂² = 0):
    the j-th attempt swaps exactly the pairs k ≡ j (mod 2)."""
    rule = metropolis_rule()
    pos = jnp.array([[3.0], [2.0], [1.0], [0.0]])          # U decreasing up the ladder
    for attempt, pairs in ((0, [True, False, True]), (1, [False, True, False])):
        ctx = _context(post, (1.0, 2.0, 4.0, 8.0), 0.0, pos, attempt)
        ex = rule.attempt(post, pos, jax.random.key(0), ctx)
        np.testing.assert_array_equal(ex.attempted, pairs)
        np.testing.assert_array_equal(ex.accepted, pairs)
        np.testing.assert_array_equal(ex.perm, pair_permutation(jnp.asarray(pairs)))
    np.testing.assert_array_equal(pair_permutation(jnp.array([True, False, True])),
                                  [1, 0, 3, 2])


# -- the factory ------------------------------------------------------------------------------
def test_factory_accepts_rules_and_keeps_the_metropolis_shortcuts():
    base = sgmc.sgld(1e-3, batch_size=4)
    short = sgmc.replica_exchange(base, [1.0, 2.0], correction=2.0, schedule="stochastic")
    assert isinstance(short.rule, MetropolisRule)
    assert float(short.correction(0)) == 2.0 and short.schedule == "stochastic"
    full = sgmc.replica_exchange(base, [1.0, 2.0],
                                 rule=metropolis_rule(correction=2.0, schedule="stochastic"))
    assert full.rule == short.rule and full.name == short.name == "resgld"
    with pytest.raises(ValueError, match="metropolis_rule"):
        sgmc.replica_exchange(base, [1.0, 2.0], rule=metropolis_rule(), correction=2.0)
    with pytest.raises(TypeError, match="rule"):
        sgmc.replica_exchange(base, [1.0, 2.0], rule=object())
    with pytest.raises(TypeError, match="sampler"):
        sgmc.replica_exchange(object(), [1.0, 2.0])
    with pytest.raises(ValueError, match="increasing"):
        sgmc.replica_exchange(base, [2.0, 1.0], rule=AlwaysSwap())
