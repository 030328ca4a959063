"""The SVRG-HMC reproductions' printed table and figures (:mod:`.svrg_hmc`, :mod:`.svrg_hmc_bnn`):
the test metric against data passes of sampling, per sampler, and the step-size columns
(the validation-chosen h and D, the grid's largest stable step per chain, and the stability
boundary replicated over seeds, :mod:`.stability`)."""

from __future__ import annotations

from sgmc.lab.experiments._plot import pyplot, save


def table(results: list[dict], task: str, passes: float) -> str:
    """One row per data set and sampler: h, D, the metric at 1 pass of sampling (and with the
    initial pass counted), at ``passes``, the grid's largest stable step per chain, and the
    replicated boundary's geometric mean over seeds (h·√λ_max; HMC samplers only)."""
    metric = "MSE" if task == "regression" else "LL"
    rows = [f"{'dataset':<22}{'sampler':<13}{'h':>10}{'D':>9}"
            f"{metric + ' @1 pass':>22}{'(old: initial counted)':>26}"
            f"{metric + f' @{passes:g} passes':>22}{'largest stable':>16}"
            f"{'boundary (seeds)':>24}"]
    for r in results:
        for sname, e in r["samplers"].items():
            if "h" not in e:
                rows.append(f"{r['dataset']:<22}{sname:<13}  {e.get('error')}")
                continue
            fr = "-" if e["friction"] is None else f"{e['friction']:.3g}"
            a, o, f = e["at_1_pass"], e["at_1_pass_old"], e["final"]
            big = "/".join(f"{x:.3g}" for x in e["largest_stable"])
            bd = e.get("boundary_summary")
            bd = (f"{bd['geo_mean']:.3g} ({'/'.join(f'{x:.3g}' for x in bd['per_seed'])})"
                  if bd else "-")
            rows.append(f"{r['dataset']:<22}{sname:<13}{e['h']:>10.2e}{fr:>9}"
                        f"{a[0]:>13.4g} ± {a[1]:<6.2g}{o[0]:>17.4g} ± {o[1]:<6.2g}"
                        f"{f[0]:>13.4g} ± {f[1]:<6.2g}  {big:<14}  {bd}")
    return "\n".join(rows)


def plot_curves(ax, r: dict, regression_label: str = "test MSE",
                colors: dict | None = None, key: str = "passes") -> None:
    """One dataset's metric against data passes (``key``: "passes" of sampling or
    "passes_total"), a line per sampler (LD dashed, 2nd-order dash-dotted); ``colors`` maps
    sampler names to colours (to match across axes)."""
    for sname, e in r["samplers"].items():
        if "mean" in e:
            style = "--" if sname.endswith("-LD") else ("-." if "2nd" in sname else "-")
            ax.plot(e.get(key, e["passes"]), e["mean"], style, label=sname,
                    color=(colors or {}).get(sname))
    xlabel = "data passes of sampling" if key == "passes" else "data passes (initial counted)"
    ax.set(xlabel=xlabel, title=f"{r['dataset']} (n = {r['n_train']})",
           ylabel=regression_label if r["task"] == "regression" else "test log-likelihood")
    if r["task"] == "regression":
        ax.set_yscale("log")
    ax.legend(fontsize=7)


def figure(r: dict, path: str, samplers) -> None:
    """Left: against passes of sampling; right: the old accounting (initial pass counted)."""
    fig, axes = pyplot().subplots(1, 2, figsize=(11, 4))
    colors = {name: f"C{i}" for i, name in enumerate(samplers)}
    plot_curves(axes[0], r, colors=colors, key="passes")
    plot_curves(axes[1], r, colors=colors, key="passes_total")
    for ax in axes:
        ax.axvline(1.0, color="0.7", lw=0.8)
    save(fig, path)


def bnn_table(results: list[dict], report_passes) -> str:
    """Per dataset, the metric (mean ± sd over chains) at marks on both axes: evaluation
    passes of sampling and epochs (steps·b/n); then the stability boundary per seed."""
    marks = [str(p) for p in report_passes]
    rows = []
    for r in results:
        if "skipped" in r:
            continue
        metric = "test RMSE" if r["task"] == "regression" else "test LL"
        rows.append(f"{r['dataset']} (n_train = {r['n_train']}, {r['dim']}-{r['hidden']}-"
                    f"{'1' if r['task'] == 'regression' else '26'} ReLU net, λ_max ≈ "
                    f"{r['lambda_max']:.3g}): {metric}, mean ± sd over chains")
        for key, axis in (("at", "evaluation passes of sampling (equal evaluations)"),
                          ("at_epochs", "epochs = steps·b/n (equal passes)")):
            present = [m for m in marks
                       if any(m in e.get(key, {}) for e in r["samplers"].values())]
            rows.append(f"  at {axis}")
            rows.append(f"  {'sampler':<13}{'h':>10}{'D':>9}" + "".join(f"{p:>18}"
                                                                      for p in present))
            for sname, e in r["samplers"].items():
                if key not in e:
                    rows.append(f"  {sname:<13}  {e.get('error')}")
                    continue
                fr = "-" if e["friction"] is None else f"{e['friction']:.3g}"
                cells = "".join(f"{e[key][p][0]:>10.4f} ± {e[key][p][1]:<5.3f}"
                                if p in e[key] else f"{'-':>18}" for p in present)
                rows.append(f"  {sname:<13}{e['h']:>10.2e}{fr:>9}{cells}")
        scans = {k: e["boundary_summary"] for k, e in r["samplers"].items()
                 if "boundary_summary" in e}
        if scans:  # the replicated stability boundary (issue 36)
            rows.append("  stability boundary h·√λ_max per seed (geometric mean): " + "; ".join(
                f"{k} {'/'.join(f'{x:.3g}' for x in b['per_seed'])} ({b['geo_mean']:.3g})"
                for k, b in scans.items()))
    return "\n".join(rows)


def bnn_figure(results: list[dict], path: str, samplers) -> None:
    """Metric against data passes, one axis per dataset."""
    done = [r for r in results if "skipped" not in r]
    plt = pyplot()
    fig, axes = plt.subplots(1, len(done), figsize=(5.5 * len(done), 4), squeeze=False)
    colors = {name: f"C{i}" for i, name in enumerate(samplers)}  # the same on every axis
    for ax, r in zip(axes[0], done, strict=True):
        plot_curves(ax, r, "test RMSE", colors)
    save(fig, path)
