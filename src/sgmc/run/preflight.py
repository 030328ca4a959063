"""Checks of a run's numbers before its loop is compiled, so that an error names its real
cause instead of ending, steps later, in a :class:`sgmc.DivergenceError` that blames the
step size:

* the step counter's range (:func:`num_steps`): steps are counted in int32;
* the model at the initial points (:func:`check_model`): the energy and its gradient at
  every chain's initial point on the first :data:`ROWS` rows of data, the exact term (a
  posterior's ``logprior``) and the data term (its ``loglik``) apart, so that the message
  names the one that is NaN or inf;
* the storage arguments (:func:`storage`): paths where files can be written;
* the schedules (:func:`check_schedules`): every :class:`sgmc.schedules.Schedule` the
  kernel holds (step sizes, temperatures, a replica-exchange correction) on the run's
  steps, refused where NaN, inf or negative (or ≤ 0 where 0 is invalid).

:func:`preflight` runs the last two; ``sgmc.sample`` calls it after its argument checks.
The model check is one small compiled function (per problem and shapes, cached like any
``jit``): on the linear regression model (d = 10, 4 or 64 chains) it took about 0.23 s here
the first time, nearly all of it the compile (the loop's own compile: 2.8 s), and under 1 ms
after. The schedules take a few milliseconds (0.03 s for 2²⁰ steps).
"""

from __future__ import annotations

import os
import tempfile
import warnings
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sgmc import _validate as check
from sgmc.errors import SamplingWarning
from sgmc.model.oracle import Problem
from sgmc.run import cache
from sgmc.run.loop import MAX_CHUNK, drawn
from sgmc.schedules import Schedule

__all__ = ["MAX_STEPS", "ROWS", "SCHEDULE_POINTS", "check_kept", "check_model",
           "check_schedules", "num_steps", "predict_output", "preflight", "storage", "writable"]

PyTree = Any

#: The most steps a run may take. Step indices are int32 inside the compiled loop, which
#: draws the randomness of up to ``MAX_CHUNK`` steps ahead: the largest index it forms is
#: below num_steps + MAX_CHUNK, which must stay below 2³¹.
MAX_STEPS = int(np.iinfo(np.int32).max) - MAX_CHUNK

#: Rows of data (the first ones) on which the model is evaluated at the initial points.
ROWS = 256

#: Steps at which a schedule is evaluated: every step of a run up to this many, else this
#: many evenly spaced steps, the first and the last included.
SCHEDULE_POINTS = 2**20


def num_steps(value: Any, name: str = "num_steps") -> int:
    """``value`` as a number of steps in [1, :data:`MAX_STEPS`] (the step counter is int32)."""
    n = check.integer(name, value, lo=1)
    if n > MAX_STEPS:
        raise ValueError(f"{name} must be at most {MAX_STEPS:,} (steps are counted in int32: "
                         f"2³¹ − 1 less the {MAX_CHUNK} steps whose randomness the loop draws "
                         f"ahead), got {n:,}; split the run into several runs")
    return n


def _kind(tree: PyTree) -> jax.Array:
    """0 if every entry of ``tree`` is finite, 1 if one is NaN, else 2 (an inf)."""
    leaves = [jnp.asarray(x) for x in jax.tree.leaves(tree)]
    nan = jnp.any(jnp.stack([jnp.any(jnp.isnan(x)) for x in leaves]))
    inf = jnp.any(jnp.stack([jnp.any(jnp.isinf(x)) for x in leaves]))
    return jnp.where(nan, 1, jnp.where(inf, 2, 0)).astype(jnp.int8)


@partial(jax.jit, static_argnames=("rows",))
def _kinds_at(problem: Problem, points: PyTree, rows: int) -> dict[str, jax.Array]:
    """At each point (stacked on a leading axis, visited one at a time): the kind
    (:func:`_kind`) of the exact term's energy and gradient, of the data term's energy per
    row of the first ``rows`` rows, and of its gradient summed over them."""
    chunk = problem.take(jnp.arange(rows)) if rows else None

    def one(point):
        u0, g0 = jax.value_and_grad(problem.exact_energy)(point)
        out = {"exact": _kind(u0), "exact_grad": _kind(g0)}
        if rows:
            per_row, pull = jax.vjp(lambda p: problem.chunk_energies(p, chunk), point)
            isnan, isinf = jnp.isnan(per_row), jnp.isinf(per_row)
            out["data"] = jnp.where(isnan, 1, jnp.where(isinf, 2, 0)).astype(jnp.int8)
            out["data_grad"] = _kind(pull(jnp.ones_like(per_row))[0])
        return out

    if jax.tree.leaves(points)[0].shape[0] == 1:
        # One point (every chain starts there: the common case) needs no loop, and XLA:CPU
        # runs a convolution's gradient 10–25× slower inside one (jax-ml/jax#12868): for a
        # small CNN this check took 0.7 s a call in lax.map.
        return jax.tree.map(lambda x: x[None], one(jax.tree.map(lambda x: x[0], points)))
    return jax.lax.map(one, points)


