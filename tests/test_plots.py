"""sgmc.plots: every figure function writes a non-trivial PNG for a small real run; the
backend rule; bad input."""

import os
import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest

import sgmc

pytest.importorskip("matplotlib")
pytest.importorskip("arviz")

from sgmc import plots
from test_diagnostics import _gaussian_posterior, replica_run


def _assert_png(path, min_size=(200, 300)):
    """A real picture: a PNG of at least ``min_size`` pixels that is not one flat colour."""
    import matplotlib.image as mpimg

    assert os.path.getsize(path) > 5_000
    img = mpimg.imread(path)
    assert img.shape[0] >= min_size[0] and img.shape[1] >= min_size[1]
    assert float(np.std(img[..., :3])) > 0.02


@pytest.fixture(scope="module")
def run():
    # The settings of test_diagnostics' many-chain run, so one process compiles it once.
    return sgmc.sample(_gaussian_posterior()[0], sgmc.sgld(1e-3, batch_size=5), jnp.zeros(2),
                       num_steps=120, num_chains=3, thin=2, seed=0, progress=False)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plots.pyplot().close("all")


def test_plot_trace(run, tmp_path):
    fig = plots.plot_trace(run, path=tmp_path / "trace.png")
    _assert_png(tmp_path / "trace.png")
    assert len(fig.axes) == 4                          # 2 parameters × (density, trace)
    assert {ax.get_title() for ax in fig.axes} == {"theta[0]", "theta[1]"}
    assert len(fig.axes[1].get_lines()) == 3           # one trace per chain
    one = plots.plot_trace(run.to_arviz(), max_coords=1)
    assert len(one.axes) == 2 and one._suptitle.get_text() == "first 1 of 2 parameters"


def test_plot_trace_of_every_replica(tmp_path):
    res = replica_run("all", 1)
    fig = plots.plot_trace(res, replica=2, path=tmp_path / "hot.png")
    _assert_png(tmp_path / "hot.png")
    hot = np.asarray(fig.axes[1].get_lines()[0].get_ydata())
    np.testing.assert_allclose(hot, res.samples[0, :, 2, 0], rtol=1e-6)
    with pytest.raises(ValueError, match=r"replica must lie in \[0, 2\]"):
        plots.plot_trace(res, replica=3)


def test_plot_swaps(tmp_path):
    res = replica_run("coldest", 2)
    fig = plots.plot_swaps(res, path=tmp_path / "swaps.png")
    _assert_png(tmp_path / "swaps.png")
    cum, var = fig.axes
    assert len(cum.get_lines()) == 2                   # one curve per pair
    np.testing.assert_allclose(cum.get_lines()[0].get_ydata()[-1],
                               res.info["swaps"][:, :, 0].sum(1).mean())
    assert var.get_yscale() == "log" or len(var.get_lines()) == 2


def test_plot_error_vs_passes(run, tmp_path):
    mean = _gaussian_posterior()[1]
    err = lambda r: np.linalg.norm(np.cumsum(r.samples.mean(0), 0)
                                   / np.arange(1, r.num_draws + 1)[:, None] - mean, axis=1)
    fig = plots.plot_error_vs_passes(
        {"SGLD": run, "made up": (np.arange(1, 6), np.array([1.0, 0.5, 0.3, 0.2, 0.1])),
         "band": (np.arange(1, 6), np.array([[1.0, 0.5, 0.3, 0.2, 0.1], [2, 1, 0.5, 0.3, 0.2]]))},
        error=err, ylabel="‖running mean − μ‖", path=tmp_path / "err.png")
    _assert_png(tmp_path / "err.png")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["SGLD", "made up", "band"]
    np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), run.data_passes.mean(0))
    with pytest.raises(ValueError, match="pass error=f"):
        plots.plot_error_vs_passes({"SGLD": run})
    with pytest.raises(ValueError, match="error must be"):
        plots.plot_error_vs_passes({"x": ([1, 2, 3], [1, 2])})
    with pytest.raises(TypeError, match="curves must be a non-empty mapping"):
        plots.plot_error_vs_passes([([1, 2], [1, 2])])


def test_plot_optimization(tmp_path):
    f = lambda x: jnp.sum(x ** 2) + 0.5 * jnp.sum(1 - jnp.cos(3 * x))
    gdxld = sgmc.minimize(f, sgmc.gd_x_ld(0.05, 1.0), jnp.array([2.0, -2.0]), 200, 6,
                          record_every=10)
    fig = plots.plot_optimization(gdxld, tol=1e-2, f_star=0.0, path=tmp_path / "opt.png")
    _assert_png(tmp_path / "opt.png")
    assert len(fig.axes) == 2
    p = fig.axes[1].get_lines()[0].get_ydata()
    np.testing.assert_allclose(p, sgmc.diagnostics.success_probability(gdxld, tol=1e-2,
                                                                       f_star=0.0))
    gd = sgmc.minimize(f, sgmc.gd(0.05), jnp.array([2.0, -2.0]), 200, 2, record_every=10)
    both = plots.plot_optimization({"GD×LD": gdxld, "GD": gd}, logx=True, logy=True,
                                   path=tmp_path / "both.png")
    _assert_png(tmp_path / "both.png")
    assert len(both.axes) == 1 and both.axes[0].get_xscale() == both.axes[0].get_yscale() == "log"
    with pytest.raises(TypeError, match=r"results must be an sgmc\.OptimizeResult"):
        plots.plot_optimization([gd])


def test_plot_bad_input(run):
    with pytest.raises(TypeError, match=r"result must be an sgmc\.Result or arviz\.InferenceData"):
        plots.plot_trace(np.zeros((2, 10)))
    with pytest.raises(ValueError, match=r"var_names \['beta'\] are not in the draws"):
        plots.plot_trace(run, var_names="beta")
    with pytest.raises(ValueError, match="max_coords must be an integer in"):
        plots.plot_trace(run, max_coords=0)
    with pytest.raises(ValueError, match=r"plot_swaps needs a run of sgmc\.replica_exchange"):
        plots.plot_swaps(run)
    with pytest.raises(TypeError, match=r"result must be an sgmc\.Result"):
        plots.plot_swaps({"swaps": 1})


def test_experiments_share_the_figure_helpers():
    from sgmc.lab.experiments import _plot

    assert _plot.pyplot is plots.pyplot and _plot.save is plots.save


@pytest.mark.parametrize(("setup", "expected"), [
    ("", "agg"),                                           # nothing chosen: Agg
    ("import matplotlib; matplotlib.use('svg')", "svg"),   # a user's choice is kept
])
def test_backend_is_agg_only_when_none_was_chosen(setup, expected):
    code = (f"{setup}\nimport matplotlib\nfrom sgmc import plots\nplots.pyplot()\n"
            "print(matplotlib.get_backend().lower())")
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=120, check=True)
    assert out.stdout.strip().splitlines()[-1] == expected
