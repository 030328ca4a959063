"""The ``sgmc demo`` report folder: ``report.md`` and ``report.html`` beside the figures.

Both files are self-contained apart from the PNG figures, which they link by relative path
(the folder can be moved or zipped as a whole). The HTML is written directly (no Markdown
dependency); it carries the same content as the Markdown.
"""

from __future__ import annotations

import datetime
import html
import json
import os
import platform
from typing import Any

from sgmc.lab.experiments.verdict import RULE


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _settings_text(settings: dict) -> str:
    return json.dumps(settings, indent=1, default=str, ensure_ascii=False)


def _header(quick: bool, seed: int, seconds: float, cpu_seconds: float) -> dict[str, str]:
    import jax

    from sgmc import __version__

    return {"command": f"sgmc demo{' --quick' if quick else ''} --seed {seed}",
            "mode": "quick (reduced)" if quick else "full",
            "seed": str(seed),
            "time": f"{seconds:.0f} s wall clock, {cpu_seconds:.0f} s CPU",
            "written": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "versions": f"sgmc {__version__}, jax {jax.__version__}, "
                        f"Python {platform.python_version()}",
            "backend": f"{jax.default_backend()} ({jax.device_count()} device(s))"}


#: The library beyond the four papers, listed at the end of the report: (what, how to try it).
BEYOND_PAPERS = (
    ("sgmc.warmup: step size, friction and a preconditioner chosen from the problem (no "
     "hand-chosen step size), compared with the old hand rule on posteriordb",
     "sgmc reproduce warmup-comparison; docs/tuning.md"),
    ("sgmc.sgnht: the stochastic-gradient Nosé–Hoover thermostat (Ding et al. 2014), which "
     "absorbs unknown gradient noise", "docs/dynamics.md, SGNHT"),
    ("sgmc.cyclical: cyclical SG-MCMC (Zhang et al. 2020) over any sampler, draws kept in "
     "the sampling stages only", "sgmc reproduce cyclical-mixture; docs/samplers.md"),
    ("sample(..., predict=fn, store_draws=False): the Bayesian model average of predictions "
     "accumulated inside the compiled loop, no draws stored", "docs/long-runs.md"),
)


def markdown(sections: list[Any], head: dict[str, str]) -> str:
    """The report as Markdown: the table, then one part per section with its figures."""
    lines = ["# sgmc demo: one small run of each paper's headline experiment", ""]
    lines += [f"- **{k}**: `{v}`" if k == "command" else f"- **{k}**: {v}"
              for k, v in head.items()]
    lines += ["", "Each row is a reduced version of the experiment that the command in its "
              "section runs in full, at the demo's size; nothing was tuned toward agreement. "
              f"Verdict rule: {RULE}.", "",
              "| paper | method(s) | claim | measured | verdict |", "|---|---|---|---|---|"]
    for s in sections:
        lines.append("| " + " | ".join(_cell(v) for v in (s.paper, s.methods, s.claim,
                                                           s.measured, s.verdicts)) + " |")
    for i, s in enumerate(sections, 1):
        lines += ["", f"## {i}. {s.paper}", "", f"- claim: {s.claim}",
                  f"- measured: {s.measured}", f"- run time: {s.seconds:.0f} s",
                  f"- full experiment: `{s.command}`", "", "Verdicts:", ""]
        lines += [f"- {c.claim}: **{c.verdict}** — {c.effect_str()}"
                  + "".join(f"; deviation: {d}" for d in c.deviations) for c in s.claims]
        lines += [""]
        lines += s.details
        for fig in s.figures:
            lines += ["", f"![{s.paper}]({fig})"]
        lines += ["", "<details><summary>settings</summary>", "", "```json",
                  _settings_text(s.settings), "```", "", "</details>"]
    lines += ["", "## Beyond the papers", ""]
    lines += [f"- {what} — `{how}`" for what, how in BEYOND_PAPERS]
    return "\n".join(lines) + "\n"