@jax.jit
def _all_at_first(positions: PyTree) -> jax.Array:
    """Whether every chain's point equals chain 0's (NaN equal to NaN), compared on the
    device: one boolean reaches the host, not the chains' parameters (copied and compared on
    the host, a 36.8M-parameter model's took 0.2 s of each call on a CPU)."""
    def same(x):
        return jnp.all((x == x[:1]) | (jnp.isnan(x) & jnp.isnan(x[:1])))

    return jnp.all(jnp.stack([same(x) for x in jax.tree.leaves(positions)]))


def _distinct(positions: PyTree) -> tuple[PyTree, np.ndarray]:
    """The chains' initial points to evaluate: chain 0's alone when every chain starts
    there (one point broadcast), else all; and the chain index of each."""
    n = jax.tree.leaves(positions)[0].shape[0]
    if n == 1:
        return positions, np.zeros(1, np.int64)
    if bool(_all_at_first(positions)):
        return jax.tree.map(lambda x: x[:1], positions), np.zeros(1, np.int64)
    return positions, np.arange(n)


def check_model(problem: Problem, positions: PyTree, name: str = "init",
                hint: str = "") -> None:
    """Raise ValueError if the energy or its gradient is NaN or inf at a chain's initial
    point (``positions`` stacked on a leading chain axis) on the first :data:`ROWS` rows of
    the data (the device's rows: a stream's first buffer); the message names the chain, the
    term (exact or data: a posterior's ``logprior`` or ``loglik``) and the rows, and ends
    with ``hint`` (how the starts were made, when not by the user alone)."""
    try:
        _check_model(problem, positions, name)
    except ValueError as err:
        if not hint:
            raise
        raise ValueError(f"{err}. {hint}") from None


def _check_model(problem: Problem, positions: PyTree, name: str) -> None:
    points, chains = _distinct(positions)
    rows = min(problem.data_rows, ROWS) if problem.has_data else 0
    kinds = jax.device_get(_kinds_at(problem, points, rows))
    exact, datum = problem.term_names
    words = {1: "NaN", 2: "inf"}
    for i, chain in enumerate(chains):
        at = f"at {name} (chain {chain})"
        if kinds["exact"][i]:
            raise ValueError(f"the model's energy is {words[int(kinds['exact'][i])]} {at}: "
                             f"{exact}({name}) is not finite; check {exact} / {name}")
        if kinds["exact_grad"][i]:
            raise ValueError(f"the model's gradient is {words[int(kinds['exact_grad'][i])]} "
                             f"{at}: the gradient of {exact} is not finite there, though its "
                             f"value is; check {exact} / {name}")
        if not rows:
            continue
        bad = np.flatnonzero(kinds["data"][i])
        if bad.size:
            more = f" (and {bad.size - 1} more)" if bad.size > 1 else ""
            raise ValueError(
                f"the model's energy is {words[int(kinds['data'][i][bad[0]])]} {at} on the "
                f"first {rows} rows of data: {datum}({name}, datum) is not finite at row "
                f"{bad[0]}{more}; check {datum} / {name} / those rows of data")
        if kinds["data_grad"][i]:
            raise ValueError(
                f"the model's gradient is {words[int(kinds['data_grad'][i])]} {at} on the "
                f"first {rows} rows of data: the gradient of {datum} summed over them is not "
                f"finite, though its values are; check {datum} / {name}")


def _schedules(kernel: Any) -> list[tuple[str, Schedule]]:
    """Every schedule ``kernel`` holds, named by its path (``step_size``,
    ``step_sizes[1]``, ``rule.correction``, ...); one entry per distinct schedule."""
    found, seen = [], set()
    for path, leaf in jax.tree_util.tree_flatten_with_path(
            kernel, is_leaf=lambda x: isinstance(x, Schedule))[0]:
        if isinstance(leaf, Schedule) and id(leaf) not in seen:
            seen.add(id(leaf))
            found.append((jax.tree_util.keystr(path).lstrip("."), leaf))
    return found


