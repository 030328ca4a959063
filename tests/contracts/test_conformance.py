"""Conformance: every estimator × integrator × coupling against the written contracts.

In the style of Optax's ``transform_test.py::test_scalers``: one parameterised test over the
product of three lists, so a new piece is tested by adding one line to :data:`ESTIMATORS`,
:data:`INTEGRATORS` or :data:`COUPLINGS`. For each combination, on a small linear-regression
posterior (N = 40, d = 3, minibatch 4), :func:`test_contract` checks

1. the protocols: the kernel is a :class:`sgmc.contracts.kernel.Kernel`, its estimator a
   :class:`~sgmc.contracts.estimator.GradientEstimator`, its dynamics an
   :class:`~sgmc.contracts.integrator.Integrator` (a greedy rule an
   :class:`~sgmc.kernels.coupling.rules.ExchangeRule`), ``check``/``meta``/``init_evals`` answer;
2. ``jax.jit`` of ``init`` then ``step`` (:data:`T` steps, so periodic work at t = 0 and
   t = 3 and the plain steps between are all run): the state's structure, shapes and dtypes
   are preserved by a step, ``draw`` gives a point shaped like the position, and the
   positions are finite;
3. ``vmap`` over 3 chains gives, chain by chain, what one chain at a time gives (init and
   steps; allclose in float32);
4. info keys == ``info_spec`` keys, ``grad_evals`` is an integer ≥ 1 and equals the count
   the docstrings state, step by step (and ``init_evals`` too);
5. determinism: the same keys give bitwise the same states and infos;
6. randomness drawn ahead (:mod:`sgmc.rng`): ``replay(record(step))`` is the live step
   (allclose), and the recorded draws do not depend on the state (bitwise).

Invariants, per integrator: at temperature 0, with the exact gradient (``batch_size=None``)
at the posterior mode (closed form, :func:`sgmc.models.linear_regression_posterior`), a
step does not move the position (SGHMC from zero momentum, which stays zero); and with a
constant energy the SGLD increment has variance 2hτ per coordinate.

Combinations the library itself rejects are skipped only after checking that it does reject
them (EWSG has no temperature-0 form, so it cannot be the greedy rule's τ = 0 replica).

Mutation check, done by hand once when this file was written (each mutation a ``pytest -p``
plugin monkeypatching one piece, the library untouched): adding 1e-3 to the position in
``Langevin.step`` failed ``test_position_does_not_move_at_the_mode[sgld]``; reporting
``SVRG.estimate``'s cost as 2n without the snapshot's N failed the ``svrg`` cases' documented
``grad_evals``; drawing the Langevin noise with bounds that depend on the position failed
"the draws depend on the state" (and the variance test); negating the replayed
``normal_like`` draws failed the vmap/replay comparison. The unmutated file passed each
time.
"""

from __future__ import annotations

from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import sgmc
from sgmc.contracts.estimator import GradientEstimator
from sgmc.contracts.integrator import Integrator, StepParams
from sgmc.contracts.kernel import REDUCTIONS, Kernel, check_info
from sgmc.kernels.coupling.rules import ExchangeRule
from sgmc.kernels.sampler import sgnht
from sgmc.rng import Rng, record, replay
from sgmc.run import cache

N, D, B = 40, 3, 4          # data, dimension, minibatch
H, FR = 1e-3, 10.0          # step size, friction (FR · H < 1 for the Euler integrators)
CHAINS = 3
T = 4                       # steps per chain: t = 0 … 3 (the period-3 work runs at 0 and 3)
K = 2                       # replicas of every coupling
REPLICATES = 10             # replica_exchange's default num_replicates

# --------------------------------------------------------------------------------------
# The lists. An estimator entry: (factory, per-replica gradient evaluations of step t,
# evaluations spent by init). Counts as the docstrings state them.
# --------------------------------------------------------------------------------------