def _md_table_to_html(lines: list[str]) -> str:
    """Turn the sections' detail lines (text and simple pipe tables) into HTML."""
    out, table = [], []

    def flush():
        if not table:
            return
        rows = [[c.strip().replace("\\|", "|") for c in r.strip().strip("|").split(" | ")]
                for r in table if not set(r.replace("|", "").strip()) <= {"-"}]
        out.append("<table><tr>" + "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
                   + "</tr>" + "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r)
                                       + "</tr>" for r in rows[1:]) + "</table>")
        table.clear()

    for line in lines:
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.strip():
            out.append(f"<p>{html.escape(line)}</p>")
    flush()
    return "\n".join(out)


_CSS = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto;line-height:1.4}"
        "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;"
        "padding:4px 8px;vertical-align:top;text-align:left}th{background:#eee}"
        "img{max-width:100%}code,pre{background:#f6f6f6}")


def html_report(sections: list[Any], head: dict[str, str]) -> str:
    """The same report as one HTML page (figures linked by relative path)."""
    e = html.escape
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
             f"<title>sgmc demo</title><style>{_CSS}</style></head><body>",
             "<h1>sgmc demo: one small run of each paper's headline experiment</h1><ul>"]
    parts += [f"<li><b>{e(k)}</b>: {e(v)}</li>" for k, v in head.items()]
    parts += [f"</ul><p>Verdict rule: {e(RULE)}.</p><table><tr><th>paper</th>"
              "<th>method(s)</th><th>claim</th><th>measured</th><th>verdict</th></tr>"]
    for s in sections:
        parts.append("<tr>" + "".join(f"<td>{e(v)}</td>" for v in
                                      (s.paper, s.methods, s.claim, s.measured, s.verdicts))
                     + "</tr>")
    parts.append("</table>")
    for i, s in enumerate(sections, 1):
        parts += [f"<h2>{i}. {e(s.paper)}</h2><ul>",
                  f"<li>claim: {e(s.claim)}</li><li>measured: {e(s.measured)}</li>",
                  f"<li>run time: {s.seconds:.0f} s</li>",
                  f"<li>full experiment: <code>{e(s.command)}</code></li></ul>",
                  "<p>Verdicts:</p><ul>"]
        parts += [f"<li>{e(c.claim)}: <b>{e(c.verdict)}</b> — {e(c.effect_str())}"
                  + "".join(f"; deviation: {e(d)}" for d in c.deviations) + "</li>"
                  for c in s.claims]
        parts += ["</ul>", _md_table_to_html(s.details)]
        parts += [f"<p><img src='{e(f)}' alt='{e(s.paper)}'></p>" for f in s.figures]
        parts.append(f"<details><summary>settings</summary><pre>"
                     f"{e(_settings_text(s.settings))}</pre></details>")
    parts.append("<h2>Beyond the papers</h2><ul>" + "".join(
        f"<li>{e(what)} — <code>{e(how)}</code></li>" for what, how in BEYOND_PAPERS)
        + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_report(out: str, sections: list[Any], quick: bool, seed: int,
                 seconds: float, cpu_seconds: float = float("nan")) -> list[str]:
    """Write ``out/report.md``, ``out/report.html`` and ``out/report.json`` (every claim as
    :meth:`sgmc.lab.experiments.verdict.Claim.to_dict` writes it); returns their paths.

    ``sections`` are :class:`sgmc.lab.demo.Section` rows whose figures already sit in ``out``.
    """
    os.makedirs(out, exist_ok=True)
    head = _header(quick, seed, seconds, cpu_seconds)
    paths = []
    for name, text in (("report.md", markdown(sections, head)),
                       ("report.html", html_report(sections, head))):
        path = os.path.join(out, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        paths.append(path)
    path = os.path.join(out, "report.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump({"head": head, "claims": [dict(c.to_dict(), paper_name=s.paper)
                                            for s in sections for c in s.claims]},
                  fh, indent=1, default=float, ensure_ascii=False)
    paths.append(path)
    return paths
