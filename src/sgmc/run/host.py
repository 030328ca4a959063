"""The host loop: runs a planned run block by block, and hands each block to its sinks.

Between blocks — never per step — the host stores the block's kept draws (those after
burn-in that ``kernel.keeps`` allows, :func:`sgmc.run.plan.keep_mask`; none with
``store_draws=False``) in memory, or streamed to ``.npy`` files (:mod:`sgmc.io.sinks`),
updates the progress bar, checks for divergence and writes checkpoints. Streamed data are
read by a thread one block ahead. A Ctrl-C, a divergence or a failed write raises an error
that carries every draw kept so far.

Two blocks are in flight: block k + 1 is dispatched before the host takes block k's draws
(their copy to the host started as block k was dispatched: into pinned memory on an
accelerator, :func:`sgmc.run.programs.to_host_async`), so the copy, the sink's write, the
divergence check and the checkpoints overlap the device's work instead of stalling it.
(When the first block's time re-cuts a run's blocks, the block in flight then keeps the old
size and the rest are cut after it.) What the
error of a divergence, a failed block or a Ctrl-C holds is unchanged: the draws up to the
block it answers, never the one dispatched after it, which is dropped.

A Ctrl-C while a block runs is answered once that block is stored (its draws are kept);
a second Ctrl-C before then stops at once, without that block.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, NamedTuple

import jax
import numpy as np

from sgmc.errors import DataError, DivergenceError, Interrupted, RunError, StorageError
from sgmc.io import checkpoint as ckpt
from sgmc.io.sinks import DiskSink
from sgmc.result import Result, pool_moments
from sgmc.run import snapshot
from sgmc.run.loop import drawn
from sgmc.run.mesh import auto_axes, put, shardings, split_data, to_host
from sgmc.run.plan import (
    Block,
    block_plan,
    chain_keys,
    draws_after,
    draws_for_seconds,
    kept_by,
    kept_in,
    stored_mask,
    stored_total,
)
from sgmc.run.programs import compile_programs, host_block, select, to_host_async
from sgmc.run.signals import DeferredInterrupt, want_progress

__all__ = ["Cursor", "Run", "execute"]

PyTree = Any

class Cursor(NamedTuple):
    """Where a run stands: the chains' states and counters, the steps done, the index of
    the next block in ``Run.plan``, and the running predictive moments (None without
    ``predict``)."""

    states: Any
    counters: Any
    step: int
    block: int
    moments: Any = None


class Run:
    """A run in progress: its fixed parts, where its draws go, and where it stands.

    ``cursor`` (a :class:`Cursor`; given as (states, counters, steps done, ...)) is
    replaced in one assignment after each block, so a Ctrl-C never sees half an update; the
    sink may then hold one block more than the cursor accounts for, which :meth:`kept`
    lets us drop. ``plan`` holds the blocks from the step where this process started (or
    last re-sized its blocks, :meth:`replan`) to the end.

    A run with ``checkpoint`` whose draws stay in memory also appends them, at each
    checkpoint, to ``mirror``: a stream folder (``PATH.draws`` unless the run resumed one;
    its files are created, space reserved, before sampling) that the checkpoints refer to,
    so that a checkpoint costs the state and the new draws.
    ``last_checkpoint`` is the last complete checkpoint (the one a resumed run started from,
    until it writes one).

    With ``predict`` (a function of one draw), ``cursor.moments`` holds the chains'
    running moments of it (:class:`sgmc.run.moments.Moments`; None without), carried by the
    compiled blocks and checkpointed with the states. ``mask`` is :func:`stored_mask`.
    """

    def __init__(self, problem, sampler, settings, sink, cursor, position_spec, mesh=None,
                 compile_time=0.0, sampling_time=0.0, divergence="raise", mirror=None,
                 last_checkpoint=None, predict=None, moments=None, mask=None):
        self.problem, self.sampler, self.settings = problem, sampler, settings
        self.sink, self.position_spec = sink, position_spec
        self.predict = predict
        self.mask = stored_mask(sampler, settings) if mask is None else mask
        # The kept draws' steps for the loop's predictive moments: lo ≤ t < hi.
        self.window = np.asarray([settings.burn_in,
                                  settings.burn_in + settings.thin * settings.num_draws],
                                 np.int32)
        self.cursor = Cursor(*cursor[:3], 0, moments)
        self.compile_time, self.sampling_time = compile_time, sampling_time
        self.divergence = divergence  # "raise" a DivergenceError, or "continue"
        if (mirror is None and settings.checkpoint and not settings.stream_to
                and self.mask is not None):
            mirror = DiskSink(os.path.abspath(settings.checkpoint) + ".draws",
                              stored_total(self.mask), run=settings.run_id)
        self.mirror = mirror
        self.last_checkpoint = last_checkpoint
        self.draws_per_block = settings.draws_per_block
        self.plan = self._plan(self.cursor.step)
        # The run's index of plan[0]: a streamed run's block i reads data buffer i.
        self.first_block = len(self._plan(0)) - len(self.plan)
        self.run_keys = chain_keys(settings)[1]
        self.placement, self.put_data = None, jax.device_put
        self.given = (problem, sampler)  # as passed: what a checkpoint's fingerprint is of
        if mesh is not None:
            mesh = auto_axes(mesh)
            on_states, on_chains = shardings(mesh, sampler, self.cursor.states)
            self.placement = (on_states, on_chains)
            problem, on_problem = split_data(mesh, problem)
            self.problem = put(problem, on_problem)
            self.put_data = partial(put, sharding=on_problem)
            self.run_keys = put(self.run_keys, on_chains)
            states, counters = self.place(self.cursor.states, self.cursor.counters)
            self.cursor = self.cursor._replace(states=states, counters=counters,
                                               moments=self.place_moments(moments))

    def _plan(self, start: int) -> list[Block]:
        s = self.settings
        trailing = (s.num_steps - s.burn_in) % s.thin
        return block_plan(s.burn_in, s.num_draws, s.thin, trailing, self.draws_per_block,
                          start)

    def replan(self, draws_per_block: int) -> None:
        """Cut the rest of the run into blocks of ``draws_per_block`` draws (same draws)."""
        self.draws_per_block = draws_per_block
        self.plan = self._plan(self.cursor.step)
        self.cursor = self.cursor._replace(block=0)

    def place(self, states, counters):
        """States and counters where the mesh wants them. The partitioner may return a
        block's states sharded differently from how they went in (it splits what it can);
        the compiled block program needs them exactly as it was compiled for."""
        if self.placement is None:
            return states, counters
        return put((states, counters), (self.placement[0], self.placement[1]))

    def place_moments(self, moments):
        """The predictive moments (leaves (chains, ...)) split over the mesh's chains."""
        if self.placement is None or moments is None:
            return moments
        return put(moments, self.placement[1])

    def kept(self) -> int:
        """Draws per chain stored by the steps the cursor accounts for."""
        s = self.settings
        if self.mask is None:
            return 0
        return kept_by(self.cursor.step, s.burn_in, s.num_draws, s.thin, self.mask)

    def kept_in(self, block: Block, t0: int) -> np.ndarray:
        """Indices within ``block`` (from step ``t0``) of the draws it stores."""
        if self.mask is None:
            return np.zeros(0, np.int64)
        return kept_in(block, t0, self.settings.burn_in, self.settings.thin, self.mask)

    def result(self, max_step: int | None = None) -> Result:
        states, counters = self.cursor.states, self.cursor.counters
        s = self.settings
        parts = self.sink.arrays()
        samples, info, steps = parts if parts is not None else ((), {}, np.zeros(0, np.int64))
        if max_step is not None:  # steps increase: a slice, no copy of memory-mapped draws
            keep = slice(int(np.searchsorted(steps, max_step, side="right")))
            samples = jax.tree.map(lambda x: x[:, keep], samples)
            info, steps = {k: v[:, keep] for k, v in info.items()}, steps[keep]
        if parts is None or not s.store_draws:  # no draw: arrays of the right trailing shapes
            samples = jax.tree.map(lambda x: np.zeros((x.shape[0], 0, *x.shape[1:]), x.dtype),
                                   jax.eval_shape(jax.vmap(drawn(self.problem,
                                                                 self.sampler)), states))
            steps = np.zeros(0, np.int64)  # store_draws=False: the drift statistics alone
            info.setdefault("grad_evals", np.zeros((counters.bad_step.shape[0], 0), np.int64))
        total = ((to_host(counters.evals_hi).astype(np.int64) << 32)
                 + to_host(counters.evals_lo).astype(np.int64))
        meta = {"num_steps": s.num_steps, "burn_in": s.burn_in, "thin": s.thin,
                "seed": s.seed, "num_chains": s.num_chains, "prng": s.prng}
        if s.checkpoint:
            meta["checkpoint"] = s.checkpoint
        if s.stream_to:
            meta["stream_to"] = s.stream_to
        if s.run_id:  # what its checkpoints and draws folder are bound to
            meta["run_id"] = s.run_id
        if not s.store_draws:
            meta["store_draws"] = False
        if s.init_spread:
            meta["init_spread"] = s.init_spread
        if s.unroll:
            meta["unroll"] = True
        meta.update(self.sampler.meta())
        meta.update(compile_time=self.compile_time, sampling_time=self.sampling_time,
                    sampler=self.sampler.name, draws_per_block=self.draws_per_block,
                    num_data=self.problem.num_data, grad_evals_total=total.tolist())
        if self.divergence == "continue":  # minimize: which chains went non-finite, and when
            bad = to_host(counters.bad_step)
            meta["diverged_step"] = np.where(bad >= 0, bad + 1, -1).tolist()
        moments = self.cursor.moments
        predictive = None if moments is None else pool_moments(
            *(to_host(x) for x in (moments.count, moments.mean, moments.m2)))
        return Result(samples, {"grad_evals": info["grad_evals"], "step": steps,
                                **{k: v for k, v in info.items() if k != "grad_evals"}},
                      meta, final_state=states, predictive=predictive)

    def save_checkpoint(self) -> str:
        """Write a checkpoint at the cursor: the state, and where the draws are — the stream,
        or the mirror, to which the draws kept since the previous checkpoint are appended
        first. Returns its path.

        Raises:
            StorageError: a write failed (the draws kept so far are in its result).
        """
        states, counters, t0, _, moments = self.cursor
        leaves = jax.tree.leaves((states, counters, moments))
        arrays = {f"state/{i}": to_host(x) for i, x in enumerate(leaves)}
        count = self.kept()
        path = self.settings.checkpoint
        try:
            self.sink.truncate(count)
            mirror = self.mirror
            if mirror is not None and count != mirror.count:
                mirror.truncate(count)
                a = mirror.count
                if count > a:  # the draws since the previous checkpoint
                    samples, info, steps = self.sink.arrays()
                    mirror.append(jax.tree.map(lambda x: x[:, a:count], samples),
                                  {k: v[:, a:count] for k, v in info.items()}, steps[a:count])
            folder = None if mirror is None else os.path.relpath(
                mirror.folder, os.path.dirname(os.path.abspath(path)))
            header = snapshot.header(self, states, t0, count, folder, moments, len(leaves))
            ckpt.write(path, header, arrays)
        except OSError as err:
            raise self.storage_error(err) from err
        self.last_checkpoint = path
        return path

    def store(self, write, *args) -> None:
        """``write(*args)``, a sink's write; an OSError becomes a StorageError."""
        try:
            write(*args)
        except OSError as err:
            raise self.storage_error(err) from err

    def failed(self, error: type, cause: Exception) -> Exception:
        """The ``error`` (DataError: streamed data failed their checks; RunError: a block
        failed at run time) with the draws kept so far and the last checkpoint."""
        self.sink.truncate(self.kept())
        return error(self.cursor.step, self.result(), self.last_checkpoint, cause)

    def storage_error(self, err: OSError) -> StorageError:
        """The error for a failed write: the draws kept so far (as the sink counts them, up
        to the cursor), the last complete checkpoint, the file and the cause."""
        good = self.last_checkpoint
        if good and not os.path.exists(good) and os.path.exists(f"{good}.prev"):
            good = f"{good}.prev"  # the write failed between its two renames
        try:
            result = self.result()
        except (OSError, ValueError):  # the stream's files themselves are gone or cut
            result = None
        return StorageError(self.cursor.step, result, good, err.filename, err)


