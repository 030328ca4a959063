"""Block planning: how a run's steps are cut into compiled blocks.

Burn-in runs as draws at the run's ``thin`` that are dropped on the host, so burn-in blocks
are full blocks of the one static-length program (:func:`sgmc.driver.loop.run_block`), and a
block may hold burn-in draws followed by kept ones. The draws do not depend on the plan.
"""

from __future__ import annotations

import math
from typing import NamedTuple

__all__ = ["BLOCK_BYTES", "BLOCK_SECONDS", "TARGET_BLOCKS", "Block", "block_plan",
           "default_draws_per_block", "draws_after", "draws_for_seconds", "kept_by"]

#: Upper bound on the device memory of one block's draw buffer.
BLOCK_BYTES = 64 * 2**20
#: Blocks per run when the user does not choose (progress granularity).
TARGET_BLOCKS = 20
#: After the first block, default blocks are cut to about this many seconds, so that a
#: Ctrl-C is answered (and a crash loses) at most that much work.
BLOCK_SECONDS = 1.0


class Block(NamedTuple):
    """One compiled call: ``draws`` draws of ``steps`` steps each; ``full`` runs the
    static-length program; the first ``drop`` draws are burn-in (dropped on the host)."""

    draws: int
    steps: int
    full: bool
    drop: int


def default_draws_per_block(total_draws: int, cap: int) -> int:
    """About 1/20 of the draws (burn-in's included) per block, at most ``cap``: if possible a
    divisor of ``total_draws`` within a factor 2 of that, so that every block is full and
    one compiled program runs them all (a partial block compiles a second program)."""
    target = max(1, min(cap, total_draws // TARGET_BLOCKS))
    lo, hi = (target + 1) // 2, min(cap, 2 * target)
    near = [d for i in range(1, math.isqrt(total_draws) + 1) if total_draws % i == 0
            for d in (i, total_draws // i) if lo <= d <= hi]
    return min(near, key=lambda d: (abs(math.log(d / target)), -d)) if near else target


def block_plan(burn_in: int, num_draws: int, thin: int, trailing: int,
               draws_per_block: int, start: int = 0) -> list[Block]:
    """The run's blocks, in order (module docstring), from step ``start`` (0, or where an
    earlier block of any plan ended). Only the leftovers run in the program of traced
    length: the ``burn_in % thin`` steps before the first draw, a partial last block, and
    the steps after the last draw. With ``thin = 1`` that is at most the partial block,
    which the default block size avoids when it can.
    """
    burn_draws, head = divmod(burn_in, thin)
    total = burn_draws + num_draws
    plan = [Block(1, head, False, 1)] if head and start < head else []
    first = max(0, start - head) // thin  # draws (burn-in's included) done before start
    for d in range(first, total, draws_per_block):
        n = min(draws_per_block, total - d)
        plan.append(Block(n, thin, n == draws_per_block, max(0, burn_draws - d)))
    if trailing and start <= head + thin * total:
        plan.append(Block(1, trailing, False, 1))
    return plan


def _draws_by(step: int, burn_in: int, num_draws: int, thin: int) -> tuple[int, int]:
    """(draws taken by the end of step ``step``, burn-in's included; burn-in draws): draw j
    is taken after step ``burn_in % thin + thin·(j + 1)``."""
    burn_draws, head = divmod(burn_in, thin)
    return min(max(0, step - head) // thin, burn_draws + num_draws), burn_draws


def kept_by(step: int, burn_in: int, num_draws: int, thin: int) -> int:
    """Draws per chain kept by the end of step ``step``."""
    done, burn_draws = _draws_by(step, burn_in, num_draws, thin)
    return max(0, done - burn_draws)


def draws_after(step: int, burn_in: int, num_draws: int, thin: int) -> int:
    """Draws (burn-in's included) still to take after step ``step``."""
    done, burn_draws = _draws_by(step, burn_in, num_draws, thin)
    return burn_draws + num_draws - done


def draws_for_seconds(seconds_per_draw: float, target: float, remaining: int) -> int:
    """Draws per block so that a block takes about ``target`` seconds at the measured speed:
    preferably a divisor of the ``remaining`` draws in [n/2, n] (every block full, one
    compiled program), else n."""
    n = max(1, min(remaining, int(target / max(seconds_per_draw, 1e-12))))
    near = [d for i in range(1, math.isqrt(remaining) + 1) if remaining % i == 0
            for d in (i, remaining // i) if (n + 1) // 2 <= d <= n]
    return max(near) if near else n
