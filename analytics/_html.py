"""The report page: matplotlib plots (Agg, embedded as base64 PNG) and the tables, one static HTML
file with no external resource, readable offline."""

from __future__ import annotations

import base64
import html
import io
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date

from matplotlib.figure import Figure

from . import _contract as C

_FIGSIZE = (9, 3.6)
# matplotlib's default cycle has 10 colours; the events plot has more series than that.
_COLOURS = 10
_DASHES = ("-", "--", ":", "-.")


@dataclass(frozen=True)
class Plot:
    """One figure and the data drawn in it: series label -> [(x, y)], for the tests to check."""

    title: str
    png: bytes
    series: dict[str, list[tuple]] = field(default_factory=dict)
    styles: dict[str, tuple[str, str]] = field(default_factory=dict)  # line label: colour, dash


def plots(rows: dict[str, list[tuple]]) -> list[Plot]:
    """The report's figures, drawn only from the rows that survived suppression."""
    t = {name: [dict(zip((c for c, _ in C.COLUMNS[name]), r, strict=True)) for r in rows[name]]
         for name in C.TABLES}
    by_event: dict[str, list[tuple]] = defaultdict(list)
    for r in t["events_daily"]:
        by_event[r["event"]].append((r["date"], r["count"]))
    by_kind: dict[str, list[tuple]] = defaultdict(list)
    heads: dict[str, int] = dict.fromkeys(C.HEAD_LABELS, 0)
    for r in t["conflicts"]:
        by_kind[r["kind"]].append((r["date"], r["count"]))
        if r["kind"] == "concurrent_heads":
            for label in C.HEAD_LABELS:
                heads[label] += r[C.head_column(label)]
    reasons: dict[str, int] = defaultdict(int)
    for r in t["rejections"]:
        reasons[r["reason"]] += r["count"]
    return [
        _lines("Daily active installs (distinct pids)", "installs",
               {"installs": [(r["date"], r["installs"]) for r in t["daily_active"]]}),
        _lines("Events per day, by event", "events", dict(sorted(by_event.items())), log=True),
        _lines("Sync session duration (ms)", "ms", {
            f"{p}": [(r["date"], r[f"duration_ms_{p}"]) for r in t["sync_sessions"]]
            for p in (C.pct_name(x) for x in C.SYNC_DURATION_PCTS)}, log=True),
        _lines("Conflicts per day, by kind", "conflicts", dict(sorted(by_kind.items()))),
        _bars("Heads per concurrent_heads conflict (all days)", "conflicts",
              {"concurrent_heads": [(k, v) for k, v in heads.items()]} if t["conflicts"] else {}),
        _lines("Time to converge after a conflict (ms)", "ms", {
            f"{p}": [(r["date"], r[f"ms_{p}"]) for r in t["convergence"]]
            for p in (C.pct_name(x) for x in C.CONVERGENCE_PCTS)}, log=True),
        _bars("Rejected objects by reason (all days)", "objects",
              {"rejections": sorted(reasons.items(), key=lambda kv: -kv[1])} if reasons else {},
              horizontal=True),
    ]


def _figure(title: str, ylabel: str, series: dict[str, list[tuple]],
            draw: Callable[..., None]) -> Plot:
    fig = Figure(figsize=_FIGSIZE, layout="constrained")
    ax = fig.add_subplot()
    ax.set_title(title, fontsize=11)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    styles = {}
    if any(series.values()):
        draw(fig, ax)
        styles = {line.get_label(): (line.get_color(), line.get_linestyle())
                  for line in ax.get_lines()}
    else:
        ax.text(0.5, 0.5, "no group with enough installs", ha="center", va="center",
                transform=ax.transAxes, color="grey")
    buf = io.BytesIO()
    # No metadata: matplotlib would otherwise write its web address into every image.
    fig.savefig(buf, format="png", dpi=96, metadata={"Software": None})
    return Plot(title, buf.getvalue(), {k: list(v) for k, v in series.items()}, styles)