ESTIMATORS = {
    "uniform": (lambda: sgmc.uniform(), lambda t: B, 0),
    "uniform-permutation": (lambda: sgmc.uniform("permutation"), lambda t: B, 0),
    # 2 per-example gradients per datum, plus a full pass (N) at every snapshot.
    "svrg": (lambda: sgmc.svrg(period=3), lambda t: 2 * B + N * (t % 3 == 0), 0),
    # n per step; the table is filled by init (N).
    "saga": (lambda: sgmc.saga(), lambda t: B, N),
    # (M + 1) per-example gradients per slot per step.
    "ewsg-m2": (lambda: sgmc.ewsg(chain_length=2), lambda t: 3 * B, 0),
    # SVRG-corrected terms: 2 per term, (M + 1 = 2) terms per slot, N per snapshot.
    "ewsg-svrg": (lambda: sgmc.ewsg(svrg_period=3), lambda t: 4 * B + N * (t % 3 == 0), 0),
    # An SVRG whose anchor never moves: its one full pass is at t = 0.
    "control-variate": (lambda: sgmc.control_variate(jnp.full(D, 0.1)),
                        lambda t: 2 * B + N * (t == 0), 0),
}


def _sgld(**kw):
    kw.pop("init_momentum", None)
    return sgmc.sgld(H, **kw)


def _psgld(**kw):
    kw.pop("init_momentum", None)
    return sgmc.psgld(H, **kw)


def _sghmc(integrator):
    return lambda **kw: sgmc.sghmc(H, friction=FR, integrator=integrator, **kw)


def _sgnht(**kw):
    return sgnht(H, diffusion=FR, **kw)


#: A factory taking sgld's keywords (batch_size, temperature, estimator) and
#: ``init_momentum`` (ignored without a momentum).
INTEGRATORS = {
    "sgld": _sgld,
    "sghmc-euler": _sghmc("euler"),
    "sghmc-explicit": _sghmc("explicit"),
    "sghmc-splitting": _sghmc("splitting"),
    "psgld": _psgld,
    "sgnht": _sgnht,
    "sgnht-diagonal": lambda **kw: _sgnht(thermostat="diagonal", **kw),
}

#: (factory of a kernel from a sampler, temperatures (None: the sampler's own),
#:  extra evaluations of step t beyond the replicas' dynamics, extra init evaluations).
COUPLINGS = {
    "none": SimpleNamespace(make=lambda s: s, temps=None,
                            extra=lambda t: 0, init_extra=0),
    # σ̂² from REPLICATES minibatches of K energies every step (variance_period 1); the swap
    # test (K energies on one minibatch) from the second measurement on (t ≥ 1).
    "re-minibatch": SimpleNamespace(
        make=lambda s: sgmc.replica_exchange(s, [1.0, 2.0], energy=sgmc.minibatch_energy()),
        temps=(1.0, 2.0), extra=lambda t: REPLICATES * K * B + K * B * (t >= 1),
        init_extra=0),
    # Anchors refreshed every 3 steps (a full pass per replica); every step a swap test
    # (2 evaluations per datum per replica) and the per-age σ̃² (2Kn, the test's own cost).
    "re-cv": SimpleNamespace(
        make=lambda s: sgmc.replica_exchange(s, [1.0, 2.0], energy=sgmc.cv_energy(period=3)),
        temps=(1.0, 2.0), extra=lambda t: 4 * K * B + K * N * (t % 3 == 0),
        init_extra=K * N),
    # Cyclical SG-MCMC: cycles of 2 steps, the first of each exploring at τ = 0; the base
    # sampler's cost, except EWSG's, which explores with the plain minibatch gradient (B).
    "cyclical": SimpleNamespace(make=lambda s: sgmc.cyclical(s, 2, num_steps=T), temps=None,
                                extra=lambda t: 0, init_extra=0,
                                exploring=lambda t: t % 2 == 0),
    # GD×LD: X at τ = 0, Y at τ = 1; the exact objective of both replicas every step.
    "greedy": SimpleNamespace(
        make=lambda s: sgmc.replica_exchange(s, [0.0, 1.0],
                                             rule=sgmc.kernels.coupling.greedy_rule()),
        temps=(0.0, 1.0), extra=lambda t: K * N, init_extra=0),
}


# --------------------------------------------------------------------------------------
# Problem and helpers
# --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def post():
    X, y, _ = sgmc.models.synthetic_linear_data(N, D, seed=0)
    return sgmc.models.linear_regression(X, y)


def _positions():
    return 0.3 * jax.random.normal(jax.random.key(0), (CHAINS, D))


