"""``sgmc bench``: the quick run prints every table and writes its numbers (no timing
assertions: timings on a shared machine are not testable); the harness helpers."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sgmc.lab import bench
from sgmc.lab.cli import main

HAS_BLACKJAX = importlib.util.find_spec("blackjax") is not None
HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_FLAX = importlib.util.find_spec("flax") is not None


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    """One ``sgmc bench --quick --json`` run (≈ 1 min, mostly compiling): (stdout, numbers)."""
    path = tmp_path_factory.mktemp("bench") / "bench.json"
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["bench", "--quick", "--json", str(path)]) == 0
    return buf.getvalue(), json.loads(path.read_text())


def test_quick_prints_every_table(quick):
    out, numbers = quick
    assert set(numbers) == {"meta", *bench.SUITES}
    assert numbers["meta"]["mode"] == "quick"
    for axis in ("N", "d", "batch", "chains"):
        assert f"[scaling] time per step against {axis} " in out
        assert set(numbers["scaling"][axis]) == {str(v) for v in getattr(
            bench.QUICK, {"N": "scaling_n", "d": "scaling_d", "batch": "scaling_batch",
                          "chains": "scaling_chains"}[axis])}
    assert "[fullpass] one full data pass" in out
    assert "[fullpass] amortised cost per step" in out
    assert len(numbers["fullpass"]["samplers"]) == 5
    if HAS_BLACKJAX:
        assert "[blackjax] Bayesian logistic regression" in out
        assert "[blackjax] ratios" in out
        for name in ("SGLD", "SGHMC"):
            assert numbers["blackjax"][name]["loop_over_sgmc"] > 0
    else:
        assert "[blackjax] skipped: blackjax is not importable" in out
        assert "skipped" in numbers["blackjax"]
    if HAS_FLAX:
        for model in ("MLP", "CNN"):
            assert f"[nn] {model} (" in out
            assert f"[nn] {model}: where SGHMC's step goes" in out
        nn = numbers["nn"]
        assert set(nn["models"]) == {"mlp", "cnn"}
        for m in nn["models"].values():
            # Counted cost: SVRG's two minibatch gradients plus amortised snapshots, EWSG's
            # (M + 1) = 2 minibatch gradients, one for the others.
            evals = {k.split(" (")[0]: v / bench.QUICK.nn_batch_size
                     for k, v in m["grad_evals_per_step"].items()}
            assert evals["SGLD"] == evals["SGHMC"] == 1.0
            assert evals["EWSG"] == 2.0 and evals["SVRG-HMC"] > 2.0
            assert m["xla_cost_per_step"]["SGHMC"]["flops"] > m["xla_cost_per_step"]["SGD"]["flops"]
        # The sizes (quick: SGHMC keeping one and every draw).
        ((name, *_),) = bench.QUICK.nn_sizes
        assert f"[nn] {name} (" in out
        assert "[nn] every draw of a 2M-parameter model stored ÷ one draw" in out
        sizes = nn["sizes"]
        assert sizes["backend"] == jax.default_backend()
        rows = sizes["sizes"][name]["rows"]
        assert set(rows) == {"SGD", "SGD + noise", "SGHMC, one draw", "SGHMC, every draw"}
        assert [rows[f"SGHMC, {k}"]["draws"] for k in ("one draw", "every draw")] == [1, 10]
        assert rows["SGD"]["over_sgd"] == 1.0 and rows["SGD + noise"]["over_floor"] == 1.0
        assert sizes["store_target"]["SGHMC"]["target"] == 1.05
        assert [r["num_steps"] for r in nn["rss"]] == [20, 20, 200, 200]
        assert all(r["peak_rss_mib"] > 0 and r["draws"] > 0 for r in nn["rss"])
    else:
        assert "[nn] skipped" in out
    if HAS_TORCH:
        assert "[torch] SGLD" in out
    else:
        assert "[torch] skipped: torch is not importable" in out


@pytest.mark.skipif(not HAS_BLACKJAX, reason="blackjax is not installed (pip install "
                    "'sgmc[bench]')")
def test_blackjax_sgld_does_the_same_work(quick):
    """The BlackJAX SGLD step, fed sgmc's keys and model functions, reproduces sgmc's draws:
    evidence that the comparison times identical work. Both are float32 evaluations of the
    same formula in a different order, so per-step rounding (~1e-7 relative) accumulates
    over 200 contracting steps to far below 1e-4; a different minibatch or noise stream
    would differ by O(√(2h)) = O(1e-2) per step."""
    _, numbers = quick
    assert numbers["blackjax"]["checks"]["sgld_max_abs_diff_vs_sgmc"] < 1e-4
    assert numbers["blackjax"]["recompiles"] == {"SGLD": 0, "SGHMC": 0}
    assert all(v == 1.0 for k, v in numbers["blackjax"]["checks"].items() if "finite" in k)


@pytest.mark.skipif(not HAS_FLAX, reason="flax is not installed (pip install 'sgmc[nn]')")
def test_nn_size_plan():
    """The nn sizes' sgmc rows: ten draws only with ≥ 20 steps; every draw capped in bytes."""
    from sgmc.lab.bench_nn_sizes import MAX_DRAW_BYTES, size_plan
    assert size_plan(400, 36_818_954) == {
        "no draws": (400, 400, False), "one draw": (400, 400, True),
        "ten draws": (400, 40, True),
        "every draw": (MAX_DRAW_BYTES // (4 * 36_818_954), 1, True)}
    assert size_plan(1_000, 1_796_010)["every draw"] == (1_000, 1, True)
    assert list(size_plan(8, 100)) == ["no draws", "one draw", "every draw"]


def test_only_names_are_checked():
    with pytest.raises(ValueError, match="only must name suites from"):
        bench.run(only=["blackjax", "nope"])
    with pytest.raises(TypeError, match="config must be a BenchConfig"):
        bench.run(config={"num_data": 10})
    with contextlib.redirect_stderr(io.StringIO()), pytest.raises(SystemExit):
        main(["bench", "--only", "nope"])


def test_interleaved_runs_round_robin():
    calls = []

    def variant(name):
        def fn():
            calls.append(name)
            return {"wall": float(len(calls))}
        return fn

    t = bench.interleaved({"a": variant("a"), "b": variant("b")}, {"a": 2, "b": 3})
    assert calls == ["a", "b", "a", "b", "b"]
    assert t["a"]["wall"] == [1.0, 3.0] and t["b"]["wall"] == [2.0, 4.0, 5.0]
    assert bench.best(t, "b") == 2.0 and bench.median(t, "b") == 4.0


def test_small_helpers():
    tree = {"a": jnp.zeros((3, 4), jnp.float32), "b": np.zeros(5, np.int64)}
    assert bench.tree_nbytes(tree) == 3 * 4 * 4 + 5 * 8
    shapes = jax.eval_shape(lambda: {"a": jnp.zeros((3, 4)), "b": jnp.zeros(5, jnp.int32)})
    assert bench.tree_nbytes(shapes) == 3 * 4 * 4 + 5 * 4
    assert bench.verdict(4.5, 4, at_most=False).endswith("MET")
    assert bench.verdict(1.1, 1, at_most=True).endswith("MISSED")
    assert bench.peak_rss_mib() > 0
    init, run = bench.sgmc_keys(0, 3)
    assert init.shape == run.shape == (3,)


def test_optional_suites_skip_with_a_reason(monkeypatch, capsys):
    """Without blackjax / torch the suites are skipped (not failed) and say why."""
    monkeypatch.setitem(sys.modules, "blackjax", None)  # makes `import blackjax` fail
    monkeypatch.setitem(sys.modules, "torch", None)
    assert "blackjax is not importable" in bench.bench_blackjax(bench.QUICK)["skipped"]
    assert "torch is not importable" in bench.bench_torch(bench.QUICK)["skipped"]
    out = capsys.readouterr().out
    assert "[blackjax] skipped: blackjax is not importable" in out
    assert "pip install 'sgmc[bench]'" in out
