"""The command line: `sgmc demo --quick` runs end to end and writes its report; bad input is
refused by argparse; `sgmc reproduce --list` lists every experiment with its run time; the
console script keeps compiled programs on disk."""

import json
import os
import re
import subprocess
import sys

import pytest

from sgmc.lab.cli import main
from sgmc.lab.experiments import registry
from sgmc.lab.experiments.verdict import VERDICTS, check_claim_dict

PAPERS = ("SVRG-HMC", "EWSG", "VR-reSGLD", "GD×LD")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """One `sgmc demo --quick` run shared by the tests below: (folder, printed text)."""
    pytest.importorskip("arviz")
    pytest.importorskip("matplotlib")
    import contextlib
    import io

    out = tmp_path_factory.mktemp("demo")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["demo", "--quick", "--out", str(out), "--seed", "3"]) == 0
    return out, buf.getvalue()


def _table_rows(markdown: str) -> list[list[str]]:
    """Rows of the first Markdown table (the summary), header and rule excluded."""
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| paper |"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
    return rows


def test_demo_prints_one_table(demo):
    _, text = demo
    header = [line for line in text.splitlines() if line.startswith("paper")]
    assert len(header) == 1  # one table
    for col in ("method(s)", "claim", "measured", "verdict"):
        assert col in header[0]
    for paper in PAPERS:
        assert paper in text
    assert "report.md" in text


def test_demo_report_has_one_row_per_paper(demo):
    out, _ = demo
    md = (out / "report.md").read_text(encoding="utf-8")
    rows = _table_rows(md)
    assert len(rows) == len(PAPERS)
    for row, paper in zip(rows, PAPERS, strict=True):
        assert len(row) == 5
        assert row[0].startswith(paper)
        assert row[3]  # something was measured
        assert row[4] and all(v.strip() in VERDICTS for v in row[4].split(";"))
    assert "**seed**: 3" in md


def test_demo_claims_follow_the_verdict_rule(demo):
    """report.json: every claim has a verdict from the rule, its effect ± SE, its deviations;
    no "holds" under 2 SE."""
    out, text = demo
    claims = json.loads((out / "report.json").read_text(encoding="utf-8"))["claims"]
    assert {c["paper_name"].split(" (")[0] for c in claims} == set(PAPERS)
    for c in claims:
        check_claim_dict(c)
    assert "rule: holds if the effect" in text


def test_demo_report_links_existing_figures(demo):
    out, _ = demo
    md = (out / "report.md").read_text(encoding="utf-8")
    figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert len(figures) >= len(PAPERS)
    for fig in figures:
        assert not fig.startswith("/")  # relative: the folder is self-contained
        assert fig.endswith(".png")
        assert (out / fig).stat().st_size > 10_000, fig
    html = (out / "report.html").read_text(encoding="utf-8")
    for fig in figures:
        assert f"src='{fig}'" in html


def test_demo_report_names_the_full_experiments(demo):
    """Every section gives the exact `sgmc reproduce NAME` command, with a NAME that exists."""
    out, _ = demo
    md = (out / "report.md").read_text(encoding="utf-8")
    names = re.findall(r"full experiment: `sgmc reproduce ([a-z0-9-]+)`", md)
    assert len(names) == len(PAPERS)
    assert set(names) <= set(registry())
    assert "## 1." in md and "settings" in md
    # the library tour names what lies beyond the papers
    tour = md.split("## Beyond the papers", 1)[1]
    for name in ("sgmc.warmup", "sgmc.sgnht", "sgmc.cyclical", "predict=fn"):
        assert name in tour, name


@pytest.mark.parametrize("seed", ["-1", "abc", "1.5", str(2**32)])
def test_demo_bad_seed_is_refused_by_argparse(seed, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--quick", "--out", str(tmp_path), "--seed", seed])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--seed" in err and ("must be in [0, " in err or "must be an integer" in err)
    assert not (tmp_path / "report.md").exists()


def test_run_demo_checks_seed_before_running(tmp_path):
    from sgmc.lab.demo import run_demo

    with pytest.raises(ValueError, match=r"seed must be in \[0, "):
        run_demo(out=str(tmp_path), quick=True, seed=-1)
    with pytest.raises(TypeError, match="seed must be an integer"):
        run_demo(out=str(tmp_path), quick=True, seed=1.0)


def test_reproduce_list_shows_every_experiment_with_its_time(capsys):
    assert main(["reproduce", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    exps = registry()
    assert len(exps) >= 6
    for name, exp in exps.items():
        line = next((ln for ln in lines if ln.split() and ln.split()[0] == name), None)
        assert line is not None, f"{name} is not listed"
        assert f"~{exp.minutes_full:g} min" in line
        assert exp.minutes_full > 0


@pytest.mark.parametrize("env, returned, jax_dir", [
    ({"SGMC_CACHE_DIR": "{tmp}/c"}, "{tmp}/c", "{tmp}/c"),
    ({"XDG_CACHE_HOME": "{tmp}"}, "{tmp}/sgmc/xla", "{tmp}/sgmc/xla"),
    ({"SGMC_CACHE_DIR": "off"}, "None", "None"),
    ({"JAX_COMPILATION_CACHE_DIR": "{tmp}/j"}, "None", "{tmp}/j"),  # JAX's own setting wins
])
def test_console_script_keeps_compiled_programs_on_disk(tmp_path, env, returned, jax_dir):
    # In a subprocess: the cache is a process-wide JAX setting.
    code = ("import jax; from sgmc.lab import cli; f = cli.enable_cache(); "
            "print(f, jax.config.jax_compilation_cache_dir)")
    base = {k: v for k, v in os.environ.items()
            if k not in ("SGMC_CACHE_DIR", "XDG_CACHE_HOME", "JAX_COMPILATION_CACHE_DIR")}
    env = {k: v.format(tmp=tmp_path) for k, v in env.items()}
    out = subprocess.run([sys.executable, "-c", code], env={**base, **env},
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == [returned.format(tmp=tmp_path), jax_dir.format(tmp=tmp_path)]
