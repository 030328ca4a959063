"""Global optimisation by replica exchange: GD×LD, SGD×SGLD and baselines (Dong & Tong;
JMLR 22 (2021), Alg. 1–2).

A method is a coupling (or a single sampler) from the sampling side: GD×LD is
:func:`sgmc.replica_exchange` over ``sgmc.sgld`` with temperatures (0, γ) and the greedy
exchange rule (:func:`sgmc.kernels.coupling.greedy_rule`) — the same mechanism as replica-exchange
Langevin, with a different rule. The baselines are one ``sgmc.sgld`` chain at temperature 0
(GD/SGD) or γ (LD/SGLD).

:func:`minimize` runs ``num_replications`` independent replications with ``vmap`` inside
compiled ``lax.scan`` blocks (no Python work per step; blocks as :func:`sgmc.sample`'s, so a
Ctrl-C is answered between them) and records F at the output iterate X (the τ = 0 replica,
or the single chain) every ``record_every`` steps.

**Box constraints** (``bounds=(lo, hi)``): after each dynamics step (and, for GD×LD, before
the exchange test) every coordinate is mapped into [lo, hi] — by projection (clipped onto the
face, ``boundary="clip"``, the default) or by mirror reflection at the faces
(``boundary="reflect"``; see :meth:`sgmc.kernels.coupling.GreedyRule.to_box`).
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from sgmc import _validate as check
from sgmc._pytree import pytree_dataclass, replace, static
from sgmc.errors import Interrupted
from sgmc.kernels.coupling.ladder import replica_exchange
from sgmc.kernels.coupling.rules import GreedyRule, greedy_rule
from sgmc.kernels.sampler import sgld
from sgmc.run import preflight
from sgmc.run.api import start
from sgmc.run.mesh import check_mesh
from sgmc.run.optimize_inputs import INIT_AXES, as_problem, stack_init
from sgmc.run.plan import BLOCK_SECONDS, default_block_size
from sgmc.run.snapshot import Settings

__all__ = ["Method", "OptimizeResult", "gd", "gd_x_ld", "ld", "minimize", "sgd", "sgd_x_sgld",
           "sgld_opt"]


@dataclasses.dataclass(frozen=True)
class Method:
    """An optimisation method: a coupling (two replicas) or a sampler (one chain)."""

    name: str
    coupling: Any

    @property
    def num_replicas(self) -> int:
        return self.coupling.num_replicas  # 1 for a sampler (the kernel contract)

    def with_box(self, box, boundary: str = "clip") -> Method:
        """The method with its exchange rule projecting onto ``box`` (a coupling; a single
        chain is projected by :func:`minimize` itself)."""
        if box is None or self.coupling.num_replicas == 1:
            return self
        rule = self.coupling.rule.with_box(box, boundary)
        return Method(self.name, replace(self.coupling, rule=rule))


def _swap_flag(swap) -> bool:
    if not isinstance(swap, (bool, np.bool_)):
        raise TypeError(f"swap must be True or False, got {swap!r}")
    return bool(swap)


def gd_x_ld(step_size: float, temperature: float, threshold: float = 0.0,
            swap: bool = True) -> Method:
    """GD×LD (Alg. 1): X ← X − h∇F(X), Y ← Y − h∇F(Y) + sqrt(2γh) ξ; if F(Y) < F(X) − t0 then
    swap (X, Y) ← (Y, X), or with ``swap=False`` (nGD×LD) copy (X, Y) ← (Y, Y). Output X.

    Args:
        step_size: h > 0 (shared by both replicas).
        temperature: γ ≥ 0, the Langevin replica's temperature (γ = 0: two gradient descents).
        threshold: t0 ≥ 0.
        swap: True for GD×LD, False for nGD×LD.
    """
    copy = not _swap_flag(swap)
    base = sgld(step_size, None, 0.0)
    gamma = check.nonnegative("temperature", temperature)
    rule = greedy_rule(threshold, copy=copy)
    name = "gd_x_ld" if not copy else "ngd_x_ld"
    return Method(name, replica_exchange(base, [0.0, gamma], rule=rule))


def sgd_x_sgld(step_size: float, temperature: float, batch_size: int, threshold: float,
               bound: float, swap: bool = True) -> Method:
    """SGD×SGLD (Alg. 2): GD×LD with minibatch-mean gradients (batch size Θ) and an
    independent minibatch of size Θ for the comparison F̂(Y) < F̂(X) − t0; no exchange unless
    ‖X‖, ‖Y‖ ≤ M_v (``bound``). ``swap=False`` copies instead of swapping.

    Args:
        step_size: h > 0.
        temperature: γ ≥ 0.
        batch_size: Θ ≥ 1 (at most the number of data).
        threshold: t0 ≥ 0 (the paper takes t0 > 0 to absorb the minibatch noise).
        bound: M_v > 0.
        swap: True for SGD×SGLD, False for nSGD×SGLD.
    """
    copy = not _swap_flag(swap)
    b = check.integer("batch_size", batch_size, lo=1)
    base = sgld(step_size, b, 0.0)
    gamma = check.nonnegative("temperature", temperature)
    rule = greedy_rule(threshold, copy=copy, bound=bound, batch_size=b)
    name = "sgd_x_sgld" if not copy else "nsgd_x_sgld"
    return Method(name, replica_exchange(base, [0.0, gamma], rule=rule))


def gd(step_size: float) -> Method:
    """Gradient descent X ← X − h∇F(X) (the τ = 0 replica alone)."""
    return Method("gd", sgld(step_size, None, 0.0))


def ld(step_size: float, temperature: float) -> Method:
    """Langevin dynamics X ← X − h∇F(X) + sqrt(2γh) ξ (the τ = γ replica alone)."""
    return Method("ld", sgld(step_size, None, check.nonnegative("temperature", temperature)))


def sgd(step_size: float, batch_size: int) -> Method:
    """Stochastic gradient descent with minibatch-mean gradients."""
    return Method("sgd", sgld(step_size, check.integer("batch_size", batch_size, lo=1), 0.0))


def sgld_opt(step_size: float, temperature: float, batch_size: int) -> Method:
    """SGLD used as an optimiser (the SGD×SGLD paper's baseline)."""
    return Method("sgld", sgld(step_size, check.integer("batch_size", batch_size, lo=1),
                               check.nonnegative("temperature", temperature)))


@dataclasses.dataclass(frozen=True)
class OptimizeResult:
    """What :func:`minimize` returns (NumPy arrays, leading axis = replication).

    Attributes:
        x: the output iterate X_N per replication.
        value: F(X_N).
        trace: F(X_n) at n = ``trace_steps`` (R, T).
        trace_steps: the step counts n of the trace columns (1-based: after n steps).
        best_x, best_value: the best X and F among the start and the recorded points.
        exchanges: number of exchanges per replication (0 for single-chain methods).
        replicas: final positions of every replica (R, K, ...) for coupled methods, else None.
        path: X at ``trace_steps`` (R, T, ...) if ``record_path=True``, else None.
        grad_evals: per-example gradient (and function) evaluations per replication.
        diverged: per replication, whether an iterate (of any replica) became non-finite
            (NaN or inf); its ``x`` and ``value`` are then non-finite, while ``trace``,
            ``path`` and ``best_x`` / ``best_value`` keep what was found before.
        diverged_step: per replication, the number of steps after which a non-finite
            iterate was first found, or −1 (iterates are checked every ``record_every``
            steps: it appeared within the ``record_every`` steps before).
    """

    x: np.ndarray
    value: np.ndarray
    trace: np.ndarray
    trace_steps: np.ndarray
    best_x: np.ndarray
    best_value: np.ndarray
    exchanges: np.ndarray
    replicas: np.ndarray | None
    path: np.ndarray | None
    grad_evals: np.ndarray
    method: str
    num_steps: int
    wall_time: float
    diverged: np.ndarray
    diverged_step: np.ndarray

    def __repr__(self) -> str:
        bad = int(np.sum(self.diverged))
        return (f"OptimizeResult(method={self.method!r}, replications={len(self.value)}, "
                f"steps={self.num_steps}, mean value={float(np.mean(self.value)):.6g}, "
                f"best={float(np.nanmin(self.best_value)):.6g}, "
                f"mean exchanges={float(np.mean(self.exchanges)):.3g}"
                + (f", diverged={bad}" if bad else "") + ")")


def _value_fn(problem):
    return problem.full_energy if problem.has_data else problem.exact_energy


@pytree_dataclass
class _Replication:
    """One replication of a method as a :class:`sgmc.contracts.kernel.Kernel`, so that ``minimize``
    runs on the driver's compiled loop: its state is the method's, started from a point per
    replica; a kept draw records F and X at the output iterate X (the τ = 0 replica, or the
    single chain)."""

    coupling: Any
    problem: Any  # a leaf: F is evaluated at each recorded point inside the loop
    box: tuple | None = static(None)
    boundary: str = static("clip")

    num_replicas = 1
    replica_stacked = ()

    @property
    def positive_schedules(self) -> tuple[str, ...]:
        return self.coupling.positive_schedules

    @property
    def replicated(self) -> bool:
        return self.coupling.num_replicas > 1

    @property
    def name(self) -> str:
        return self.coupling.name

    @property
    def batch_size(self) -> int | None:
        return self.coupling.batch_size

    @property
    def info_spec(self) -> dict:
        return {"grad_evals": "total", **({"exchanges": "sum"} if self.replicated else {})}

    def init(self, problem, position, key):
        if not self.replicated:
            return self.coupling.init(problem, position, key)
        # Every replica from its own point (position is stacked over replicas).
        state = self.coupling.init(problem, position[0], key)
        return self.coupling.with_positions(state, position)

    def step(self, problem, state, rng, t):
        state, info = self.coupling.step(problem, state, rng, t)
        if not self.replicated:
            if self.box is not None:
                pos = GreedyRule.to_box(state.position, *self.box, self.boundary)
                state = self.coupling.with_position(state, pos)
            return state, {"grad_evals": info["grad_evals"]}
        return state, {"grad_evals": info["grad_evals"],
                       "exchanges": jnp.sum(info["swaps"]).astype(jnp.float32)}

    def draw(self, state):
        pos = state.position
        x = pos[0] if self.replicated else pos
        return {"value": _value_fn(self.problem)(x), "x": x}

    def keeps(self, t):
        return jnp.ones(jnp.shape(t), bool)

    def init_evals(self, problem) -> int:
        return self.coupling.init_evals(problem)

    def check(self, problem, position, num_chains: int) -> None:
        self.coupling.check(problem, position, num_chains)

    def meta(self) -> dict:
        return {}


def _best(start_value, start_x, trace, path):
    """The best point among the start and the recorded points (the first of equals; NaN
    never counts as better): F and X per replication."""
    values = np.concatenate([start_value[:, None], trace], axis=1)
    idx = np.argmin(np.where(np.isnan(values), np.inf, values), axis=1)
    rows = np.arange(len(idx))
    points = np.concatenate([start_x[:, None], path], axis=1)
    return values[rows, idx], points[rows, idx]


def _divergence_warning(diverged_step: np.ndarray, final: np.ndarray | None) -> str | None:
    """The warning for replications whose iterates became non-finite (None if none did):
    names the first one, its step and, for coupled methods, its non-finite replicas."""
    bad = np.flatnonzero(diverged_step >= 0)
    if not bad.size:
        return None
    r = int(bad[0])
    which = ""
    if final is not None:  # (R, K, ...): which replicas are non-finite at the end
        dead = np.flatnonzero(~np.isfinite(final[r].reshape(final.shape[1], -1)).all(axis=1))
        if dead.size:
            which = f" (replica {', '.join(map(str, dead))}; 0 is the output iterate X)"
    more = f" and {bad.size - 1} other replications" if bad.size > 1 else ""
    return (f"minimize: replication {r}{which} diverged (a non-finite iterate) at step "
            f"{int(diverged_step[r])}{more}; see res.diverged and res.diverged_step. Their x "
            "and value are non-finite; trace, path and best_x / best_value keep what was "
            "found before. A smaller step size usually helps.")


def _outcome(res, steps: int, wall: float, name: str, starts: np.ndarray,
             start_value: np.ndarray, every: int, k: int, record_path: bool) -> OptimizeResult:
    """The OptimizeResult of the run's Result ``res`` after ``steps`` steps: the finished
    run's, or an interrupted run's (its trace so far, which may be empty: then X is the start)."""
    trace, path = np.asarray(res.samples["value"]), np.asarray(res.samples["x"])
    best_v, best_x = _best(start_value, starts, trace, path)
    reps, n = trace.shape[:2]
    exchanges = (np.asarray(res.info["exchanges"]).sum(axis=1).astype(np.int32)
                 if k > 1 and n else np.zeros(reps, np.int32))
    diverged_step = np.asarray(res.meta["diverged_step"], np.int64)
    return OptimizeResult(
        x=path[:, -1] if n else starts, value=trace[:, -1] if n else start_value,
        trace=trace, trace_steps=every * np.arange(1, n + 1), best_x=best_x,
        best_value=best_v, exchanges=exchanges,
        replicas=np.asarray(res.final_state.position) if k > 1 else None,
        path=path if record_path else None,
        grad_evals=np.asarray(res.meta["grad_evals_total"]), method=name,
        num_steps=steps, wall_time=wall, diverged=diverged_step >= 0,
        diverged_step=diverged_step)


def minimize(objective, method: Method, init, num_steps: int, num_replications: int = 1,
             seed: int = 0, *, bounds=None, record_every: int = 1, record_path: bool = False,
             init_axes: str = "auto", boundary: str = "clip",
             mesh: Mesh | None = None) -> OptimizeResult:
    """Minimise ``objective`` with ``method`` over vectorised independent replications.

    Args:
        objective: an :class:`sgmc.Objective` (data-dependent ones can be subsampled by
            SGD×SGLD) or a plain function ``f(x) -> scalar`` of an array x.
        method: :func:`gd_x_ld`, :func:`sgd_x_sgld`, :func:`gd`, :func:`ld`, :func:`sgd` or
            :func:`sgld_opt`.
        init: one point for every replica and replication; or, for two-replica methods, the
            replicas' points stacked on a leading axis (X0, Y0); or one per replication, or
            (replication, replica) stacked — see ``init_axes``.
        num_steps: iterations N, in [1, 2³¹ − 1 − 256] (steps are counted in int32:
            :data:`sgmc.run.preflight.MAX_STEPS`).
        num_replications: independent replications R ≥ 1 (independent noise and batches).
        seed: integer in [0, 2³² − 1]; the same seed gives the same run.
        bounds: optional box (lo, hi): coordinates are kept in [lo, hi] (see ``boundary``).
        record_every: the trace records F(X_n) every this many steps; must divide num_steps.
        record_path: also keep X at the trace points (``res.path``).
        init_axes: ``"auto"`` (a point, else a stack over replicas, else over replications,
            else both), or explicitly ``"none"``, ``"replica"``, ``"replication"``, ``"both"``
            — use the explicit form for functions that also accept batches of points.
        boundary: with ``bounds``, ``"clip"`` (projection onto the box) or ``"reflect"``
            (mirror reflection at its faces).
        mesh: optional ``jax.sharding.Mesh`` (``Mesh(...)`` or ``jax.make_mesh(...)``) to
            spread the replications over devices: an axis ``"chains"`` (the replications;
            ``num_replications`` a multiple of its size) and optionally ``"data"`` (the
            objective's rows, for the full-data passes). The result is that of the same run
            on one device (docs/scale.md).

    Returns:
        :class:`OptimizeResult`. A replication whose iterates become non-finite does not
        stop the others: it is flagged in ``res.diverged`` (with ``res.diverged_step``) and
        a :class:`RuntimeWarning` names it and the step; what it found before is kept.

    Raises:
        ValueError, TypeError: for bad arguments (``seed`` must be in [0, 2³² − 1],
            ``num_steps`` at most :data:`sgmc.run.preflight.MAX_STEPS`).
        sgmc.Interrupted: on Ctrl-C (a KeyboardInterrupt), once the block under way is done
            (blocks of about 1/20 of the run, cut after the first to about a second each
            when it took more than 2 s; a second Ctrl-C stops at once, without that block).
            Its ``result`` is the :class:`OptimizeResult` of the steps done (``num_steps``):
            the trace so far, and the best point among the starts and that trace.
    """
    if not isinstance(method, Method):
        raise TypeError("method must be an sgmc optimiser such as sgmc.gd_x_ld(...), got "
                        f"{type(method).__name__}")
    problem = as_problem(objective)
    steps = preflight.num_steps(num_steps)
    reps = check.integer("num_replications", num_replications, lo=1)
    seed = check.integer("seed", seed, lo=0, hi=2**32 - 1)
    every = check.integer("record_every", record_every, lo=1, hi=steps)
    if steps % every:
        raise ValueError(f"record_every must divide num_steps, got record_every={every}, "
                         f"num_steps={steps}")
    check.choice("init_axes", init_axes, INIT_AXES)
    box = None if bounds is None else check.interval("bounds", bounds)
    check.choice("boundary", boundary, GreedyRule.BOUNDARIES)
    k = method.num_replicas
    x0 = stack_init(problem, init, k, reps, init_axes)
    if box is not None and (np.any(x0 < box[0]) or np.any(x0 > box[1])):
        raise ValueError(f"init must lie inside bounds {box}")
    method = method.with_box(box, boundary)
    point = x0[0, 0] if k > 1 else x0[0]
    method.coupling.check(problem, jnp.asarray(point), reps)
    kernel = _Replication(method.coupling, problem, box, boundary)
    if mesh is not None:
        check_mesh(mesh, reps, kernel, problem)
    # Blocks as sample's (about 1/20 of the run, then about a second each when longer), so
    # that a Ctrl-C is answered promptly; the trace does not depend on them.
    per_block = default_block_size(steps // every, every, reps * point.dtype.itemsize
                                   * (point.size + 1), problem, kernel.batch_size)
    settings = Settings(steps, 0, every, seed, reps, "threefry", per_block, None, None, None,
                        block_seconds=BLOCK_SECONDS if (problem.stream is None and
                                                        jax.process_count() == 1) else None)
    starts = x0[:, 0] if k > 1 else x0
    start_v = np.asarray(jax.vmap(_value_fn(problem))(jnp.asarray(starts)))
    fixed = (method.name, starts, start_v, every, k, record_path)
    start_time = time.perf_counter()
    try:
        res = start(problem, kernel, jnp.asarray(x0), settings, mesh=mesh,
                    divergence="continue")
    except Interrupted as err:
        part = _outcome(err.result, err.step, time.perf_counter() - start_time, *fixed)
        best = np.fmin.reduce(part.best_value)  # NaN only if every one is
        raise Interrupted(err.step, part, None, message=(
            f"minimize interrupted after step {err.step:,} of {steps:,}; .result holds the "
            f"trace so far ({part.trace.shape[1]:,} points per replication) and the best "
            f"point found (best_value {best:.6g})")) from None
    res = _outcome(res, steps, time.perf_counter() - start_time, *fixed)
    message = _divergence_warning(res.diverged_step, res.replicas)
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=2)
    return res
