"""A window sweep's page: the loss rate against the swept variable as an SVG curve with its 95 %
band, the correct profile's curve beside it, the window in words, and the table of points.
Offline and self-contained, like the run report."""

from __future__ import annotations

import html as _html
import json
import math
from pathlib import Path
from typing import Any

from lab.report.html import CSS

W, H, PAD_L, PAD_R, PAD_T, PAD_B = 640, 310, 56, 150, 30, 48
COLOURS = {"defect": "#c0392b", "correct": "#27ae60"}


def _xscale(values: list[int], log_x: bool) -> Any:
    """Value -> x pixel. On a log axis 0 sits one decade left of the smallest positive value."""
    if log_x:
        pos = [v for v in values if v > 0] or [1]
        lo_v, hi_v = math.log10(min(pos)) - 1, math.log10(max(pos))

        def f(v: float) -> float:
            t = (math.log10(v) if v > 0 else lo_v) - lo_v
            return PAD_L + t / max(hi_v - lo_v, 1e-9) * (W - PAD_L - PAD_R)

        return f
    lo, hi = min(values), max(values)
    return lambda v: PAD_L + (v - lo) / max(hi - lo, 1e-9) * (W - PAD_L - PAD_R)


def _y(rate: float) -> float:
    return PAD_T + (1 - rate) * (H - PAD_T - PAD_B)


def curve_svg(
    curves: dict[str, list[dict[str, Any]]],
    labels: dict[str, str],
    axis: str,
    log_x: bool,
    edge: dict[str, Any] | None = None,
) -> str:
    """``curves``: role ("defect" / "correct") -> points as in results.json (value, k, n, low,
    high). Points with no judged trial are drawn as a gap (x marks on the axis). ``edge``: the
    two values tried between which the defect's window ends, shaded."""
    values = sorted({p["value"] for pts in curves.values() for p in pts})
    x = _xscale(values, log_x)
    out = [f'<svg class="window" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img">']
    if edge:
        a, b = (x(v) for v in edge["between"])
        out.append(
            f'<rect class="edge" x="{a:.1f}" y="{PAD_T}" width="{b - a:.1f}" height="{H - PAD_T - PAD_B}" '
            f'fill="#f1c40f" opacity="0.18"/><text class="tick" x="{(a + b) / 2:.1f}" y="{PAD_T - 6}" '
            f'text-anchor="middle">the edge lies here</text>'
        )
    for r in (0, 0.25, 0.5, 0.75, 1):
        out.append(f'<line x1="{PAD_L}" x2="{W - PAD_R}" y1="{_y(r):.1f}" y2="{_y(r):.1f}" stroke="#eee"/>')
        out.append(f'<text class="tick" x="{PAD_L - 6}" y="{_y(r) + 3:.1f}" text-anchor="end">{r:.0%}</text>')
    for v in values:
        out.append(f'<text class="tick" x="{x(v):.1f}" y="{H - PAD_B + 14}" text-anchor="middle">{v}</text>')
    out.append(f'<text class="tick" x="{(PAD_L + W - PAD_R) / 2:.0f}" y="{H - 10}" text-anchor="middle">')
    out.append(f"{_html.escape(axis)}{' (log scale)' if log_x else ''}</text>")
    out.append(
        f'<text class="tick" transform="translate(14,{(PAD_T + H - PAD_B) / 2:.0f}) rotate(-90)" '
        'text-anchor="middle">loss rate</text>'
    )
    for i, (role, pts) in enumerate(curves.items()):
        out += _curve(role, pts, x, i, labels.get(role, role))
    out.append("</svg>")
    return "".join(out)


