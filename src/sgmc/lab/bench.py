"""Speed benchmarks: the code behind ``sgmc bench`` (and ``benchmarks/bench_core.py``).

Every number is measured in one process and reported next to a baseline timed in the same
process: each variant is compiled and run once first (warm-up), the repeats of the variants
being compared are interleaved (A B C … A B C …) so machine drift hits all of them alike,
every timing stops at ``block_until_ready`` (``sgmc.sample`` returns host arrays), and the
**best** repeat is reported, with ratios taken best ÷ best. Nothing here asserts a time.

Suites (``--only NAME``):

``blackjax``
    SGLD and SGHMC on Bayesian logistic regression (``sgmc.models.logistic_regression`` on
    ``synthetic_logistic_data``), one chain, every draw kept, against BlackJAX 1.x run
    (a) as its documentation shows — a Python loop over ``jax.jit(algorithm.step)`` — and
    (b) inside a hand-written ``lax.scan`` over the same step. Both BlackJAX variants draw
    the minibatch on the device inside the jitted function with sgmc's own key derivation,
    use the same model functions (``post.loglik``, ``post.logprior``) through
    ``blackjax.sgmcmc.gradients.grad_estimator``, and keep every draw. SGLD uses
    ``blackjax.sgld(...).step`` (its draws equal sgmc's: checked). SGHMC carries (θ, p)
    through BlackJAX's integrator ``blackjax.sgmcmc.diffusions.sghmc``: the top-level
    ``blackjax.sghmc`` redraws the momentum at every call, and with one inner step per call
    its gradient is dead code, so it would not be the same work (its documented default of
    10 inner steps per minibatch is timed for reference). Issue targets: sgmc ≥ 4× faster
    than (a), no slower than (b).
``torch``
    The same SGLD problem as a PyTorch eager loop (closed-form gradient), if torch imports.
``scaling``
    Time per step of ``sgmc.sample`` (SGLD) against N, d, batch size and number of chains,
    with the memory of each run: data, sampler state and draws (bytes), and the process's
    peak resident set size after the run.
``fullpass``
    The cost of the full data passes behind SVRG snapshots (in memory, and streamed from
    memory-mapped files by :class:`sgmc.Stream`), the SAGA table and control-variate swap
    energies (VR-reSGLD), in units of one SGLD step, and the amortised per-step cost of the
    samplers that use them.
``nn``
    A neural network sampled at the speed of SGD (:mod:`sgmc.lab.bench_nn`): SGLD, SGHMC,
    SVRG-HMC and EWSG on a Flax MLP and a small CNN against an optax SGD loop and SGD plus
    one Gaussian draw per step, the shares of SGHMC's step, XLA's cost analysis, what
    keeping no, one, ten or every draw costs on MLPs of 79.5k, 1.8M and 36.8M parameters and
    the CNN (:mod:`sgmc.lab.bench_nn_sizes`), and the peak RSS of runs of 1e4 and 1e5 steps.
    Needs Flax (``pip install 'sgmc[nn]'``).

The code: the suites in :mod:`sgmc.lab.bench_compare` (``blackjax``, ``torch``),
:mod:`sgmc.lab.bench_scaling` (``scaling``, ``fullpass``) and :mod:`sgmc.lab.bench_nn`
(``nn``); their sizes (:class:`BenchConfig`), the timing harness and the table printer in
:mod:`sgmc.lab.bench_common`, re-exported here; this module runs the suites.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

import jax

from sgmc.lab.bench_common import (
    FULL,
    QUICK,
    BenchConfig,
    CompileCounter,
    best,
    device_variant,
    interleaved,
    load_average,
    loop_variant,
    median,
    peak_rss_mib,
    sgmc_keys,
    sgmc_variant,
    source_version,
    tree_nbytes,
    verdict,
)
from sgmc.lab.bench_compare import bench_blackjax, bench_torch
from sgmc.lab.bench_nn import bench_nn
from sgmc.lab.bench_nn_sizes import bench_sizes
from sgmc.lab.bench_scaling import bench_fullpass, bench_scaling

__all__ = ["FULL", "QUICK", "SUITES", "BenchConfig", "CompileCounter", "best", "device_variant",
           "interleaved", "load_average", "loop_variant", "main", "median", "peak_rss_mib",
           "run", "sgmc_keys", "sgmc_variant", "source_version", "tree_nbytes", "verdict"]


SUITES = ("blackjax", "torch", "scaling", "fullpass", "nn")


# --------------------------------------------------------------------------------------
# Entry points.
# --------------------------------------------------------------------------------------

def _nn_suite(cfg: BenchConfig) -> dict[str, Any]:
    """The nn suite: :mod:`sgmc.lab.bench_nn`, then its size ladder
    (:mod:`sgmc.lab.bench_nn_sizes`, which builds on it), under ``"sizes"``."""
    out = bench_nn(cfg)
    if out and "models" in out and cfg.nn_sizes:  # (empty when flax is missing)
        out["sizes"] = bench_sizes(cfg)
    return out


_RUNNERS: dict[str, Callable[[BenchConfig], dict[str, Any]]] = {
    "blackjax": bench_blackjax, "torch": bench_torch, "scaling": bench_scaling,
    "fullpass": bench_fullpass, "nn": _nn_suite}


def run(quick: bool = False, only: Sequence[str] | None = None,
        json_path: str | os.PathLike | None = None,
        config: BenchConfig | None = None) -> dict[str, Any]:
    """Run the benchmark suites, print their tables and return the numbers.

    Args:
        quick: the tiny configuration (``QUICK``) instead of ``FULL``.
        only: names of the suites to run, from :data:`SUITES`; default all.
        json_path: also write the numbers there as JSON.
        config: explicit sizes (overrides ``quick``).
    """
    names = list(SUITES) if not only else list(dict.fromkeys(only))
    bad = [s for s in names if s not in SUITES]
    if bad:
        raise ValueError(f"only must name suites from {', '.join(SUITES)}; got {bad}")
    cfg = config if config is not None else (QUICK if quick else FULL)
    if not isinstance(cfg, BenchConfig):
        raise TypeError(f"config must be a BenchConfig, got {type(cfg).__name__}")
    t0 = time.perf_counter()
    meta = {"jax": jax.__version__, "backend": jax.default_backend(),
            "devices": len(jax.devices()), "cpus": os.cpu_count(), "sgmc": source_version(),
            "mode": "quick" if cfg == QUICK else "full" if cfg == FULL else "custom",
            "load_start": load_average(), "config": asdict(cfg)}
    print(f"sgmc bench ({meta['mode']}): jax {meta['jax']} on {meta['backend']} "
          f"({meta['devices']} device(s), {meta['cpus']} CPUs), sgmc source {meta['sgmc']}, "
          f"load average {meta['load_start']}")
    results: dict[str, Any] = {"meta": meta}
    for name in names:
        results[name] = _RUNNERS[name](cfg)
    meta["load_end"] = load_average()
    meta["seconds"] = time.perf_counter() - t0
    print(f"\ndone in {meta['seconds']:.0f} s; load average at the end {meta['load_end']}")
    if json_path is not None:
        with open(json_path, "w") as fh:
            json.dump(results, fh, indent=1, default=float)
        print(f"numbers: {json_path}")
    return results


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``sgmc bench`` (shared by the CLI and ``python -m sgmc.lab.bench``)."""
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes (a smoke test, mostly compiling)")
    parser.add_argument("--only", nargs="+", choices=SUITES, metavar="NAME",
                        help=f"run only these suites: {', '.join(SUITES)}")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")


def main(argv: list[str] | None = None) -> int:
    """``python -m sgmc.lab.bench [--quick] [--only NAME ...] [--json PATH]``."""
    parser = argparse.ArgumentParser(prog="sgmc bench", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    run(quick=args.quick, only=args.only, json_path=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
