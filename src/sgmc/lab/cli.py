"""The ``sgmc`` command line: ``sgmc demo`` (the main job), ``sgmc reproduce NAME`` and
``sgmc bench``."""

from __future__ import annotations

import argparse
import json
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sgmc", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="a small run of each paper's headline experiment: "
                          "one table (claim, measured, verdict) and a report folder",
                          description="Run a small version of each paper's headline "
                          "experiment, print one table and write report.md, report.html "
                          "and the figures to --out.")
    demo.add_argument("--out", default="sgmc-demo", metavar="DIR",
                      help="folder for the report and figures (default: sgmc-demo)")
    demo.add_argument("--quick", action="store_true",
                      help="the reduced run the tests use (mostly compiling)")
    demo.add_argument("--seed", type=_demo_seed, default=0,
                      help="integer seed in [0, 2**32 - 101] (default: 0)")
    rep = sub.add_parser("reproduce", help="run one paper experiment (--list shows them)")
    rep.add_argument("name", nargs="?", help="experiment name")
    rep.add_argument("--list", action="store_true", help="list the experiments and exit")
    size = rep.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="a reduced run (about a minute)")
    size.add_argument("--smoke", action="store_true",
                      help="the smallest run (seconds, mostly compiling): a pipeline check "
                      "of run, claims, report, JSON and figures; its verdicts are not "
                      "evidence about the paper")
    rep.add_argument("--out", default="sgmc-reproduce", help="folder for figures")
    rep.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    rep.add_argument("--seed", type=int, default=0)
    rep.add_argument("--data", metavar="DIR", default=None,
                     help="folder of the datasets (default: $SGMC_DATA or ../shared/data)")
    bench = sub.add_parser("bench", help="speed benchmarks: sgmc against BlackJAX, a PyTorch "
                           "loop and itself (scaling, full passes); prints tables",
                           description="Speed benchmarks (see sgmc.lab.bench): ratios measured "
                           "in this process, best of several repeats after a warm-up.")
    from sgmc.lab.bench import add_arguments as _bench_arguments

    _bench_arguments(bench)
    args = parser.parse_args(argv)
    if args.command == "bench":
        from sgmc.lab.bench import run as run_bench

        run_bench(quick=args.quick, only=args.only, json_path=args.json)
    elif args.command == "demo":
        from sgmc.lab.demo import run_demo

        run_demo(out=args.out, quick=args.quick, seed=args.seed)
    elif args.command == "reproduce":
        return _reproduce(args, parser)
    return 0


def console() -> int:
    """The ``sgmc`` console script: :func:`main` with JAX's persistent compilation cache
    (:func:`enable_cache`). :func:`main` called from Python leaves JAX's configuration
    alone."""
    enable_cache()
    return main()


def enable_cache() -> str | None:
    """Keep compiled programs on disk (JAX's persistent compilation cache); returns the
    folder, or None when off.

    Most of a demo or a quick reproduction is XLA compiling (on 2 CPU cores, 2–7 s per
    program); with the cache a second run of the same command compiles almost nothing
    (``sgmc demo``: 75 s → 37 s in all; a small SVRG-HMC run: 6.9 s → 1.3 s of
    compiling). The folder is ``$SGMC_CACHE_DIR``, else ``$XDG_CACHE_HOME/sgmc/xla`` or
    ``~/.cache/sgmc/xla``; ``SGMC_CACHE_DIR=off`` turns it off, and a cache set up for JAX
    itself (``JAX_COMPILATION_CACHE_DIR``) is left as it is.
    """
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return None
    folder = os.environ.get("SGMC_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "sgmc", "xla")
    if folder.lower() == "off":
        return None
    import jax

    jax.config.update("jax_compilation_cache_dir", folder)
    return folder


def _demo_seed(text: str) -> int:
    """argparse type for ``demo --seed``: an integer in [0, sgmc.lab.demo.MAX_SEED]."""
    from sgmc.lab.demo import MAX_SEED

    try:
        seed = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if not 0 <= seed <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be in [0, {MAX_SEED}], got {seed}")
    return seed


def _reproduce(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from sgmc.lab.experiments import registry

    exps = registry()
    if args.list or not args.name:
        print(f"{'experiment':<28}{'full run':>10}  what (paper)")
        for e in exps.values():
            print(f"{e.name:<28}{f'~{e.minutes_full:g} min':>10}  {e.summary} ({e.paper})")
        print("\nevery experiment also has --quick (about a minute, mostly compiling) and "
              "--smoke (a pipeline check, seconds)")
        return 0
    if args.name not in exps:
        parser.error(f"unknown experiment {args.name!r}; choose from {', '.join(exps)}")
    result = exps[args.name].run(quick=args.quick, out=args.out, seed=args.seed,
                                 data_root=args.data, smoke=args.smoke)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1, default=float)
        print(f"numbers: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(console())
