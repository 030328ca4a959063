"""Errors raised by sgmc runs."""

from __future__ import annotations

from typing import Any

__all__ = ["CheckpointError", "DivergenceError", "Interrupted"]


class DivergenceError(FloatingPointError):
    """A chain's state became non-finite (NaN or inf).

    Attributes:
        step: the number of steps taken when the first chain's state became non-finite.
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
            f"{where} diverged (non-finite state) at step {self.step}; "
            f"{n} draws per chain kept before it are in .result. A smaller step size "
            "(or, for SGHMC, a larger friction · step size margin) usually helps.")


class Interrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C) between two blocks of steps.

    A subclass of :class:`KeyboardInterrupt`, so an interrupted script still stops unless
    it catches this.

    Attributes:
        step: the number of steps every chain had completed.
        result: an :class:`sgmc.Result` with every draw kept up to ``step``.
        checkpoint: the path of the checkpoint written at ``step`` (when the run had
            ``checkpoint=``), from which :func:`sgmc.resume` continues; else None.
    """

    def __init__(self, step: int, result: Any, checkpoint: str | None) -> None:
        self.step = int(step)
        self.result = result
        self.checkpoint = checkpoint
        n = result.num_draws if result is not None else 0
        then = (f"; sgmc.resume({checkpoint!r}, problem, sampler) continues the run"
                if checkpoint else "")
        super().__init__(f"sampling interrupted after step {self.step}; the {n} draws per "
                         f"chain kept so far are in .result{then}")


class CheckpointError(ValueError):
    """A checkpoint file cannot be used: not a checkpoint, truncated or corrupted, or
    written by a run of a different problem or sampler."""
