"""``sgmc.sample`` and ``sgmc.resume``: validate every argument, start or restore a run, and
hand it to the host loop (:mod:`sgmc.run.host`), which runs compiled blocks of the kernel
(:mod:`sgmc.run.loop`) as planned (:mod:`sgmc.run.plan`).
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh

from sgmc import _validate as check
from sgmc import stationarity
from sgmc._tree import first_point
from sgmc.contracts import missing_text
from sgmc.contracts.kernel import KERNEL_MEMBERS, Kernel
from sgmc.io import checkpoint as ckpt
from sgmc.io.lock import claim
from sgmc.io.sinks import DiskSink, MemorySink
from sgmc.kernels.coupling.variance import warn_if_cv_cannot_help
from sgmc.model.oracle import Problem, require_problem
from sgmc.result import Result
from sgmc.run import cache, preflight
from sgmc.run.host import Run, execute
from sgmc.run.loop import Counters, drawn, init_chains
from sgmc.run.memory import check_run_memory
from sgmc.run.mesh import check_mesh
from sgmc.run.moments import Moments
from sgmc.run.plan import (
    BLOCK_SECONDS,
    PRNG_IMPLS,
    chain_keys,
    default_block_size,
    keep_mask,
    stored_mask,
    stored_total,
)
from sgmc.run.snapshot import Settings, draws_folder, position_spec, restore
from sgmc.run.starts import chain_positions, has_convolution

#: The most steps ``sample(..., unroll=True)`` compiles into one loop-free block program.
MAX_UNROLLED_STEPS = 32

__all__ = ["resume", "sample", "start"]

PyTree = Any


def sample(problem: Problem, sampler: Kernel, init: PyTree, num_steps: int, num_chains: int = 1,
           burn_in: int = 0, thin: int = 1, seed: int = 0, progress: bool | None = None,
           draws_per_block: int | None = None, prng: str = "threefry",
           checkpoint: str | os.PathLike | None = None, checkpoint_every: int | None = None,
           stream_to: str | os.PathLike | None = None, mesh: Mesh | None = None,
           init_per_chain: bool | None = None, predict: Any = None,
           store_draws: bool = True, init_spread: float = 0.0,
           unroll: bool | None = None, diagnose: bool = True,
           overwrite: bool = False) -> Result:
    """Run ``num_chains`` chains of ``sampler`` on ``problem`` for ``num_steps`` steps each.

    The first ``burn_in`` steps are discarded; after them a draw is kept every ``thin``
    steps, so each chain yields ``(num_steps − burn_in) // thin`` draws (any steps left over
    are still taken, so the final state is the state after ``num_steps`` steps) — fewer
    for a kernel whose ``keeps(t)`` refuses some (the exploration stage of a cyclical
    schedule): draw j, taken right after the 0-based step t_j = burn_in mod thin +
    thin·(j + 1) − 1, is kept iff t_j ≥ burn_in and ``kernel.keeps(t_j)``.

    Args:
        problem: an :class:`sgmc.Posterior` or :class:`sgmc.Objective`.
        sampler: any :class:`sgmc.contracts.kernel.Kernel`: ``sgmc.sgld(...)``, ``sgmc.sghmc(...)``,
            ``sgmc.replica_exchange(...)``, or your own.
        init: the starting point — one position (used by every chain), or one per chain
            stacked on a leading axis of size ``num_chains`` (see ``init_per_chain``).
            Floating leaves must be float32 or float64 (integers become float32).
        num_steps: total steps per chain, in [1, 2³¹ − 1 − 256] (steps are counted in int32
            inside the compiled loop, which draws the randomness of up to 256 steps ahead:
            :data:`sgmc.run.preflight.MAX_STEPS`).
        num_chains: independent chains, run as one vectorised computation.
        burn_in: steps discarded first, in [0, num_steps − 1].
        thin: keep every ``thin``-th draw, in [1, num_steps − burn_in].
        seed: integer in [0, 2³² − 1]; the same seed gives bitwise identical draws.
        progress: show a progress bar (needs tqdm, in the ``diagnostics`` extra); default:
            only on an interactive terminal outside CI, when tqdm is installed.
        draws_per_block: draws computed per compiled block, burn-in included (burn-in runs as draws
            at this ``thin`` that are dropped). Default: about 1/20 of the run but at least 256
            steps (the whole run when shorter: a call per block costs ~2 ms on a GPU), capped so
            that a block's draws take at most 64 MiB, its steps at most ``checkpoint_every`` and,
            with streamed data, about buffer_rows / batch_size (see :class:`sgmc.Stream`), and
            chosen to divide the run's draws when it can, so that the run needs one compiled
            program; if the first such block takes more than 2 s, the rest are cut to about 1 s each
            (one more compiled program), so that a Ctrl-C is answered promptly (not with streamed
            data, nor in a multi-process run). The draws do not depend on it.
        prng: ``"threefry"`` (default; the same random numbers on every backend and
            sharding — the chains themselves agree only up to floating-point rounding,
            which differs between backends and grows along a run) or ``"rbg"`` (XLA's
            RngBitGenerator: may be faster on accelerators, is slower on the CPU, where
            threefry draws many steps' randomness at once; its random numbers may differ
            across backends).
        checkpoint: a file path. The complete state of the run (every chain's sampler
            state, the position in the run, where its draws are and how many) is written
            there atomically between blocks, and once more at the end; :func:`sgmc.resume`
            continues from it with draws bitwise identical to an uninterrupted run's. The
            checkpoint it replaces is kept as ``PATH.prev``. A path that holds another
            run's checkpoint (``PATH``, ``PATH.prev`` or draws in ``PATH.draws``) is refused
            unless ``overwrite=True``; one in use by a live run (``PATH.lock``), always.
            The draws themselves are appended, with checksums, to ``stream_to`` or else to
            the folder ``PATH.draws`` (keep it next to the checkpoint), so that a checkpoint
            costs the state and the draws made since the previous one. Positions must be arrays or
            dicts / lists / tuples of arrays.
        checkpoint_every: write a checkpoint after the first block that ends at least this
            many steps after the previous one (≥ 1; needs ``checkpoint``). Default: the
            steps of one block of the default size (about 1/20 of the run), also when
            blocks are later cut by wall time.
        stream_to: a new or empty folder. Kept draws are written there block by block into
            ``.npy`` files instead of being held in memory, so memory does not grow with the
            run; the files' full size is reserved on disk at the start (a full disk is
            reported before sampling); the Result's draws are read-only memory maps of them,
            and ``sgmc.Result.load(folder)`` opens them later (also after a crash: it then
            holds the draws written so far).
        mesh: a :class:`jax.sharding.Mesh` (``Mesh(devices, names)`` or
            ``jax.make_mesh(shape, names)``) with an axis named ``"chains"`` (its size must
            divide ``num_chains``) and optionally ones named ``"replicas"`` (for replica
            exchange; its size must divide the number of replicas) and ``"data"`` (its size
            must divide N). Chains, and replicas, are then split over the devices, the
            data replicated or their rows split over ``"data"``; the draws are those of
            the same run on one device (bitwise whenever every device holds at least two
            chains; with one chain per device XLA may reassociate a few float32 sums).
            See :mod:`sgmc.run.mesh` for several hosts.
        init_per_chain: True: ``init``'s leading axis is the chains' (its size must be
            ``num_chains``); False: ``init`` is one point for every chain; None (default):
            whichever of the two the model accepts (its energy at the point must be a
            scalar), and a ValueError when it accepts both (e.g. ``init`` of shape (4, 2),
            ``num_chains=4`` and a model that broadcasts) — pass True or False then; with
            one chain such an ``init`` is one point.
        init_spread: ≥ 0 (default 0: every chain starts at ``init``). With one point
            ``init``, chain c starts at ``init + init_spread · ξ_c``, ξ_c ~ N(0, I) (each
            leaf its own draws), on the sampled scale: the unconstrained one when the
            problem has ``constraints`` (the spread is added to T⁻¹(init), so every start
            stays in the support). The ξ_c are drawn from ``seed`` (chain c's from the seed
            and c alone: the same seed gives the same starts, and a run with more chains
            adds starts without moving the first ones). Convergence diagnostics compare
            chains: R-hat (``sgmc.diagnostics``) can only reveal chains that have not
            forgotten their start if the starts are dispersed relative to the posterior, so
            take ``init_spread`` about the posterior's scale or larger (or pass dispersed
            starts yourself, one per chain). A ValueError with a stacked ``init`` or
            ``init_per_chain=True`` (each chain has its start already).
        predict: a function of one draw (the pytree of a draw, on the model's scale, as in
            ``samples``) returning one array, e.g. a network's class probabilities on a test
            set; traced by JAX inside the compiled loop. At every kept draw each chain adds
            fn(draw) to running moments (Welford's update, float32), so that
            ``Result.predictive`` holds the model average E[fn] ("mean"), the variance of
            fn over the kept draws and chains ("var", ddof = 0, pooled over chains by
            Chan's formula), the number of draws ("count") and per-chain versions
            ("chain_mean", "chain_var", "chain_count"); checkpointed with the run
            (:func:`sgmc.resume` needs the same ``predict``).
        store_draws: False: store no draw at all: ``samples`` (and ``info``'s per-draw
            statistics but the drift statistics, see ``diagnose``) have zero draws, and
            memory is the chains' states plus ``predict``'s moments (and a few floats per
            kept draw) whatever the number of steps — for a network whose draws would not
            fit, with ``predict``. Not with ``stream_to``.
        unroll: True: compile each block's steps one after another, without a loop, in
            blocks of at most :data:`MAX_UNROLLED_STEPS` steps (so ``thin`` ≤ that). The
            run is the looped run up to float rounding (XLA may fuse a longer program's
            arithmetic differently: last-bit differences per step), and the same seed gives
            bitwise the same draws with ``unroll=True``. For convolutional networks on a CPU:
            XLA:CPU runs a convolution's gradient 10–25× slower inside a loop than outside
            one (jax-ml/jax#12868); unrolled, a small CNN's step ran ~12× faster here
            (benchmarks/README.md). None (default): True on a CPU backend when the model
            has a convolution (in its jaxpr) and ``thin`` ≤ :data:`MAX_UNROLLED_STEPS`,
            else False (elsewhere loops cost nothing and compile faster).
        diagnose: True (default): every kept draw records ``info["energy"]``,
            ``info["log_prior"]`` and ``info["loglik"]`` (:mod:`sgmc.run.stats`: one
            energy evaluation on a minibatch per kept draw, from its own random stream, so
            the draws are those of ``diagnose=False``), and the run ends with their drift
            test (:meth:`sgmc.Result.diagnose`): an :class:`sgmc.SamplingWarning` when the
            run is not stationary (and, for replica exchange with :func:`sgmc.cv_energy`, an
            :class:`sgmc.ControlVariateWarning` when its control variate cannot help).
            False: neither.
        overwrite: True: a ``checkpoint`` path that holds another run is taken over (its
            checkpoints are deleted, its draws folder rewritten). Default False: such a
            path is a ValueError, so that a run never destroys another's draws by accident.

    Before anything is compiled (:mod:`sgmc.run.preflight`), the energy and its gradient
    are evaluated at every chain's initial point on the first 256 rows of data, the prior
    (exact) and the likelihood (data) terms apart, and the sampler's schedules (step sizes,
    temperatures, a swap correction) on the run's steps (on 2²⁰ evenly spaced steps of a
    longer run): NaN or inf there, or a negative schedule value, is a ValueError naming it.
    So is a run that cannot fit in memory (the kept draws, the block buffers and the chains'
    states against the memory available; above half of it, an :class:`sgmc.MemoryWarning`),
    and one whose sampler keeps none of its draws (a cyclical schedule built for another
    ``num_steps``; a mismatch that keeps some is an :class:`sgmc.SamplingWarning`).

    Returns:
        :class:`sgmc.Result` with ``samples`` (leaves shaped (num_chains, num_draws, ...)),
        ``info["grad_evals"]`` (cumulative per-example gradient evaluations at each draw)
        and run metadata; with ``predict``, ``predictive`` (see ``predict``).

    Raises:
        ValueError, TypeError: for bad arguments, before anything is compiled.
        sgmc.DataError: (a ValueError) during the run, for rows of streamed data
            (:class:`sgmc.Stream`) that are non-finite or do not fit the device's dtypes
            (the message names the rows; every piece is checked as it is read); it carries
            the draws kept before.
        sgmc.DivergenceError: if a chain's state becomes non-finite; it carries the draws
            kept before that step.
        sgmc.Interrupted: on Ctrl-C (a KeyboardInterrupt), once the block under way is
            stored (a second Ctrl-C stops at once, without that block); it carries every draw
            kept so far and, with ``checkpoint``, the run continues with :func:`sgmc.resume`.
        sgmc.StorageError: writing the draws or a checkpoint failed (a full disk, a folder
            made read-only); it carries every draw kept so far and names the last complete
            checkpoint, from which :func:`sgmc.resume` continues.
        sgmc.RunError: a compiled block failed at run time (a ``predict`` whose host
            callback raised, a device out of memory); it carries every draw kept before
            that block and the last complete checkpoint. A ``checkpoint`` or
            ``stream_to`` folder where no file can be created is a ValueError before
            anything is compiled.
    """
    require_problem(problem)
    if not isinstance(sampler, Kernel):
        raise TypeError("sampler must be an sgmc sampler such as sgmc.sgld(...) or a kernel "
                        f"(sgmc.contracts.kernel.Kernel), got {type(sampler).__name__}"
                        + missing_text(sampler, KERNEL_MEMBERS, "sgmc.contracts.kernel"))
    num_steps = preflight.num_steps(num_steps)
    num_chains = check.integer("num_chains", num_chains, lo=1)
    burn_in = check.integer("burn_in", burn_in, lo=0, hi=num_steps - 1)
    thin = check.integer("thin", thin, lo=1, hi=num_steps - burn_in)
    seed = check.integer("seed", seed, lo=0, hi=2**32 - 1)
    check.choice("prng", prng, tuple(PRNG_IMPLS))
    if draws_per_block is not None:
        draws_per_block = check.integer("draws_per_block", draws_per_block, lo=1)
    checkpoint, checkpoint_every, stream_to = preflight.storage(checkpoint, checkpoint_every,
                                                             stream_to)
    for name, flag in (("store_draws", store_draws), ("diagnose", diagnose),
                       ("overwrite", overwrite)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
    if not store_draws and stream_to is not None:
        raise ValueError("stream_to writes the draws to disk and store_draws=False stores "
                         "none: pass one of them")
    if predict is not None and not callable(predict):
        raise TypeError(f"predict must be a function of one draw returning an array, got "
                        f"{type(predict).__name__}")
    init_spread = check.nonnegative("init_spread", init_spread)
    if unroll is not None and not isinstance(unroll, (bool, np.bool_)):
        raise TypeError(f"unroll must be True, False or None, got {unroll!r}")
    if unroll and thin > MAX_UNROLLED_STEPS:
        raise ValueError(f"unroll=True compiles every step of a block without a loop, so thin "
                         f"must be ≤ {MAX_UNROLLED_STEPS}; got thin={thin}. Thin less (and "
                         "discard draws afterwards), or use predict= with a small thin")
    positions = chain_positions(problem, init, num_chains, init_per_chain, init_spread, seed)
    first = first_point(positions)
    sampler.check(problem, first, num_chains)
    if mesh is not None:
        check_mesh(mesh, num_chains, sampler, problem)
    preflight.preflight(problem, sampler, positions, num_steps, init_spread)
    if unroll is None:
        unroll = (thin <= MAX_UNROLLED_STEPS and jax.default_backend() == "cpu"
                  and has_convolution(problem, first))
    spec = position_spec(positions) if checkpoint else None

    num_draws = (num_steps - burn_in) // thin
    total_draws = burn_in // thin + num_draws  # burn-in runs as draws that are dropped
    # Blocks of the default size are re-sized by wall time after the first one (not those
    # the user chose, nor a stream's, whose data buffers are tied to the block size).
    # (Not with unroll: its blocks are short, and one set of block sizes keeps the rounding,
    # and so the draws, independent of how long the first block took.)
    # Not across processes: each would time its own blocks, and re-cut them differently.
    block_seconds = BLOCK_SECONDS if (draws_per_block is None and problem.stream is None
                                      and not unroll and jax.process_count() == 1) else None
    if draws_per_block is None:
        bytes_per_draw = sum(x.size * x.dtype.itemsize for x in jax.tree.leaves(positions))
        cap = None if checkpoint_every is None else max(1, checkpoint_every // thin)
        if unroll:  # a block is one straight-line program of draws_per_block × thin steps
            cap = min(cap or total_draws, max(1, MAX_UNROLLED_STEPS // thin))
        draws_per_block = default_block_size(total_draws, thin, bytes_per_draw, problem,
                                             sampler.batch_size, cap)
    elif unroll:
        draws_per_block = min(draws_per_block, max(1, MAX_UNROLLED_STEPS // thin))
    settings = Settings(num_steps, burn_in, thin, seed, num_chains, prng,
                        min(draws_per_block, total_draws), checkpoint, checkpoint_every,
                        stream_to, block_seconds, bool(store_draws), float(init_spread),
                        bool(unroll), bool(diagnose),
                        uuid.uuid4().hex if checkpoint or stream_to else "")
    states = _state_shapes(problem, sampler, positions, settings)
    if predict is not None:
        preflight.predict_output(problem, sampler, states, predict)
    kept = keep_mask(sampler, burn_in, num_draws, thin)
    preflight.check_kept(sampler, settings, kept)
    check_run_memory(problem, sampler, states, settings,
                     stored_total(stored_mask(sampler, settings, kept)))
    with claim(checkpoint, overwrite, settings.run_id):
        result = start(problem, sampler, positions, settings, progress, mesh, spec,
                       predict=predict, kept=kept)
    if diagnose:
        _post_run_checks(result)
    return result


def _state_shapes(problem: Problem, sampler: Kernel, positions: PyTree,
                  settings: Settings) -> PyTree:
    """The chains' initial states' shapes and dtypes (``jax.eval_shape`` of
    :func:`init_chains`, ~2 ms of tracing), remembered per problem, sampler structure and
    shapes (:mod:`sgmc.run.cache`): the keys' values do not matter, only how many and of
    which generator."""
    parts = cache.signature((sampler, positions))
    key = None if parts is None else (parts, settings.num_chains, settings.prng)
    return cache.remember("init_states", problem, key, lambda: jax.eval_shape(
        init_chains, problem, sampler, positions, chain_keys(settings)[0]))


def start(problem: Problem, kernel: Kernel, positions: PyTree, settings: Settings,
          progress: bool | None = False, mesh: Mesh | None = None, spec: dict | None = None,
          divergence: str = "raise", predict: Any = None,
          kept: np.ndarray | None = None) -> Result:
    """Start a run whose arguments are already validated: every chain's initial state from
    its position (stacked on a leading chain axis), then the host loop. ``minimize`` runs
    its replications through here too (``divergence="continue"``: a non-finite iterate is a
    bad value, not an error). ``kept``: the run's :func:`sgmc.run.plan.keep_mask`, when the
    caller computed it already."""
    t_start = time.perf_counter()
    init_keys, _ = chain_keys(settings)
    states = init_chains(problem, kernel, positions, init_keys)
    init_evals = int(kernel.init_evals(problem))
    counters = Counters.start(settings.num_chains, init_evals)
    moments = None if predict is None else Moments.start(
        settings.num_chains, preflight.predict_output(problem, kernel, states, predict))
    mask = stored_mask(kernel, settings, kept)
    total = stored_total(mask)
    sink = (DiskSink(settings.stream_to, total, run=settings.run_id) if settings.stream_to
            else MemorySink(total))
    run = Run(problem, kernel, settings, sink, (states, counters, 0, 0), spec, mesh,
              compile_time=time.perf_counter() - t_start, divergence=divergence,
              predict=predict, moments=moments, mask=mask)
    return execute(run, progress)


def resume(path: str | os.PathLike, problem: Problem, sampler: Kernel,
           progress: bool | None = None, mesh: Mesh | None = None,
           like: PyTree = None, predict: Any = None) -> Result:
    """Continue the run saved in checkpoint ``path`` to its end and return its complete Result.

    The draws (and every per-draw statistic) are bitwise those of the same run made without
    interruption. A checkpoint stores the state but not the code, so ``problem`` and
    ``sampler`` are passed again; they must be the ones the run was started with (same
    model, data, sampler kind and hyper-parameters — checked by fingerprint, and the model's
    energy and gradient at the stored position on the first rows of data by a probe,
    :func:`sgmc.io.checkpoint.probe`). Checkpoints
    keep being written to ``path`` as the run goes on. The draws the checkpoint counts are
    read from where the run wrote them — its ``stream_to`` folder, or the folder
    ``PATH.draws`` written next to the first checkpoint (the header names it relative to the
    checkpoint, so the two move together) — which must still be there, and are verified
    against the checksums written with them; draws written after the checkpoint (by a run
    that went on before it was killed) are ignored and made again. A finished run's
    checkpoint returns its Result at once. ``mesh`` places the rest of the run on devices as
    in :func:`sample` (it need not be the mesh the run started on).

    Positions made of dicts, lists and tuples are rebuilt from the checkpoint alone; other
    pytrees (namedtuples, dataclasses, Equinox modules, Flax NNX states) need ``like``: any
    pytree of one position's structure, e.g. the run's ``init`` (its leaves are not read;
    leaves are matched by name, shapes and dtypes come from the checkpoint).

    A run started with ``predict`` resumes with the same function (its moments so far are
    in the checkpoint; a resumed run's ``Result.predictive`` is the uninterrupted run's):
    the checkpoint stores its value at chain 0's draw, which ``predict`` must reproduce.

    Raises:
        sgmc.CheckpointError: ``path`` is not a checkpoint, holds positions that need
            ``like`` (or ``like`` does not fit them), is truncated or corrupted (the
            previous checkpoint ``PATH.prev`` is named if it is intact), or was written for
            a different problem or sampler (also a same-named model function with another
            body: the message shows the stored and the found energy or gradient), or with
            another ``predict`` (its value at the checkpointed draw differs); or its draws'
            folder, or a file in it, is missing, misshapen, altered or another run's
            (named).
        ValueError: the run is unfinished and no file can be created next to ``path`` or in
            its draws' folder, another live run holds ``path`` (``PATH.lock``), or the rest
            of the run cannot fit in memory (before anything is compiled).
        sgmc.DivergenceError, sgmc.Interrupted, sgmc.StorageError, sgmc.DataError: as in
            :func:`sample`.
    """
    require_problem(problem)
    path = os.fspath(path)
    header, arrays = ckpt.read(path)
    settings, states, counters, moments = restore(path, header, arrays, problem, sampler,
                                                  like, predict)
    if mesh is not None:
        check_mesh(mesh, settings.num_chains, sampler, problem)
    # The draws: the run's stream, or the checkpoint's own stream folder (read back into
    # memory); its first `count` draws are verified against their checksums.
    template = (jax.eval_shape(jax.vmap(drawn(problem, sampler)), states)
                if settings.store_draws else ())  # else the drift statistics alone
    count = int(header["kept"])
    mirror = None
    mask = stored_mask(sampler, settings)
    total = stored_total(mask)
    if mask is None:
        folder, sink = None, MemorySink(0)
    elif settings.stream_to:
        folder = settings.stream_to
        sink = DiskSink(folder, total, count, template, settings.run_id)
    else:
        folder = draws_folder(path, header)
        mirror = DiskSink(folder, total, count, template, settings.run_id)
        sink = MemorySink(total)
        if count:
            sink.append(*mirror.arrays())
    goes_on = int(header["t0"]) < settings.num_steps
    if goes_on:  # the run goes on: it writes there
        preflight.writable("path", path, os.path.dirname(os.path.abspath(path)))
        if folder is not None and os.path.isdir(folder):
            preflight.writable("path", path, folder)
        check_run_memory(problem, sampler, states, settings, total)
    cursor = (states, counters, int(header["t0"]), 0)
    run = Run(problem, sampler, settings, sink, cursor, header["positions"], mesh,
              compile_time=float(header["compile_time"]),
              sampling_time=float(header["sampling_time"]), mirror=mirror,
              last_checkpoint=path, predict=predict, moments=moments, mask=mask)
    with claim(path if goes_on else None, run=settings.run_id, resuming=True):
        result = execute(run, progress)
    if settings.diagnose:
        _post_run_checks(result)
    return result


def _post_run_checks(result: Result) -> None:
    """The warnings ``diagnose=True`` ends a run with (at the caller of ``sample``/``resume``):
    drift of the kept draws' statistics; a control variate that cannot help."""
    stationarity.warn_if_not_stationary(result, stacklevel=3)
    warn_if_cv_cannot_help(result, stacklevel=3)