def _build(est_name, int_name, cpl_name):
    """The kernel of a combination, or a skip if the library (checked) rejects it."""
    estimator = ESTIMATORS[est_name][0]()
    coupling = COUPLINGS[cpl_name]
    if estimator.needs_kick and int_name == "psgld":
        with pytest.raises(ValueError, match="kick"):
            INTEGRATORS[int_name](batch_size=B, temperature=1.0, estimator=estimator)
        pytest.skip(f"the library rejects {est_name} with pSGLD (no kick to weigh)")
    rejected = estimator.needs_temperature and coupling.temps is not None and \
        min(coupling.temps) == 0.0
    sampler = INTEGRATORS[int_name](batch_size=B, temperature=1.0, estimator=estimator)
    if rejected:
        with pytest.raises(ValueError, match="temperature"):
            coupling.make(sampler)
        pytest.skip(f"the library rejects {est_name} at temperature 0 (needs τ > 0)")
    return coupling.make(sampler)


def _run(problem, kernel, state, key, replayed):
    """T steps of one chain from ``state`` (live, or each step replayed from its record)."""
    def body(state, t):
        k = jax.random.fold_in(key, t)

        def step(rng):
            return kernel.step(problem, state, rng, t)

        return replay(step, record(step, k)) if replayed else step(Rng(k))

    return jax.lax.scan(body, state, jnp.arange(T, dtype=jnp.int32))


def _probe(problem, kernel, positions, init_keys, step_keys):
    """Everything the contract test compares, in ONE program per combination (XLA:CPU
    compile time is nearly all of this file's runtime, and grows with each copy of the
    step in the program, so the copies are few):

    * ``init``/``live``: init and T live steps of every chain under ``vmap``;
    * ``init_one``/``one``: the same chains one at a time (``lax.map``), each step
      *replayed* from its record — so ``one == live`` checks (3) vmap == one chain at a
      time and (6) replay(record) == live together (a failure names both);
    * ``draws``: the draws of step 1 recorded at the initial and at the moved states.
    """
    def init(p, k):
        return kernel.init(problem, p, k)

    s0 = jax.vmap(init)(positions, init_keys)
    live = jax.vmap(lambda s, k: _run(problem, kernel, s, k, False))(s0, step_keys)

    def one(args):
        p, ik, sk = args
        s = init(p, ik)
        return s, _run(problem, kernel, s, sk, True)

    s0_one, replayed = jax.lax.map(one, (positions, init_keys, step_keys))
    both = jax.tree.map(lambda a, b: jnp.stack([a, b]), s0, live[0])
    draws = jax.vmap(lambda states: jax.vmap(
        lambda s, k: record(lambda r: kernel.step(problem, s, r, 1), k))(states, step_keys))(
        both)
    return {"init": s0, "init_one": s0_one, "live": live, "one": replayed,
            "draw": jax.vmap(kernel.draw)(live[0]), "draws": draws}


#: Compiled with LLVM's optimisation off: the programs run for microseconds, and this halves
#: their compile time (measured: 3.8 s → 1.8 s for SGLD, 12 s → 6 s for a replica exchange).
COMPILER_OPTIONS = {"xla_backend_optimization_level": 0}


def _leaves(tree):
    """Leaves as NumPy arrays (typed PRNG keys as their raw data)."""
    out = []
    for x in jax.tree.leaves(tree):
        if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
            x = jax.random.key_data(x)
        out.append(np.asarray(x))
    return out


def _close(a, b, what, exact=False):
    assert jax.tree.structure(a) == jax.tree.structure(b), what
    for x, y in zip(_leaves(a), _leaves(b), strict=True):
        assert x.shape == y.shape and x.dtype == y.dtype, what
        if exact or not np.issubdtype(x.dtype, np.floating):
            np.testing.assert_array_equal(x, y, err_msg=what)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6, err_msg=what)


def _shapes(tree):
    return [(x.shape, x.dtype) for x in jax.tree.leaves(tree)]


def _combinations():
    """The whole product, parameterised. XLA:CPU compiles one program per combination in
    2–10 s (nearly all of this file's runtime), so by default a covering subset runs: with
    the c-th coupling, estimator e pairs with integrator (e + c) mod 7 — every estimator
    and every integrator under every coupling, and 35 of the 49 estimator × integrator
    pairs — and the rest of the product is marked ``slow`` (``make test-slow`` runs all)."""
    out = []
    for c, cpl in enumerate(COUPLINGS):
        for i, integ in enumerate(INTEGRATORS):
            for e, est in enumerate(ESTIMATORS):
                fast = i == (e + c) % len(INTEGRATORS)
                out.append(pytest.param(est, integ, cpl, id=f"{est}-{integ}-{cpl}",
                                        marks=() if fast else pytest.mark.slow))
    return out