def _curve(role: str, pts: list[dict[str, Any]], x: Any, i: int, label: str) -> list[str]:
    """One profile: its band, its line through the judged points, x marks for the unjudged ones,
    its legend entry (the i-th)."""
    out: list[str] = []
    colour = COLOURS.get(role, "#34495e")
    judged = [p for p in sorted(pts, key=lambda p: p["value"]) if p["n"]]
    if judged:
        band = [(x(p["value"]), _y(p["high"])) for p in judged] + [
            (x(p["value"]), _y(p["low"])) for p in reversed(judged)
        ]
        out.append(
            f'<polygon class="band {role}" points="{" ".join(f"{a:.1f},{b:.1f}" for a, b in band)}" '
            f'fill="{colour}" opacity="0.15"/>'
        )
        line = " ".join(f"{x(p['value']):.1f},{_y(p['k'] / p['n']):.1f}" for p in judged)
        out.append(f'<polyline class="curve {role}" points="{line}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for p in judged:
            tip = f"{p['value']}: {p['k']}/{p['n']} [{p['low']:.2f}, {p['high']:.2f}]"
            out.append(
                f'<circle cx="{x(p["value"]):.1f}" cy="{_y(p["k"] / p["n"]):.1f}" r="3.5" fill="{colour}">'
                f"<title>{_html.escape(tip)}</title></circle>"
            )
    for p in pts:
        if not p["n"]:
            out.append(
                f'<text x="{x(p["value"]):.1f}" y="{_y(0) + 4:.1f}" fill="{colour}" text-anchor="middle">x</text>'
            )
    ly = PAD_T + 14 + 18 * i
    out.append(
        f'<line x1="{W - PAD_R + 12}" x2="{W - PAD_R + 32}" y1="{ly - 4}" y2="{ly - 4}" stroke="{colour}" stroke-width="2"/>'
    )
    out.append(f'<text class="tick" x="{W - PAD_R + 36}" y="{ly}">{_html.escape(label)}</text>')
    return out


def table(results: dict[str, Any]) -> str:
    """The points, one row per value, one column per profile: k/n [low, high] (+ unknown)."""
    roles = list(results["curves"])
    by_value: dict[int, dict[str, dict[str, Any]]] = {}
    for role in roles:
        for p in results["curves"][role]:
            by_value.setdefault(p["value"], {})[role] = p
    head = "".join(f"<th>{_html.escape(results['profiles'][r])}</th>" for r in roles)
    rows = []
    for v in sorted(by_value):
        cells = []
        for r in roles:
            p = by_value[v].get(r)
            if p is None or not p["n"]:
                cells.append("<td>unknown</td>")
                continue
            extra = f" ({p['unknown']} unknown)" if p["unknown"] else ""
            cells.append(f"<td>{p['k']}/{p['n']} [{p['low']:.2f}, {p['high']:.2f}]{extra}</td>")
        rows.append(f"<tr><td>{v}</td>{''.join(cells)}</tr>")
    return f'<table class="intervals"><tr><th>{_html.escape(results["axis"])}</th>{head}</tr>{"".join(rows)}</table>'


def render(results: dict[str, Any]) -> str:
    labels = {r: results["profiles"][r] for r in results["curves"]}
    words = "".join(
        f"<li><b>{_html.escape(results['profiles'][r])}</b>: {_html.escape(w)}</li>"
        for r, w in results["window"].items()
    )
    replays = [line for p in results["curves"].get("defect", []) for line in p["replay"][:1]][:6]
    replay_html = "".join(f"<li><code>{_html.escape(line)}</code></li>" for line in replays)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>lab window: {_html.escape(results['sweep'])}</title>"
        f"<style>{CSS}</style></head><body>"
        f"<h1>Window of vulnerability: {_html.escape(results['axis'])}</h1>"
        f"<p>Fault {_html.escape(results['fault'])}; seed {results['seed']}; {results['trials']} trials in "
        f"{results['seconds']} s. Each point: the share of judged trials that lost data, with its 95 % Wilson band.</p>"
        f"<ul class='window-words'>{words}</ul>"
        + curve_svg(results["curves"], labels, results["axis"], results["log_x"], results.get("edge"))
        + "<h2>Points</h2>"
        + table(results)
        + (f"<h2>Replay a failing trial</h2><ul>{replay_html}</ul>" if replay_html else "")
        + "</body></html>"
    )


def write(out_dir: Path, results: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / "report.html").write_text(render(results))


def terminal(results: dict[str, Any], out_dir: Path) -> str:
    """The table of points (a column per curve), the window in words per curve, the report."""
    roles, labels = list(results["curves"]), results["profiles"]
    lines = [f"lab window: {results['axis']}, fault {results['fault']}"]
    lines.append(f"{results['sweep']:>18}  " + "  ".join(f"{labels[r]:<26}" for r in roles))
    for row in zip(*(results["curves"][r] for r in roles), strict=True):
        lines.append(f"{row[0]['value']:>18}  " + "  ".join(f"{_cell(p):<26}" for p in row))
    for role in roles:
        lines.append(f"{labels[role]}: {results['window'][role]}")
    lines.append(f"{results['exit']['reason']}; {results['trials']} trials in {results['seconds']} s")
    lines.append(f"report: {out_dir / 'report.html'}")
    return "\n".join(lines)


def _cell(p: dict[str, Any]) -> str:
    if not p["n"]:
        return f"unknown ({p['unknown']})"
    return f"{p['k']}/{p['n']} [{p['low']:.2f}, {p['high']:.2f}]" + (f" +{p['unknown']}?" if p["unknown"] else "")
