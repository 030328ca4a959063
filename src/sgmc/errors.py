"""Errors raised, and warnings given, by sgmc runs."""

from __future__ import annotations

from typing import Any

__all__ = ["CheckpointError", "ControlVariateWarning", "DataError", "DivergenceError",
           "Interrupted", "MemoryWarning", "RunError", "SamplingWarning", "StorageError"]


def _carry(error: BaseException, step: int, result: Any, checkpoint: str | None) -> int:
    """Set what a stopped run's error carries (step, result, checkpoint); the draws per
    chain in ``result``."""
    error.step, error.result, error.checkpoint = int(step), result, checkpoint
    return result.num_draws if result is not None else 0


class DivergenceError(FloatingPointError):
    """A chain's state became non-finite (NaN or inf).

    Attributes:
        step: the number of steps taken when a chain's state was first found non-finite.
            States are checked after every draw (every ``thin`` steps, burn-in's draws
            included), not per step, so it became non-finite within the ``thin`` steps
            before; the draws kept are the same either way.
        chain: the index of that chain.
        replica: for a kernel that stacks replicas (replica exchange), the first replica
            (slot, in the order of its temperatures) whose position became non-finite at
            that step; None for a single-replica kernel.
        result: an :class:`sgmc.Result` with every draw kept before ``step`` (all chains,
            so that the draws stay rectangular); nothing already sampled is lost.
    """

    def __init__(self, step: int, chain: int, result: Any, replica: int | None = None) -> None:
        self.step = int(step)
        self.chain = int(chain)
        self.replica = None if replica is None else int(replica)
        self.result = result
        n = result.num_draws if result is not None else 0
        where = f"chain {self.chain}" + (
            f", replica {self.replica} (slot {self.replica} of the temperature ladder, "
            "0 = coldest)," if self.replica is not None else "")
        super().__init__(
            f"{where} diverged (non-finite state found at step {self.step}); "
            f"{n} draws per chain kept before it are in .result. A smaller step size "
            "(or, for SGHMC, a larger friction · step size margin) usually helps.")


class Interrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C). The run stops once the block of steps under way is
    done and its draws stored (a second Ctrl-C before then stops at once, without that
    block's draws).

    A subclass of :class:`KeyboardInterrupt`, so an interrupted script still stops unless
    it catches this.

    Attributes:
        step: the number of steps every chain had completed.
        result: an :class:`sgmc.Result` with every draw kept up to ``step`` (from
            :func:`sgmc.minimize`: the :class:`sgmc.OptimizeResult` of the steps done).
        checkpoint: the path of the checkpoint written at ``step`` (when the run had
            ``checkpoint=``), from which :func:`sgmc.resume` continues; else None.
    """

    def __init__(self, step: int, result: Any, checkpoint: str | None,
                 message: str | None = None) -> None:
        self.step = int(step)
        self.result = result
        self.checkpoint = checkpoint
        if message is None:  # sgmc.sample's; minimize and warmup say what they hold
            n = result.num_draws if result is not None else 0
            then = (f"; sgmc.resume({checkpoint!r}, problem, sampler) continues the run"
                    if checkpoint else "")
            message = (f"sampling interrupted after step {self.step}; the {n} draws per "
                       f"chain kept so far are in .result{then}")
        super().__init__(message)


class WarmupInterrupted(Interrupted):
    """:func:`sgmc.warmup` was interrupted (Ctrl-C). It carries what the warm-up had found
    when it stopped, so that a new warm-up need not search for the mode again:
    ``sgmc.warmup(problem, sampler, err.mode, optimizer_steps=1, learning_rate=1e-6)``
    starts from it (one negligible Adam step) and redoes the later stages.

    Attributes:
        stage: the stage under way, as :mod:`sgmc.tune.warmup` numbers them: "mode" (1:
            Adam, then Newton), "curvature" (2 and the extremes of 3: the preconditioner,
            the whitened Hessian's λ_min, λ_max), "noise" (3's gradient noise, 4's rules),
            "adapt" (5: the draws of ``adapt_steps`` and the rules again), "check" (6: the
            self-check's pilots, then the starts).
        mode: the point found by the mode search (on the model's scale), or None if it
            had not finished.
        curvature: (λ_min, λ_max) of the Hessian whitened by ``preconditioner``, or None.
        preconditioner: the preconditioner chosen (after stage 5's draws, theirs), or None.
        passes: the data passes spent per stage.
        step: 0; result and checkpoint: None (no draw of a warm-up is kept).
    """

    def __init__(self, stage: str, mode: Any = None, curvature: Any = None,
                 preconditioner: Any = None, passes: dict | None = None,
                 message: str | None = None) -> None:
        self.stage = stage
        self.mode = mode
        self.curvature = curvature
        self.preconditioner = preconditioner
        self.passes = dict(passes or {})
        super().__init__(0, None, None, message or f"warmup interrupted in its {stage} stage")


class CheckpointError(ValueError):
    """A checkpoint file cannot be used: not a checkpoint, truncated or corrupted, or
    written by a run of a different problem or sampler."""


class DataError(ValueError):
    """A piece of streamed data failed its checks as it was read, part-way through a run
    (non-finite values, integers beyond int32, a source returning the wrong rows): the run
    stops, and nothing it kept before is lost. The stream's own error, which names the rows
    by their index in the source, is the ``__cause__`` and gives the message.

    Attributes:
        step: the number of steps every chain had completed.
        result: an :class:`sgmc.Result` with every draw kept up to ``step`` (all chains).
        checkpoint: the path of the last complete checkpoint, or None.
    """

    def __init__(self, step: int, result: Any, checkpoint: str | None,
                 cause: Exception) -> None:
        n = _carry(self, step, result, checkpoint)
        super().__init__(f"{cause}; the run stopped after step {self.step} and the {n} draws "
                         "per chain kept so far are in .result")


class StorageError(OSError):
    """Writing the run's draws or a checkpoint failed (a full disk, a read-only or removed
    folder, a quota): the run stops, and nothing it kept before the failed write is lost.

    The underlying :class:`OSError` is the ``__cause__`` (its ``errno`` is copied here).

    Attributes:
        step: the number of steps every chain had completed when the write failed.
        result: an :class:`sgmc.Result` with every draw kept up to ``step`` (all chains):
            in memory, or, with ``stream_to``, read-only memory maps of the draws already on
            disk (a block whose write failed is not part of it).
        checkpoint: the path of the last complete checkpoint, from which
            :func:`sgmc.resume` continues once space is freed; None if the run had not
            written one.
        path: the file whose write failed.
    """

    def __init__(self, step: int, result: Any, checkpoint: str | None, path: str | None,
                 cause: OSError) -> None:
        self.step = int(step)
        self.result = result
        self.checkpoint = checkpoint
        self.path = path
        n = result.num_draws if result is not None else 0
        reason = cause.strerror or str(cause) or type(cause).__name__
        then = (f"; free space (or fix the folder) and sgmc.resume({checkpoint!r}, problem, "
                "sampler) continues the run from its last checkpoint" if checkpoint else
                "; no checkpoint was written: free space (or fix the folder) and run again")
        super().__init__(f"writing {path or 'a file'} failed: {reason}; the run stopped after "
                         f"step {self.step} and the {n} draws per chain kept so far are in "
                         f".result{then}")
        self.errno = cause.errno  # (strerror stays unset: str() is the message above)


class RunError(RuntimeError):
    """A compiled block of the run failed at run time (XLA raised: a ``predict`` or model
    function whose host callback failed, a device out of memory): the run stops, and nothing
    stored before that block is lost. XLA's error is the ``__cause__``.

    Attributes:
        step: the number of steps every chain had completed before the failed block.
        result: an :class:`sgmc.Result` with every draw kept up to ``step`` (all chains).
        checkpoint: the path of the last complete checkpoint, or None.
    """

    def __init__(self, step: int, result: Any, checkpoint: str | None,
                 cause: Exception) -> None:
        n = _carry(self, step, result, checkpoint)
        then = (f"; sgmc.resume({checkpoint!r}, problem, sampler) continues from the last "
                "checkpoint once the cause is fixed" if checkpoint else "")
        lines = [x.strip() for x in str(cause).strip().splitlines() if x.strip()] or [""]
        first = lines[0].replace(" Traceback (most recent call last):", "")  # XLA's, then
        first += f" … {lines[-1]}" if len(lines) > 1 else ""  # the Python error's last line
        super().__init__(f"a block of the run (its model, sampler or predict) failed after "
                         f"step {self.step}: "
                         f"{type(cause).__name__}: {first}; the {n} draws per chain kept "
                         f"so far are in .result{then}")


class MemoryWarning(UserWarning):
    """A run whose kept draws will take a large part of the memory available (see
    :func:`sgmc.run.preflight.check_memory`): it may be killed by the operating system
    before it ends, losing what it has not written. The message gives the sizes and the
    ways to keep fewer draws in memory (``thin``, ``store_draws=False`` with ``predict=``,
    ``stream_to=``)."""


class SamplingWarning(UserWarning):
    """A run (or warm-up) that finished but whose draws may not be what was asked for: its
    message names the statistic, its size ± standard error, and what to try.

    :func:`sgmc.sample` ends with one when the drift test of its kept draws' statistics
    (log prior, training log-likelihood, energy: :meth:`sgmc.Result.diagnose`,
    :mod:`sgmc.stationarity`) finds them not stationary; the message then gives the drift ±
    its standard error and z, and suggests a smaller step, a longer burn-in or
    ``sgmc.warmup(..., check=True)``. Turn it into an error with
    ``warnings.simplefilter("error", sgmc.SamplingWarning)``, or off for one run with
    ``sample(..., diagnose=False)``.
    """


class ControlVariateWarning(SamplingWarning):
    """A replica-exchange run's control-variate swap energies (:func:`sgmc.cv_energy`) had a
    σ̂² at least that of plain minibatch energies at the same states, where swaps happen: the
    control variate cannot help there (:func:`sgmc.kernels.coupling.variance.cv_regime`;
    docs/replica-exchange.md, "When control variates help"). ``sgmc.sample`` and
    ``sgmc.resume`` end with one (unless ``diagnose=False``)."""