COMBINATIONS = _combinations()


# --------------------------------------------------------------------------------------
# The contract, for every combination
# --------------------------------------------------------------------------------------

_COMPILED = [0]


@pytest.fixture
def _few_programs():
    """Drop JAX's compiled programs every 16 combinations: each combination's program is
    compiled once and never reused, and a module that keeps a hundred of them mapped
    crashed XLA:CPU inside a compile (SIGSEGV; see tests/conftest.py, memory maps)."""
    _COMPILED[0] += 1
    if _COMPILED[0] % 16 == 0:
        jax.clear_caches()
        cache.clear()  # (sgmc's compiled block programs)


@pytest.mark.usefixtures("_few_programs")
@pytest.mark.parametrize(("est_name", "int_name", "cpl_name"), COMBINATIONS)
def test_contract(post, est_name, int_name, cpl_name):
    kernel = _build(est_name, int_name, cpl_name)
    coupling = COUPLINGS[cpl_name]
    sampler = getattr(kernel, "sampler", kernel)  # a coupling's base, or the kernel itself
    positions = _positions()

    # (1) protocols and the static members of the kernel contract.
    assert isinstance(kernel, Kernel)
    assert isinstance(sampler.estimator, GradientEstimator)
    assert isinstance(sampler.dynamics, Integrator)
    if getattr(kernel, "rule", None) is not None:
        assert isinstance(kernel.rule, ExchangeRule)
    assert isinstance(kernel.name, str) and kernel.name
    assert kernel.batch_size == B
    assert kernel.num_replicas == (1 if coupling.temps is None else K)
    assert isinstance(kernel.replica_stacked, tuple)
    assert set(kernel.info_spec.values()) <= set(REDUCTIONS)
    assert kernel.info_spec["grad_evals"] == "total"
    assert isinstance(kernel.meta(), dict)
    kernel.check(post, positions[0], CHAINS)          # a valid setup passes its own check
    n_replicas = kernel.num_replicas
    init_evals = kernel.init_evals(post)
    assert isinstance(init_evals, int)
    assert init_evals == n_replicas * ESTIMATORS[est_name][2] + coupling.init_extra

    # (2) jit of init then step (T steps), once per combination. The scan over steps
    # requires a step to return a state of the same structure, shapes and dtypes (else it
    # raises); the outputs are checked again below.
    init_keys = jax.random.split(jax.random.key(1), CHAINS)
    step_keys = jax.random.split(jax.random.key(2), CHAINS)
    args = (post, kernel, positions, init_keys, step_keys)
    probe = jax.jit(_probe).lower(*args).compile(compiler_options=COMPILER_OPTIONS)
    out = probe(*args)
    final, infos = out["live"]
    assert jax.tree.structure(final) == jax.tree.structure(out["init"])
    assert _shapes(final) == _shapes(out["init"]), "a step changed the state's shapes"
    for x in jax.tree.leaves(final.position):
        assert np.all(np.isfinite(np.asarray(x))), "non-finite position"
    assert _shapes(out["draw"]) == _shapes(positions), "draw is not shaped like the position"

    # (3) + (6) vmap == one chain at a time, and replay(record(step)) == the live step.
    _close(out["init"], out["init_one"], "vmap-ed init differs from one chain at a time")
    _close(out["live"], out["one"], "vmap-ed live steps differ from the same chains stepped "
           "one at a time from their recorded draws (vmap or record/replay is broken)")

    # (4) info keys and the counted cost.
    check_info(kernel, infos)
    assert set(infos) == set(kernel.info_spec)
    evals = np.asarray(infos["grad_evals"])
    assert np.issubdtype(evals.dtype, np.integer), evals.dtype
    assert evals.shape == (CHAINS, T)
    assert np.all(evals >= 1)
    per_step = ESTIMATORS[est_name][1]
    if est_name.startswith("ewsg") and hasattr(coupling, "exploring"):
        ewsg_cost = per_step
        per_step = lambda t: B if coupling.exploring(t) else ewsg_cost(t)
    expected = [n_replicas * int(per_step(t)) + int(coupling.extra(t)) for t in range(T)]
    np.testing.assert_array_equal(evals, np.tile(expected, (CHAINS, 1)),
                                  err_msg="grad_evals differs from the documented count")

    # (5) determinism: the same keys give bitwise the same result.
    _close(out, probe(*args), "same keys, different result", exact=True)

    # (6) the recorded draws do not read the state (sgmc.rng); rules 1–2 (no draws inside
    # branches or loops, vmap-ed draws through map_split) would fail the record above with
    # a leaked tracer.
    assert jax.tree.leaves(out["draws"]), "every kernel here draws something"
    at_init = jax.tree.map(lambda x: x[0], out["draws"])
    moved = jax.tree.map(lambda x: x[1], out["draws"])
    _close(at_init, moved, "the draws depend on the state", exact=True)