def execute(run: Run, progress: bool | None) -> Result:
    """Run the blocks of ``run`` from where it stands to its end.

    Default blocks (about 1/20 of the run) that take more than twice ``block_seconds`` are
    cut, after the first one (and the one dispatched while it ran), to about ``block_seconds``
    each — one more compiled program —
    so that a Ctrl-C is answered promptly and a crash loses little; checkpoints keep the
    cadence of the original blocks."""
    problem, sampler, s = run.problem, run.sampler, run.settings
    states, counters, t0, _, moments = run.cursor
    every = s.checkpoint_every or s.draws_per_block * s.thin
    last_checkpoint = t0
    sampled_before, paused = run.sampling_time, 0.0
    bar = t_run = None
    timed = s.block_seconds is None  # True once a full block was timed (or never timed)
    per_draw = None  # the timed block's seconds per draw, while a re-cut of the plan waits
    # Streamed data: block i runs on its own buffer, read and put on the device by a
    # thread while block i − 1 runs (block 0's buffer is the problem's own).
    stream = problem.stream
    pool = ThreadPoolExecutor(1) if stream is not None else None

    def buffer(i):
        i += run.first_block
        return problem if i == 0 else problem.with_buffer(i, run.put_data)

    def failure(err: Exception) -> Exception:
        """The error for a block that failed at run time. Streamed rows read for a full pass
        by a host callback failed their checks: the caller sees JAX's error; raise the
        stream's (DataError); any other failure (a predict's callback, memory): RunError."""
        cause = stream.take_failure() if stream is not None else None
        return run.failed(RunError, err) if cause is None else run.failed(DataError, cause)

    def launch(i, states, counters, t0, moments) -> tuple:
        """Dispatch block i (the device runs it while the host goes on) and start the host
        copies of what the host will read of it: (i, t0, kept, outputs, dispatch time).

        Raises:
            ValueError: block i's piece of a stream failed its checks.
        """
        nonlocal upcoming
        n_draws, steps, static, _ = run.plan[i]
        data = problem
        if pool:
            data = upcoming.result()
            if i + 1 < len(run.plan):
                upcoming = pool.submit(buffer, i + 1)
        kept = run.kept_in(run.plan[i], t0)
        t_block = time.perf_counter()
        # NumPy scalars: creating device scalars costs ~0.1 ms each here.
        if static:
            out = programs["full"](data, sampler, states, counters, run.run_keys, np.int32(t0),
                                   moments, run.window)
        else:
            out = programs["partial"](data, sampler, states, counters, run.run_keys,
                                      np.int32(t0), np.int32(n_draws), np.int32(steps),
                                      moments, run.window)
        out[1].bad_step.copy_to_host_async()
        if len(kept):  # (a burn-in block's draws stay on the device)
            out = (*out[:2], to_host_async(out[2]), out[3])
        return i, t0, kept, out, t_block

    interrupt = DeferredInterrupt()
    try:
        upcoming = pool.submit(buffer, 0) if pool else None
        # Compile up front (and only the programs the rest of the plan uses), so that
        # compile_time holds all compilation and sampling_time none.
        args = (problem, sampler, states, counters, run.run_keys, np.int32(0), moments,
                run.window)
        programs = compile_programs(run, args, {})
        # The sinks' arrays or files, for blocks shaped as the program's: a full disk
        # shows here, before any sampling.
        out = getattr(programs.get("full") or programs.get("partial"), "out_info", None)
        if out is not None and run.mask is not None:
            empty = host_block(jax.tree.map(lambda s: np.zeros((s.shape[0], 0, *s.shape[2:]),
                                                                s.dtype), out[2]), 0, 0)
            for sink in (run.sink, run.mirror):
                if sink is not None:
                    run.store(sink.prepare, *empty)
        if want_progress(progress):
            from tqdm.auto import tqdm
            bar = tqdm(total=s.num_steps, initial=t0, desc=sampler.name, unit="step")
        t_run = time.perf_counter()
        interrupt.install()
        nxt = None
        while nxt is not None or run.cursor.block < len(run.plan):
            if nxt is None:
                try:
                    nxt = launch(run.cursor.block, *run.cursor[:3], run.cursor.moments)
                except ValueError as err:  # a piece of the stream failed its checks
                    raise run.failed(DataError, err) from err
                except jax.errors.JaxRuntimeError as err:  # (may show at dispatch)
                    raise failure(err) from err
            i, t0, kept, (states, counters, buf, moments), t_block = nxt
            n_draws, steps, static, drop = run.plan[i]
            placed, moments = run.place(states, counters), run.place_moments(moments)
            done = t0 + n_draws * steps
            # Two blocks in flight: the next one runs while this one's draws come to the host
            # and are stored. Not while a re-cut of the plan waits for the block in flight.
            nxt, deferred = None, None
            if per_draw is None and i + 1 < len(run.plan):
                try:
                    nxt = launch(i + 1, *placed, done, moments)
                except ValueError as err:  # its stream piece failed: raised once i is stored
                    deferred = err
                except jax.errors.JaxRuntimeError:  # (this block failed: raised below)
                    pass
            try:
                host = host_block(buf, drop, n_draws) if len(kept) else None
                if host is not None and len(kept) < n_draws - drop:  # keeps(t) dropped some
                    host = select(host, kept - drop)
                jax.block_until_ready(counters)  # (a burn-in block has no host transfer)
            except jax.errors.JaxRuntimeError as err:
                raise failure(err) from err
            if host is not None:  # sliced on the host: an eager device slice costs more
                run.store(run.sink.append, *host, t0 + steps * (kept + 1))
            run.cursor = Cursor(*placed, done, i + 1, moments)
            bad = to_host(counters.bad_step)
            # (Once this block is on the host: the next one, dispatched meanwhile, runs after
            # it on the device and does not delay it.)
            seconds = time.perf_counter() - t_block
            run.sampling_time = sampled_before + time.perf_counter() - t_run - paused
            if bar is not None:
                bar.update(n_draws * steps)
            if run.divergence == "raise" and (bad >= 0).any():
                chain = int(np.argmin(np.where(bad >= 0, bad, np.iinfo(np.int32).max)))
                step = int(bad[chain]) + 1
                replica = int(to_host(counters.bad_replica)[chain])
                result = run.result(max_step=step - 1)
                # The stream counts what the error holds, not the non-finite draws after.
                run.store(run.sink.truncate, result.num_draws)
                raise DivergenceError(step, chain, result, replica if replica >= 0 else None)
            if deferred is not None:
                raise run.failed(DataError, deferred) from deferred
            if interrupt.pending:  # a Ctrl-C came during the block, which is now stored
                raise KeyboardInterrupt
            if s.checkpoint and (done - last_checkpoint >= every
                                 or run.cursor.block == len(run.plan)):
                run.save_checkpoint()
                last_checkpoint = done
            if not timed and static:
                timed = True
                if seconds > 2 * s.block_seconds:
                    per_draw = seconds / n_draws
            if per_draw is not None and nxt is None:  # (the block in flight is stored)
                n = draws_for_seconds(per_draw, s.block_seconds,
                                      draws_after(done, s.burn_in, s.num_draws, s.thin))
                per_draw = None
                if n <= run.draws_per_block // 2:
                    t_compile = time.perf_counter()
                    run.replan(n)
                    programs = compile_programs(run, args, programs)
                    paused += time.perf_counter() - t_compile
        if interrupt.pending:  # (a Ctrl-C after the last block's check)
            raise KeyboardInterrupt
        interrupt.restore()
    except KeyboardInterrupt:
        interrupt.restore()  # a Ctrl-C while the checkpoint is written stops at once
        if t_run is not None:
            run.sampling_time = sampled_before + time.perf_counter() - t_run - paused
        run.store(run.sink.truncate, run.kept())
        path = run.save_checkpoint() if s.checkpoint else None
        raise Interrupted(run.cursor.step, run.result(), path) from None
    finally:
        interrupt.restore()
        if bar is not None:
            bar.close()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    result = run.result()
    run.store(run.sink.close, result.meta)
    if run.mirror is not None and run.mirror.count == run.sink.count:
        run.store(run.mirror.close, result.meta)  # PATH.draws is then a saved result too
    return result
