"""The command line: `sgmc demo --quick` runs end to end and writes its figure."""

import pytest

from sgmc.cli import main


def test_demo_quick(tmp_path, capsys):
    pytest.importorskip("arviz")
    pytest.importorskip("matplotlib")
    assert main(["demo", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for name in ("SGLD", "SGHMC (Euler)", "SGHMC (splitting)"):
        assert name in out
    assert (tmp_path / "demo_linear_regression.png").stat().st_size > 10_000