def _positive(kernel: Any, name: str) -> bool:
    """Whether the schedule ``name`` (a path such as ``rule.correction`` or
    ``temperatures[1]``) must be > 0, else ≥ 0: as the kernel declares
    (``Kernel.positive_schedules``)."""
    return name.rsplit(".", 1)[-1].split("[", 1)[0] in kernel.positive_schedules


def schedule_steps(steps: int) -> np.ndarray:
    """The steps at which :func:`check_schedules` evaluates a run of ``steps`` steps: all of
    them, or :data:`SCHEDULE_POINTS` evenly spaced ones from the first to the last."""
    if steps <= SCHEDULE_POINTS:
        return np.arange(steps)
    return np.arange(SCHEDULE_POINTS, dtype=np.int64) * (steps - 1) // (SCHEDULE_POINTS - 1)


def check_schedules(kernel: Any, steps: int) -> None:
    """Raise ValueError if a schedule the kernel holds is NaN, inf or negative (or ≤ 0 where
    0 is invalid, see :func:`_positive`) at one of the run's steps 0 … steps − 1, as float32
    (the loop's precision); the message names the schedule and the first bad step.

    Runs of more than :data:`SCHEDULE_POINTS` steps are checked on that many evenly spaced
    steps (the first and the last included), so a value that is bad only between them
    (e.g. at one step of a cycle) is not seen.
    """
    schedules = _schedules(kernel)
    if not schedules:
        return
    ts = schedule_steps(steps)
    sampled = "" if ts.size == steps else (
        f" (checked at {ts.size:,} evenly spaced steps of the run's {steps:,})")
    for name, schedule in schedules:
        try:
            values = np.asarray(_evaluate(schedule, jnp.asarray(ts, jnp.int32)), np.float32)
        except Exception as err:
            raise ValueError(f"the schedule {name} cannot be evaluated at steps 0 … "
                             f"{steps - 1}: {type(err).__name__}: {err}") from err
        values = np.broadcast_to(values, ts.shape)
        positive = _positive(kernel, name)
        bad = ~np.isfinite(values) | ((values <= 0) if positive else (values < 0))
        if bad.any():
            i = int(np.argmax(bad))
            need = "> 0" if positive else "≥ 0"
            raise ValueError(f"the schedule {name} is {values[i]:g} at step {int(ts[i])}; it "
                             f"must be finite and {need} at every step 0 … {steps - 1} of "
                             f"the run{sampled}")


def _evaluate(schedule: Schedule, ts: jax.Array) -> jax.Array:
    """``schedule`` at the steps ``ts``: one compiled program per schedule structure (its
    values are arguments, so a new step size reuses it; eager, the vmap took ~0.7 ms a
    call); eagerly for a schedule that is not a pytree of arrays, or when the compiled
    evaluation fails (so that the error is the schedule's own)."""
    if cache.signature(schedule) is not None:
        try:
            return _evaluate_jit(schedule, ts)
        except Exception:  # evaluated again below: its own error, as before
            pass
    return jax.vmap(schedule)(ts)


@jax.jit
def _evaluate_jit(schedule: Schedule, ts: jax.Array) -> jax.Array:
    return jax.vmap(schedule)(ts)


def preflight(problem: Problem, kernel: Any, positions: PyTree, steps: int,
              init_spread: float = 0.0) -> None:
    """Before compiling a run: the model at every chain's initial point
    (:func:`check_model`; with ``init_spread`` > 0 its message blames the spread starts)
    and the kernel's schedules on the run's steps (:func:`check_schedules`)."""
    check_schedules(kernel, steps)
    hint = "" if not init_spread else (
        f"The chains start at init + init_spread·ξ, ξ ~ N(0, I), on the sampled "
        f"(unconstrained) scale, with init_spread={init_spread:g}: a smaller init_spread "
        "keeps every start where the model is finite")
    check_model(problem, positions, hint=hint)


