"""Sampling a neural network at the speed of SGD: ``sgmc bench --only nn`` as a script.

SGLD, SGHMC, SVRG-HMC and EWSG on a Flax MLP (784-100-10) and a small CNN against an optax
SGD loop and SGD plus one Gaussian draw per step, all in one process; the shares of SGHMC's
step, XLA's cost analysis of one step; and the peak RSS of runs of 1e4 and 1e5 steps. With
``--sizes`` (always in ``sgmc bench --only nn``), also SGLD and SGHMC keeping no, one, ten and
every draw on MLPs of 79.5k, 1.8M and 36.8M parameters and the CNN (fewer steps on a CPU: the
tables say how many), with the target every draw of the 1.8M model stored ≤ 1.05 × one draw
(off by default here: the GPU check ``../shared/gpu/run.sh`` gives this script 200 s, and
measures those sizes itself). What is timed and how: the docstring of
:mod:`sgmc.lab.bench_nn`; results: benchmarks/README.md.

    python benchmarks/bench_nn.py [--quick] [--no-rss] [--sizes] [--json PATH]

Needs Flax (``pip install -e ".[nn]"``). Runs unchanged on a GPU (the default device).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from sgmc.lab import bench


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    ap.add_argument("--no-rss", action="store_true", help="skip the peak-memory runs")
    ap.add_argument("--repeats", type=int, help="interleaved repeats (default 5; quick 2)")
    ap.add_argument("--sizes", action="store_true",
                    help="also the size ladder (three MLPs and the CNN, no to every draw kept)")
    ap.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    args = ap.parse_args(argv)
    cfg = bench.QUICK if args.quick else bench.FULL
    if not args.sizes:
        cfg = dataclasses.replace(cfg, nn_sizes=())
    if args.no_rss:
        cfg = dataclasses.replace(cfg, nn_rss_steps=())
    if args.repeats:
        cfg = dataclasses.replace(cfg, repeats=args.repeats)
    bench.run(only=["nn"], config=cfg, json_path=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
