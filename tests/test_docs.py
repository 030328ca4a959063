"""The documentation stays true and builds.

- Every fenced block marked ```python in README.md and docs/*.md runs as written (the blocks
  of one page share a namespace, in order). Blocks that are illustrations too slow to run
  here use another fence (```py, ```bash, ```text) and are not executed.
- ``mkdocs build --strict`` succeeds (a broken link, a page missing from the nav, an
  unresolved ``::: sgmc.name`` API reference or a docstring that names a parameter the
  function does not have is a warning, and --strict makes it an error) — and it does fail
  when such a reference is broken, so the check itself is tested.
"""

import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(path):
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.mark.parametrize("page", [p for p in PAGES if _blocks(p)], ids=lambda p: p.name)
def test_examples_run(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples may write files (res.save)
    namespace: dict = {}
    for code in _blocks(page):
        exec(compile(code, str(page), "exec"), namespace)


def _mkdocs_build(config: pathlib.Path, site: pathlib.Path):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]')")
    pytest.importorskip("mkdocstrings",
                        reason="mkdocstrings is not installed (pip install -e '.[docs]')")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict",
                           "-f", str(config), "-d", str(site)],
                          capture_output=True, text=True, timeout=600, cwd=config.parent)


def test_mkdocs_build_strict(tmp_path):
    proc = _mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stderr[-6000:]}"
    assert "WARNING" not in proc.stderr, proc.stderr
    # The API reference was generated from the docstrings, not left as a `:::` directive.
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "sgmc.sample" in api and ":::" not in api
    assert (tmp_path / "site" / "gallery" / "index.html").is_file()


def test_mkdocs_strict_fails_on_broken_references(tmp_path):
    """A copy of the site with a link to a missing page and a cross-reference to a missing
    API object must fail the strict build, naming both."""
    docs = tmp_path / "docs"
    shutil.copytree(ROOT / "docs", docs)
    with open(docs / "index.md", "a") as fh:
        fh.write("\n[a page that does not exist](no-such-page.md) and "
                 "[a function that does not exist][sgmc.no_such_function]\n")
    config = (ROOT / "mkdocs.yml").read_text()
    assert "docs_dir: docs" in config and "paths: [src]" in config
    config = config.replace("docs_dir: docs", f"docs_dir: {docs}")
    config = config.replace("paths: [src]", f"paths: [{ROOT / 'src'}]")
    (tmp_path / "mkdocs.yml").write_text(config)
    proc = _mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert proc.returncode != 0, proc.stderr
    assert "no-such-page.md" in proc.stderr, proc.stderr
    assert "sgmc.no_such_function" in proc.stderr, proc.stderr
