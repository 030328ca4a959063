"""Errors raised by sgmc runs."""

from __future__ import annotations

from typing import Any

__all__ = ["DivergenceError"]


class DivergenceError(FloatingPointError):
    """A chain's state became non-finite (NaN or inf).

    Attributes:
        step: the number of steps taken when the first chain's state became non-finite.
        chain: the index of that chain.
        result: an :class:`sgmc.Result` with every draw kept before ``step`` (all chains,
            so that the draws stay rectangular); nothing already sampled is lost.
    """

    def __init__(self, step: int, chain: int, result: Any) -> None:
        self.step = int(step)
        self.chain = int(chain)
        self.result = result
        n = result.num_draws if result is not None else 0
        super().__init__(
            f"chain {self.chain} diverged (non-finite state) at step {self.step}; "
            f"{n} draws per chain kept before it are in .result. A smaller step size "
            "(or, for SGHMC, a larger friction · step size margin) usually helps.")
