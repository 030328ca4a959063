"""Figures for sampling and optimisation runs (matplotlib; the ``diagnostics`` extra).

Every ``plot_*`` function returns the ``matplotlib.figure.Figure`` and, given ``path=``,
also writes it there as a PNG (folders created). Figures are made through pyplot, so Jupyter
shows them inline.

**Backend.** On first use, if no matplotlib backend has been chosen yet — no ``MPLBACKEND``
in the environment (Jupyter sets it), no ``matplotlib.use(...)``, no figure drawn — the
non-interactive Agg backend is selected, so scripts, CI and servers without a display never
fail. To get windows from a plain script, choose a backend before plotting, e.g.
``matplotlib.use("TkAgg")``, then ``plt.show()``.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from sgmc import _validate as check
from sgmc._optional import arviz

__all__ = ["plot_error_vs_passes", "plot_optimization", "plot_swaps", "plot_trace", "pyplot",
           "save"]

DPI = 110


def _backend_chosen(matplotlib) -> bool:
    if os.environ.get("MPLBACKEND"):
        return True
    try:  # matplotlib ≥ 3.5 keeps a sentinel until a backend is chosen or resolved
        from matplotlib import rcsetup
        return dict.__getitem__(matplotlib.rcParams, "backend") is not getattr(
            rcsetup, "_auto_backend_sentinel", object())
    except (AttributeError, ImportError, KeyError):
        return True


def pyplot():
    """``matplotlib.pyplot``, selecting the Agg backend first only if no backend was chosen
    (see the module docstring)."""
    try:
        import matplotlib
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError("sgmc.plots needs matplotlib: pip install 'sgmc[diagnostics]'") from err
    if not _backend_chosen(matplotlib):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save(fig, path: str | os.PathLike, rect=None, close: bool = True) -> str:
    """Lay ``fig`` out (within ``rect``, e.g. to leave room for a suptitle), write it to
    ``path`` as a PNG (its folder created) and, by default, close it; returns ``path``."""
    path = os.fspath(path)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    if rect is None:
        fig.tight_layout()
    else:
        fig.tight_layout(rect=rect)
    fig.savefig(path, dpi=DPI)
    if close:
        pyplot().close(fig)
    return path


def _finish(fig, path, rect=None):
    if path is not None:
        save(fig, path, rect=rect, close=False)
    else:
        fig.tight_layout(rect=rect) if rect is not None else fig.tight_layout()
    return fig


def _result_type():
    from sgmc.result import Result
    return Result


# -- trace and density ----------------------------------------------------------------------
def _scalar_columns(idata, var_names, max_coords: int, replica: int):
    """The first ``max_coords`` scalar parameters, as name -> (chain, draw) arrays."""
    post = idata.posterior
    names = list(post.data_vars) if var_names is None else list(var_names)
    missing = [v for v in names if v not in post.data_vars]
    if missing:
        raise ValueError(f"var_names {missing} are not in the draws; available: "
                         f"{list(post.data_vars)}")
    cols: dict[str, np.ndarray] = {}
    total = 0
    for name in names:
        da = post[name]
        if "replica" in da.dims:
            if not 0 <= replica < da.sizes["replica"]:
                raise ValueError(f"replica must lie in [0, {da.sizes['replica'] - 1}], got "
                                 f"{replica}")
            da = da.isel(replica=replica)
        vals = np.asarray(da.transpose("chain", "draw", ...).values)
        flat = vals.reshape(vals.shape[0], vals.shape[1], -1)
        shape = vals.shape[2:]
        for j in range(flat.shape[2]):
            total += 1
            if len(cols) < max_coords:
                idx = np.unravel_index(j, shape) if shape else ()
                label = name + (f"[{', '.join(map(str, idx))}]" if shape else "")
                cols[label] = flat[:, :, j]
    return cols, total


def plot_trace(result, var_names=None, max_coords: int = 6, *, replica: int = 0,
               path: str | os.PathLike | None = None, **kwargs: Any):
    """Trace (value against draw) and marginal density of each scalar parameter, one row
    per parameter and one line per chain (``arviz.plot_trace``).

    Args:
        result: an :class:`sgmc.Result` or an ``arviz.InferenceData``.
        var_names: variables to show (default all; see :meth:`sgmc.Result.to_arviz` for
            the names).
        max_coords: at most this many scalar parameters (rows), the first ones in order;
            the title says how many were left out.
        replica: for draws that keep every replica, the replica shown (0 = coldest).
        path: also save the figure there as a PNG.
        kwargs: passed to ``arviz.plot_trace``.
    """
    az = arviz()

    max_coords = check.integer("max_coords", max_coords, lo=1)
    replica = check.integer("replica", replica, lo=0)
    if isinstance(result, _result_type()):
        idata = result.to_arviz()
    elif isinstance(result, az.InferenceData):
        idata = result
    else:
        raise TypeError(f"result must be an sgmc.Result or arviz.InferenceData, got "
                        f"{type(result).__name__}")
    if isinstance(var_names, str):
        var_names = [var_names]
    cols, total = _scalar_columns(idata, var_names, max_coords, replica)
    plt = pyplot()
    small = az.from_dict(posterior=cols)
    rows = len(cols)
    fig, axes = plt.subplots(rows, 2, figsize=(10, 1.9 * rows + 0.6), squeeze=False)
    with warnings.catch_warnings():  # ArviZ 0.x calls a matplotlib API deprecated in 3.11
        warnings.filterwarnings("ignore", category=DeprecationWarning, module="arviz")
        warnings.filterwarnings("ignore", message=".*alias_mapping.*")
        az.plot_trace(small, axes=axes, compact=False, **kwargs)
    for ax in axes[:, 1]:
        ax.set_xlabel("draw")
    if total > rows:
        fig.suptitle(f"first {rows} of {total} parameters", fontsize=10)
        return _finish(fig, path, rect=(0, 0, 1, 0.96))
    return _finish(fig, path)


# -- replica exchange ------------------------------------------------------------------------
def plot_swaps(result, *, path: str | os.PathLike | None = None):
    """Swap events and σ̂² over time for a replica-exchange run: cumulative accepted swaps
    per adjacent pair against the step (mean over chains; the legend gives the acceptance
    rate swaps/attempts), and the variance estimate σ̂² of the energy difference per pair
    (mean over chains, with the min–max band over chains)."""
    if not isinstance(result, _result_type()):
        raise TypeError(f"result must be an sgmc.Result, got {type(result).__name__}")
    info = result.info
    if "swaps" not in info:
        raise ValueError("result has no swap statistics: plot_swaps needs a run of "
                         "sgmc.replica_exchange(...)")
    swaps = np.asarray(info["swaps"], np.float64)            # (chains, draws, pairs)
    attempts = np.asarray(info.get("swap_attempts", np.ones_like(swaps)), np.float64)
    steps = np.asarray(info.get("step", np.arange(1, swaps.shape[1] + 1)))
    var = info.get("energy_variance")
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    cum = np.cumsum(swaps, axis=1).mean(axis=0)
    tries = np.sum(attempts, axis=(0, 1))
    for k in range(swaps.shape[2]):
        rate = swaps[:, :, k].sum() / max(tries[k], 1.0)
        axes[0].plot(steps, cum[:, k], label=f"pair {k}–{k + 1} (rate {rate:.2f})")
    axes[0].set(xlabel="step", ylabel="cumulative swaps (mean over chains)",
                title="swap events")
    axes[0].legend(fontsize=8)
    if var is None or not np.any(np.asarray(var)):
        axes[1].text(0.5, 0.5, "σ̂² not measured by this run\n(exact or greedy exchange)",
                     ha="center", va="center", transform=axes[1].transAxes)
        axes[1].set_axis_off()
    else:
        v = np.asarray(var, np.float64)
        for k in range(v.shape[2]):
            line, = axes[1].plot(steps, v[:, :, k].mean(axis=0), label=f"pair {k}–{k + 1}")
            if v.shape[0] > 1:
                axes[1].fill_between(steps, v[:, :, k].min(axis=0), v[:, :, k].max(axis=0),
                                     color=line.get_color(), alpha=0.2, lw=0)
        if np.all(v > 0):
            axes[1].set_yscale("log")
        axes[1].set(xlabel="step", ylabel="σ̂² (energy-difference variance)",
                    title="variance estimate")
        axes[1].legend(fontsize=8)
    return _finish(fig, path)


# -- error against data passes ----------------------------------------------------------------
def plot_error_vs_passes(curves: Mapping[str, Any], error: Callable | None = None, *,
                         ylabel: str = "error", title: str | None = None, logy: bool = True,
                         path: str | os.PathLike | None = None):
    """Error against data passes for several samplers on one axis.

    Args:
        curves: mapping name -> ``(passes, error)`` (1-D arrays of equal length; a 2-D error
            (runs, points) is drawn as its mean with a min–max band), or name ->
            :class:`sgmc.Result` together with ``error``.
        error: for Result entries, ``error(result) -> (num_draws,)`` array (e.g. a running
            KL); the passes are ``result.data_passes`` averaged over chains.
        ylabel: the error axis label.
        title: the axes' title.
        logy: logarithmic error axis (non-positive values are then not drawn).
        path: also save the figure there as a PNG.
    """
    if not isinstance(curves, Mapping) or not curves:
        raise TypeError("curves must be a non-empty mapping name -> (passes, error) or "
                        "name -> sgmc.Result")
    if error is not None:
        check.callable_("error", error)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, entry in curves.items():
        if isinstance(entry, _result_type()):
            if error is None:
                raise ValueError(f"curves[{name!r}] is a Result: pass error=f with "
                                 "f(result) -> one error per draw")
            x = np.asarray(entry.data_passes, np.float64).mean(axis=0)
            y = np.asarray(error(entry), np.float64)
        else:
            try:
                x, y = entry
            except (TypeError, ValueError):
                raise TypeError(f"curves[{name!r}] must be (passes, error) or an sgmc.Result"
                                ) from None
            x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        if x.ndim != 1 or y.shape[-1:] != x.shape or y.ndim > 2:
            raise ValueError(f"curves[{name!r}]: error must be (points,) or (runs, points) "
                             f"with points = len(passes) = {x.shape}; got {y.shape}")
        if y.ndim == 2:
            line, = ax.plot(x, y.mean(axis=0), label=name)
            ax.fill_between(x, y.min(axis=0), y.max(axis=0), color=line.get_color(),
                            alpha=0.2, lw=0)
        else:
            ax.plot(x, y, label=name, marker="." if x.size <= 40 else None)
    if logy:
        ax.set_yscale("log")
    ax.set(xlabel="data passes", ylabel=ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _finish(fig, path)


# -- optimisation ----------------------------------------------------------------------------
def plot_optimization(results, *, tol: float | None = None, f_star: float | None = None,
                      x_star=None, logx: bool = False, logy: bool = False,
                      max_lines: int = 20,
                      path: str | os.PathLike | None = None):
    """Optimisation value traces F(X_n) and, given a success criterion, the success
    probability against the iteration n.

    Args:
        results: an :class:`sgmc.OptimizeResult` (its replications are drawn as thin lines,
            at most ``max_lines``, with the median) or a mapping name -> OptimizeResult (the
            median with the inter-quartile band of each).
        tol: success is F ≤ f_star + tol, or ‖X − x_star‖ ≤ tol (needs
            ``record_path=True``); see :func:`sgmc.diagnostics.success_probability`.
            Without ``tol`` only the value panel is drawn; with ``tol`` alone f_star is
            the minimum F seen in all runs.
        f_star: the known minimum value F*.
        x_star: the known minimiser x*.
        logx: logarithmic iteration axis.
        logy: logarithmic value axis (for positive objectives, e.g. F − F*).
        max_lines: replications drawn for a single result.
        path: also save the figure there as a PNG.
    """
    from sgmc.diagnostics import success_probability
    from sgmc.run.optimize import OptimizeResult

    if isinstance(results, OptimizeResult):
        runs, single = {results.method: results}, True
    elif isinstance(results, Mapping) and results and all(
            isinstance(r, OptimizeResult) for r in results.values()):
        runs, single = dict(results), False
    else:
        raise TypeError("results must be an sgmc.OptimizeResult or a non-empty mapping "
                        "name -> OptimizeResult")
    max_lines = check.integer("max_lines", max_lines, lo=0)
    if tol is not None and f_star is None and x_star is None:
        f_star = float(min(np.nanmin(np.concatenate([[np.inf], r.best_value.ravel(),
                                                     r.trace.ravel()]))
                           for r in runs.values()))
    plt = pyplot()
    panels = 2 if tol is not None else 1
    fig, axes = plt.subplots(1, panels, figsize=(5.2 * panels, 3.9), squeeze=False)
    ax_v = axes[0, 0]
    for name, r in runs.items():
        steps, trace = np.asarray(r.trace_steps), np.asarray(r.trace, np.float64)
        if single:
            for row in trace[:max_lines]:
                ax_v.plot(steps, row, color="0.6", lw=0.6, alpha=0.6)
            ax_v.plot(steps, np.nanmedian(trace, axis=0), color="C0", lw=2,
                      label=f"{name}: median of {trace.shape[0]}")
        else:
            line, = ax_v.plot(steps, np.nanmedian(trace, axis=0), label=name)
            q = np.nanpercentile(trace, [25, 75], axis=0)
            ax_v.fill_between(steps, q[0], q[1], color=line.get_color(), alpha=0.2, lw=0)
        if tol is not None:
            p = success_probability(r, tol=tol, f_star=None if x_star is not None else f_star,
                                    x_star=x_star)
            axes[0, 1].plot(steps, p, label=name)
    ax_v.set(xlabel="iteration n", ylabel="F(X_n)", title="value traces")
    if logy:
        ax_v.set_yscale("log")
    ax_v.legend(fontsize=8)
    if tol is not None:
        crit = (f"‖X_n − x*‖ ≤ {tol:g}" if x_star is not None
                else f"F(X_n) ≤ {f_star:.4g} + {tol:g}")
        axes[0, 1].set(xlabel="iteration n", ylabel=f"P({crit})", ylim=(-0.03, 1.03),
                       title="success probability")
        axes[0, 1].legend(fontsize=8)
    for ax in axes.ravel():
        ax.grid(alpha=0.3)
        if logx:
            ax.set_xscale("log")
    return _finish(fig, path)
