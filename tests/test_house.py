"""The rules of the house (README, Development), checked on the source so that they stay true:

* no core module (``src/sgmc`` outside ``lab/``) over 450 lines;
* no import circle between sgmc's modules, counting imports inside functions too;
* the core never imports the lab (experiments, benchmarks, demo, CLI);
* the runner (``sgmc/run``) reads a kernel or a problem only through declared members: no
  ``getattr``/``hasattr`` on them;
* the tuner (``sgmc/tune``) dispatches through contract members: no ``isinstance`` on a
  concrete sampler, dynamics, estimator or coupling class.

Each check parses the source with :mod:`ast`; each was seen to fail on a planted violation.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"
PKG = SRC / "sgmc"
MAX_LINES = 450


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for f in sorted(PKG.rglob("*.py")):
        parts = f.relative_to(SRC).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = f
    return out


def _core(name: str) -> bool:
    return not (name == "sgmc.lab" or name.startswith("sgmc.lab."))


def _imports(name: str, path: pathlib.Path, modules: dict) -> set[str]:
    """The sgmc modules ``name`` imports anywhere in its body (a package's own submodules
    excepted: re-exporting them is not a dependency on them)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 \
                and node.module.split(".")[0] == "sgmc":
            targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules
                       else node.module for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names if a.name.split(".")[0] == "sgmc"]
        for target in targets:
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target != name and not target.startswith(name + "."):
                found.add(target)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    # A package's __init__ imports its parent's pieces only through them; the parent
    # package itself ("sgmc") re-exports everything and is left out of the graph.
    return {n: {t for t in _imports(n, p, modules) if t != "sgmc"}
            for n, p in modules.items() if n != "sgmc"}


def test_no_core_module_is_over_450_lines():
    long = {n: len(p.read_text().splitlines()) for n, p in _modules().items() if _core(n)}
    assert {n: k for n, k in long.items() if k > MAX_LINES} == {}


def test_no_import_circle():
    assert _cycles(_graph()) == []


def test_the_core_never_imports_the_lab():
    graph = _graph()
    assert {n: sorted(t for t in ts if not _core(t)) for n, ts in graph.items()
            if _core(n) and any(not _core(t) for t in ts)} == {}


def _calls(path: pathlib.Path, func: str):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id == func and node.args:
            yield node


PROBED = {"kernel", "sampler", "problem", "objective", "rule", "estimator", "dynamics",
          "coupling", "base"}


@pytest.mark.parametrize("func", ["getattr", "hasattr"])
def test_the_runner_reads_kernels_and_problems_through_declared_members(func):
    probes = []
    for path in sorted((PKG / "run").glob("*.py")):
        for call in _calls(path, func):
            root = call.args[0]
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in PROBED | {"self"} and not (
                    root.id == "self" and path.name == "host.py"):
                probes.append(f"{path.name}:{call.lineno} {ast.unparse(call)}")
    assert probes == []


CONCRETE = {"Sampler", "CyclicalSampler", "ReplicaExchange", "Langevin", "Underdamped", "PSGLD",
            "NoseHoover", "Uniform", "SVRG", "SAGA", "EWSG", "MetropolisRule", "GreedyRule"}


def test_the_tuner_dispatches_through_contract_members():
    found = []
    for path in sorted((PKG / "tune").glob("*.py")):
        for call in _calls(path, "isinstance"):
            classes = call.args[1]
            names = {n.id for n in ast.walk(classes) if isinstance(n, ast.Name)} | {
                n.attr for n in ast.walk(classes) if isinstance(n, ast.Attribute)}
            if names & CONCRETE:
                found.append(f"{path.name}:{call.lineno} {ast.unparse(call)}")
    assert found == []
