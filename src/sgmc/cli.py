"""The ``sgmc`` command line: ``sgmc demo`` (the main job)."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sgmc", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="sample a Bayesian linear regression posterior with "
                          "SGLD and SGHMC and compare with the exact posterior")
    demo.add_argument("--out", default="sgmc-demo", help="folder for the figure")
    demo.add_argument("--quick", action="store_true", help="a reduced run (under a minute)")
    demo.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run_demo

        run_demo(out=args.out, quick=args.quick, seed=args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