def check_kept(kernel: Any, settings: Any, kept: np.ndarray) -> None:
    """Refuse a run of which the kernel keeps no draw (``kept``, :func:`keep_mask`, false at
    every draw after burn-in: a cyclical schedule's exploration stages), and warn
    (:class:`sgmc.SamplingWarning`) when the kernel's schedules were built for another
    number of steps (``kernel.run_length``), with the draws it keeps."""
    count = int(np.count_nonzero(kept))
    length, steps = kernel.run_length, settings.num_steps
    built = ("" if length is None or length == steps else
             f"{kernel.name} was built for a run of {length:,} steps and this run has "
             f"num_steps={steps:,}: ")
    if count == 0 and settings.num_draws:
        raise ValueError(
            f"{built}{kernel.name} keeps none of the run's {settings.num_draws:,} draws "
            f"(burn_in={settings.burn_in}, thin={settings.thin}): its keeps(t) refuses every "
            "one of them (a cyclical schedule's exploration stages); "
            + ("pass the same num_steps to the sampler and to sample" if built else
               "run longer, or with a shorter burn-in"))
    if built:
        warnings.warn(f"{built}its schedule does not fit the run, which keeps {count:,} of "
                      f"its {settings.num_draws:,} draws after burn-in; pass the same "
                      "num_steps to the sampler and to sample", SamplingWarning, stacklevel=3)


def storage(checkpoint, checkpoint_every, stream_to):
    """Validate the checkpoint and streaming arguments (paths as strings), and that files
    can be written where they go — tried by writing one (``os.access`` answers yes to root
    on a read-only mount)."""
    if checkpoint is not None:
        checkpoint = os.fspath(checkpoint)
        folder = os.path.dirname(os.path.abspath(checkpoint))
        if not os.path.isdir(folder):
            raise ValueError(f"checkpoint={checkpoint!r}: the folder {folder} does not exist")
        if os.path.isdir(checkpoint):
            raise ValueError(f"checkpoint={checkpoint!r} is a folder; give a file path")
        writable("checkpoint", checkpoint, folder)
        draws = os.path.abspath(checkpoint) + ".draws"
        if stream_to is None and os.path.exists(draws) and not os.path.isdir(draws):
            raise ValueError(f"checkpoint={checkpoint!r}: {draws}, where the checkpoints keep "
                             "the draws, is a file; move it or choose another path")
    if checkpoint_every is not None:
        if checkpoint is None:
            raise ValueError("checkpoint_every needs checkpoint=PATH")
        checkpoint_every = check.integer("checkpoint_every", checkpoint_every, lo=1)
    if stream_to is not None:
        stream_to = os.path.abspath(os.fspath(stream_to))
        if os.path.exists(stream_to) and (not os.path.isdir(stream_to) or os.listdir(stream_to)):
            raise ValueError(f"stream_to={stream_to!r} must be a new or empty folder")
        existing = stream_to  # the folder, or the nearest folder above it that exists
        while not os.path.exists(existing):
            existing = os.path.dirname(existing)
        writable("stream_to", stream_to, existing)
    return checkpoint, checkpoint_every, stream_to


def writable(name: str, value: str, folder: str) -> None:
    """A ValueError naming argument ``name`` unless a file can be created in ``folder``."""
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".sgmc-write-test-")
        os.close(fd)
        os.remove(tmp)
    except OSError as err:
        raise ValueError(f"{name}={value!r}: cannot write in the folder {folder} "
                         f"({err.strerror or err})") from None


def predict_output(problem: Problem, kernel: Any, states: Any, predict: Any
                   ) -> jax.ShapeDtypeStruct:
    """The shape and dtype of ``predict(draw)`` for the chains' ``states`` (their shapes
    suffice), found by tracing it (``jax.eval_shape``) before anything is compiled.

    Raises:
        TypeError: ``predict`` cannot be traced on a draw, or does not return one real array.
    """
    one = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), states)
    draw = jax.eval_shape(drawn(problem, kernel), one)
    shapes = jax.tree.map(lambda x: tuple(x.shape), draw)
    try:
        out = jax.eval_shape(predict, draw)
    except Exception as err:  # any failure of the user's function while tracing
        raise TypeError(f"predict must be a JAX-traceable function of one draw (shapes "
                        f"{shapes}); tracing it failed: {type(err).__name__}: {err}") from err
    if not isinstance(out, jax.ShapeDtypeStruct) or not (
            jnp.issubdtype(out.dtype, jnp.number) or out.dtype == jnp.bool_):
        raise TypeError(f"predict must return one real array, got "
                        f"{jax.tree.map(lambda x: (tuple(x.shape), str(x.dtype)), out)}")
    if jnp.issubdtype(out.dtype, jnp.complexfloating):
        raise TypeError(f"predict must return a real array, got dtype {out.dtype}")
    return out