def line_style(index: int) -> tuple[str, str]:
    """The colour and dash of a plot's `index`th line: no two of the first 40 alike."""
    return f"C{index % _COLOURS}", _DASHES[index // _COLOURS % len(_DASHES)]


def _lines(title: str, ylabel: str, series: dict[str, list[tuple]], log: bool = False) -> Plot:
    def draw(fig: Figure, ax) -> None:
        for index, (label, points) in enumerate(series.items()):
            if points:
                xs, ys = zip(*points, strict=True)
                colour, dash = line_style(index)
                ax.plot(xs, ys, marker="o", markersize=3, label=label, color=colour,
                        linestyle=dash)
        if log and all(y > 0 for points in series.values() for _, y in points):
            ax.set_yscale("log")
        if len(series) > 1:
            ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
        fig.autofmt_xdate()

    return _figure(title, ylabel, series, draw)


def _bars(title: str, ylabel: str, series: dict[str, list[tuple]],
          horizontal: bool = False) -> Plot:
    def draw(fig: Figure, ax) -> None:
        (points,) = series.values()
        labels, values = zip(*points, strict=True)
        if horizontal:
            ax.barh(labels, values)
            ax.invert_yaxis()
            ax.set_xlabel(ylabel)
            ax.set_ylabel("")
        else:
            ax.bar(labels, values)

    return _figure(title, ylabel, series, draw)


def page(summary: dict, rows: dict[str, list[tuple]], figures: Sequence[Plot]) -> str:
    """The whole report as one HTML document."""
    e = html.escape
    bad = summary["bad"]
    parts = [
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        "<title>Hearth usage report</title>", f"<style>{_CSS}</style></head><body>",
        "<h1>Hearth usage report</h1>",
        f"<p class=meta>{e(_period(summary))}; groups with fewer than "
        f"{summary['min_cohort']} distinct installs are left out. Generated "
        f"{e(summary['generated'])}.</p>",
        "<h2>Input</h2><table class=small>",
        _tr("lines read", summary["lines"]), _tr("events counted", summary["valid"]),
        _tr("bad lines (not counted)", bad["total"]),
        *(_tr(f"&nbsp;&nbsp;{e(reason.replace('_', ' '))}", n, raw=True)
          for reason, n in bad.items() if reason != "total"),
        "</table>",
        "<h2>Suppressed groups</h2><table class=small>",
        *(_tr(name, summary["suppressed"][name]) for name in C.TABLES),
        _tr("total", sum(summary["suppressed"].values())),
        "</table>",
        "<h2>Plots</h2>",
    ]
    for fig in figures:
        data = base64.b64encode(fig.png).decode("ascii")
        parts.append(f'<figure><img alt="{e(fig.title)}" src="data:image/png;base64,{data}">'
                     f"<figcaption>{e(fig.title)}</figcaption></figure>")
    parts.append("<h2>Tables</h2>")
    for name in C.TABLES:
        cols = [c for c, _ in C.COLUMNS[name]]
        parts.append(f"<details><summary>{e(name)} ({len(rows[name])} rows)</summary>"
                     "<table><tr>" + "".join(f"<th>{e(c)}</th>" for c in cols) + "</tr>")
        parts.extend("<tr>" + "".join(f"<td>{e(_cell(v))}</td>" for v in r) + "</tr>"
                     for r in rows[name])
        parts.append("</table></details>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _period(summary: dict) -> str:
    days = summary["days"]
    if not days:
        return "No data"
    return f"{days[0]} to {days[-1]} ({len(days)} days)"


def _tr(label: str, value: int, raw: bool = False) -> str:
    return (f"<tr><th>{label if raw else html.escape(label)}</th>"
            f"<td>{value:,}</td></tr>")


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.1f}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{font-size:1.2em;margin-top:1.6em;border-bottom:1px solid #ddd}
.meta{color:#555}table{border-collapse:collapse;margin:.5em 0;font-size:.85em}
th,td{padding:.2em .6em;border-bottom:1px solid #eee;text-align:right}
th:first-child{text-align:left}table.small th{text-align:left;font-weight:normal}
figure{margin:1em 0}img{max-width:100%}figcaption{color:#555;font-size:.85em}
summary{cursor:pointer;margin:.4em 0}
"""
