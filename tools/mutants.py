"""Mutation testing of the algorithm modules: ``make mutants`` (or ``python tools/mutants.py``).

Each mutant is one plausible one-line mistake in an update rule (a wrong power of τ, a
missing factor, a gradient at the wrong point, a table never written ...), applied to a fresh
copy of ``src/`` and ``tests/`` in a temporary folder; the tests that guard that module run
there (``pytest -x``: a mutant dies at the first failure). A mutant that no test kills is a
*survivor*; every survivor must be explained in ``tests/README.md`` (an equivalent mutant, or
why no test can see it). The score is killed / (killed + survivors).

Why a curated list and not mutmut or cosmic-ray: cosmic-ray generates 5,055 operator mutants
for these modules (estimators 1,386, dynamics 657, coupling 1,339, optimize.py 516,
objectives.py 1,157; ``cosmic-ray init``, measured 2026-11-23), most of them syntactic
variants of each other or of constants in error messages; each needs a fresh process that
imports JAX and compiles the programs under test (10–60 s here), so a full run would take
14–80 hours on 2 cores. The list below takes minutes and holds the mistakes that matter: each
changes what the sampler computes.

Usage::

    python tools/mutants.py              # all mutants, 2 workers
    python tools/mutants.py -k swap      # those whose id contains "swap"
    python tools/mutants.py --list       # ids and descriptions only
    python tools/mutants.py --jobs 1     # one at a time

Exit status 0 when the score is at least ``--min-score`` (default 0.95), else 1.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The fast tests that guard each area (run in this order; -x stops at the first failure).
T_DYN = ("tests/test_kernels.py", "tests/test_gaussian_posterior.py")
T_EST = ("tests/test_kernels.py", "tests/test_variance_reduced.py", "tests/test_estimators.py")
T_EWSG = ("tests/test_ewsg.py",)
T_REPLICA = ("tests/test_replica.py",)
T_OPT = ("tests/test_objectives.py", "tests/test_optimize.py")


@dataclass(frozen=True)
class Mutant:
    id: str
    path: str          # relative to src/sgmc
    old: str           # must occur exactly once in the file
    new: str
    what: str
    tests: tuple[str, ...]


M = Mutant
MUTANTS: list[Mutant] = [
    # -- dynamics: overdamped ---------------------------------------------------------------
    M("sgld-noise-no-tau", "dynamics/langevin.py", "jnp.sqrt(2.0 * h * tau)", "jnp.sqrt(2.0 * h)",
      "SGLD noise without the temperature", T_DYN),
    M("sgld-noise-no-2", "dynamics/langevin.py", "jnp.sqrt(2.0 * h * tau)", "jnp.sqrt(h * tau)",
      "SGLD noise variance hτ instead of 2hτ", T_DYN),
    M("sgld-drift-sign", "dynamics/langevin.py", "x - h * g + scale * z", "x + h * g + scale * z",
      "SGLD climbs the energy", T_DYN),
    M("sgld-drift-half", "dynamics/langevin.py", "x - h * g + scale * z",
      "x - 0.5 * h * g + scale * z", "SGLD drift halved", T_DYN),
    # -- dynamics: pSGLD ----------------------------------------------------------------------
    M("psgld-noise-no-G", "dynamics/psgld.py", "jnp.sqrt(2.0 * h * tau * G) * z",
      "jnp.sqrt(2.0 * h * tau) * z", "pSGLD noise not preconditioned", T_DYN),
    M("psgld-noise-no-tau", "dynamics/psgld.py", "jnp.sqrt(2.0 * h * tau * G) * z",
      "jnp.sqrt(2.0 * h * G) * z", "pSGLD noise without the temperature", T_DYN),
    M("psgld-rms-no-sqrt", "dynamics/psgld.py", "1.0 / (self.eps + jnp.sqrt(v))",
      "1.0 / (self.eps + v)", "pSGLD preconditioner 1/(λ + V) instead of 1/(λ + √V)", T_DYN),
    M("psgld-per-datum", "dynamics/psgld.py", "(g * per_datum) ** 2", "g ** 2",
      "pSGLD's RMS of the summed gradient instead of the per-datum mean", T_DYN),
    # -- dynamics: underdamped ----------------------------------------------------------------
    M("euler-noise-no-tau", "dynamics/underdamped.py", "jnp.sqrt(2.0 * fr * h * tau)",
      "jnp.sqrt(2.0 * fr * h)", "SGHMC noise without τ (every integrator)", T_DYN),
    M("euler-noise-no-friction", "dynamics/underdamped.py", "jnp.sqrt(2.0 * fr * h * tau)",
      "jnp.sqrt(2.0 * h * tau)", "SGHMC noise without the friction", T_DYN),
    M("euler-friction-sign", "dynamics/underdamped.py", "(1.0 - fr * h) * p - h * g",
      "(1.0 + fr * h) * p - h * g", "momentum grows instead of decaying", T_DYN),
    M("euler-gradient-sign", "dynamics/underdamped.py", "(1.0 - fr * h) * p - h * g",
      "(1.0 - fr * h) * p + h * g", "Euler kick up the gradient", T_DYN),
    M("euler-uses-old-momentum", "dynamics/underdamped.py",
      'moving = p if self.integrator == "euler" else state.momentum', "moving = state.momentum",
      "semi-implicit Euler moves with the old momentum (explicit Euler)", T_DYN),
    M("explicit-uses-new-momentum", "dynamics/underdamped.py",
      'moving = p if self.integrator == "euler" else state.momentum', "moving = p",
      "explicit Euler moves with the new momentum", T_DYN),
    M("splitting-grad-at-theta", "dynamics/underdamped.py",
      "estimator.estimate(problem, state.est, half, batch, k_est, ctx)",
      "estimator.estimate(problem, state.est, state.position, batch, k_est, ctx)",
      "splitting gradient at θ_k instead of the half step", T_DYN),
    M("splitting-decay-full", "dynamics/underdamped.py", "decay = jnp.exp(-0.5 * fr * h)",
      "decay = jnp.exp(-fr * h)", "splitting friction decay e^{−Dh} per half", T_DYN),
    M("splitting-second-half-missing", "dynamics/underdamped.py",
      "theta = tmap(lambda x, p: x + 0.5 * h * p, half, p)", "theta = half",
      "splitting omits the second position half step", T_DYN),
    M("splitting-kick-offset-sign", "dynamics/underdamped.py",
      "(1.0 / decay - decay) * p", "(decay - 1.0 / decay) * p",
      "EWSG's kick offset with the wrong sign (splitting)", T_DYN + T_EWSG),
    M("euler-kick-offset-sign", "dynamics/underdamped.py",
      "kick_offset=tmap(lambda p: h * fr * p, state.momentum)",
      "kick_offset=tmap(lambda p: -h * fr * p, state.momentum)",
      "EWSG's kick offset with the wrong sign (Euler)", T_DYN + T_EWSG),
    M("init-momentum-scale", "dynamics/underdamped.py",
      'scale = 0.0 if self.init_momentum == "zero" else jnp.sqrt(params.temperature)',
      'scale = 0.0 if self.init_momentum == "zero" else 1.0',
      "initial momentum drawn at τ = 1 whatever τ", ("tests/test_validation.py", *T_DYN)),
    # -- estimators ---------------------------------------------------------------------------
    M("batch-scale-n-minus-1", "problem.py",
      "return self.data_weight * self.num_data / batch_size",
      "return self.data_weight * self.num_data / max(batch_size - 1, 1)",
      "minibatch scale N/(n − 1) instead of N/n", T_EST),
    M("uniform-count", "estimators/uniform.py", "jnp.asarray(batch.shape[0], jnp.int32))",
      "jnp.asarray(1, jnp.int32))", "uniform estimator counts one evaluation per step",
      (*T_EST, "tests/test_gaussian_posterior.py")),
    M("svrg-sign", "estimators/svrg.py", "g0 + scale * (a - b) + w * g",
      "g0 + scale * (a + b) + w * g", "SVRG adds the anchor term", T_EST),
    M("svrg-no-full-term", "estimators/svrg.py", "g0 + scale * (a - b) + w * g",
      "g0 + scale * (a - b)", "SVRG drops the full gradient at the anchor", T_EST),
    M("svrg-never-refreshes", "estimators/svrg.py", "return t % self.period == 0",
      "return t == 0", "SVRG snapshot never refreshed after the first", T_EST),
    M("svrg-count", "estimators/svrg.py", "(2 * batch.shape[0] + n_snap)",
      "(batch.shape[0] + n_snap)", "SVRG counts one gradient per example, not two", T_EST),
    M("saga-table-never-written", "estimators/saga.py",
      "table = jax.tree.map(lambda t, v, o: t.at[batch].set(v + 0.0 * o), state.table, new,\n"
      "                             old)", "table = state.table",
      "SAGA's table never written", T_EST),
    M("saga-sum-not-updated", "estimators/saga.py",
      "table_sum = jax.tree.map(jnp.add, state.table_sum,",
      "table_sum = jax.tree.map(lambda a, b: a, state.table_sum,",
      "SAGA's running sum never updated", T_EST),
    M("saga-duplicates-counted-twice", "estimators/saga.py",
      "unique = _weighted(diff, _first_occurrence(batch))", "unique = diff",
      "SAGA's running sum adds a repeated index twice", T_EST),
    M("saga-sign", "estimators/saga.py", "g0 + scale * d + w * g", "g0 - scale * d + w * g",
      "SAGA subtracts the correction", T_EST),
    M("batcher-skips-last", "estimators/batching.py",
      "return jax.random.randint(key, (b,), 0, num_data, dtype=jnp.int32), state",
      "return jax.random.randint(key, (b,), 0, num_data - 1, dtype=jnp.int32), state",
      "uniform batches never draw the last datum", T_EST),
    M("permutation-no-new-epoch", "estimators/batching.py",
      "new_epoch = state.cursor + b > num_data", "new_epoch = state.cursor + b > 2 * num_data",
      "permutation batches run past the epoch", T_EST),
    # -- optimisation ---------------------------------------------------------------------
    M("minimize-best-keeps-worse", "optimize.py", "better = v < best_v", "better = v > best_v",
      "best-so-far keeps the worst value", T_OPT),
]


def _copy_tree(dest: str) -> None:
    for part in ("src", "tests", "pyproject.toml"):
        src = os.path.join(ROOT, part)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dest, part),
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(src, dest)


def _apply(workdir: str, m: Mutant) -> None:
    path = os.path.join(workdir, "src", "sgmc", m.path)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    count = text.count(m.old)
    if count != 1:
        raise SystemExit(f"mutant {m.id}: {m.old!r} occurs {count} times in {m.path} "
                         "(the list is out of date with the code)")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text.replace(m.old, m.new))


def _run(m: Mutant, timeout: float) -> tuple[Mutant, str, float, str]:
    """(mutant, "killed" | "survived" | "timeout", seconds, last output line)."""
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="sgmc-mutant-") as work:
        _copy_tree(work)
        _apply(work, m)
        env = dict(os.environ, PYTHONPATH=os.path.join(work, "src"), JAX_PLATFORMS="cpu",
                   PYTHONDONTWRITEBYTECODE="1")
        tests = list(dict.fromkeys(t for t in m.tests if os.path.exists(os.path.join(ROOT, t))))
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests]
        try:
            proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            return m, "timeout", time.perf_counter() - t0, ""
    last = (proc.stdout.strip().splitlines() or [""])[-1]
    status = "survived" if proc.returncode == 0 else "killed"
    if proc.returncode not in (0, 1):  # collection errors, crashes: the mutant broke import
        status = "killed"
    return m, status, time.perf_counter() - t0, last


def _check_sgmc_resolves_to_copy() -> None:
    """The mutated copy must shadow the editable install (PYTHONPATH precedes it)."""
    with tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(work, "sgmc"))
        with open(os.path.join(work, "sgmc", "__init__.py"), "w") as fh:
            fh.write("")
        out = subprocess.run([sys.executable, "-c", "import sgmc; print(sgmc.__file__)"],
                             env=dict(os.environ, PYTHONPATH=work), capture_output=True,
                             text=True, check=True).stdout
        if not out.startswith(work):
            raise SystemExit(f"PYTHONPATH does not shadow the installed sgmc ({out.strip()}): "
                             "mutants would not be tested")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-k", default="", help="only mutants whose id contains this")
    ap.add_argument("--jobs", type=int, default=2, help="mutants run at once (default 2)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per mutant")
    ap.add_argument("--min-score", type=float, default=0.95)
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTANTS if args.k in m.id]
    if args.list:
        for m in chosen:
            print(f"{m.id:<36} {m.path:<28} {m.what}")
        return 0
    _check_sgmc_resolves_to_copy()
    t0 = time.perf_counter()
    results = []
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for m, status, secs, last in pool.map(lambda m: _run(m, args.timeout), chosen):
            results.append((m, status))
            print(f"{status:<9} {secs:6.0f} s  {m.id:<36} {last}", flush=True)
    survivors = [m for m, s in results if s != "killed"]
    killed = len(results) - len(survivors)
    score = killed / max(len(results), 1)
    print(f"\nmutation score: {killed}/{len(results)} = {score:.1%} "
          f"({time.perf_counter() - t0:.0f} s)")
    if survivors:
        print("survivors (explain each in tests/README.md):")
        for m in survivors:
            print(f"  {m.id}: {m.what} ({m.path})")
    return 0 if score >= args.min_score else 1


if __name__ == "__main__":
    sys.exit(main())