# --------------------------------------------------------------------------------------
# Invariants
# --------------------------------------------------------------------------------------

def _exact_mode_problem():
    """Linear regression whose posterior mode, and the float32 gradient there, are exact:
    features in {0, ±1} on disjoint row sets (XᵀX = diag(15, 15, 7), so the precision
    diag(16, 16, 8) with unit noise and prior is a power of two) and dyadic targets, so
    every product and sum in ∇U at the mode is exact in float32 and ∇U = 0 exactly —
    a step that moves at all there is wrong, with no rounding tolerance to hide in."""
    X = np.zeros((N, D))
    sign = np.where(np.arange(N) % 2 == 0, 1.0, -1.0)
    for j, rows in enumerate([range(0, 15), range(15, 30), range(30, 37)]):
        X[list(rows), j] = sign[list(rows)]
    y = ((np.arange(N) * 5) % 7 - 3) / 4.0
    mean, _ = sgmc.models.linear_regression_posterior(X, y)
    return sgmc.models.linear_regression(X, y), jnp.asarray(mean, jnp.float32)


@pytest.mark.parametrize("int_name", list(INTEGRATORS))
def test_position_does_not_move_at_the_mode(int_name):
    problem, mode = _exact_mode_problem()
    assert np.all(np.asarray(problem.full_grad(mode)) == 0.0), "test design: ∇U(mode) ≠ 0"
    assert np.any(np.asarray(mode) != 0.0)
    kernel = INTEGRATORS[int_name](batch_size=None, temperature=0.0, init_momentum="zero")

    @jax.jit
    def one_step(key):
        state = kernel.init(problem, mode, jax.random.key(3))
        return kernel.step(problem, state, Rng(key), 0)

    for seed in range(3):
        state, info = one_step(jax.random.key(seed))
        np.testing.assert_array_equal(np.asarray(state.position), np.asarray(mode))
        if hasattr(state.dyn, "momentum"):
            np.testing.assert_array_equal(np.asarray(state.dyn.momentum), 0.0)
        assert int(info["grad_evals"]) == N      # the full data: N per step


def test_sgld_increment_variance():
    """Zero gradient (constant energy) at temperature τ: θ_{k+1} − θ_k = √(2hτ) ξ.

    Over n = keys × d i.i.d. increments, (n − 1) s²/σ² ~ χ²_{n−1}, whose relative spread is
    √(2/(n − 1)) ≈ 0.78 % at n = 4096 · 8; a tolerance of 5 of those (3.9 %) fails a wrong
    noise scale (√(hτ), say: −50 %) and passes a correct one except with probability
    ~6e−7. The mean is checked to 5 standard errors likewise.
    """
    h, tau, dim, keys = 0.01, 0.5, 8, 4096
    problem = sgmc.Objective(lambda th: jnp.float32(2.0) + 0.0 * jnp.sum(th))
    kernel = sgmc.sgld(h, temperature=tau)
    x0 = jnp.linspace(-1.0, 1.0, dim)

    @jax.jit
    def increments(ks):
        def one(k):
            state = kernel.init(problem, x0, jax.random.key(0))
            return kernel.step(problem, state, Rng(k), 0)[0].position - x0
        return jax.vmap(one)(ks)

    inc = np.asarray(increments(jax.random.split(jax.random.key(7), keys)), np.float64)
    n, var = inc.size, 2 * h * tau
    rel = np.sqrt(2.0 / (n - 1))
    assert abs(inc.var(ddof=1) / var - 1.0) < 5 * rel, (inc.var(ddof=1), var)
    assert abs(inc.mean()) < 5 * np.sqrt(var / n)


def test_step_params_and_rules_are_exported():
    """The contracts' own types are importable where the docs say (kernel, dynamics, rule)."""
    assert StepParams._fields == ("step_size", "temperature", "t")
    assert isinstance(sgmc.kernels.coupling.greedy_rule(), ExchangeRule)
