"""report.html: what a run found, for people to look at. One self-contained file (inline CSS and
SVG, no script, no font, no image fetched), rendered from the run folder alone: results.json and
the failing trials' artifacts. The numbers are results.json's, never recomputed.

Sections: the verdicts in words, a heatmap (profile x fault/refresh, one cell per results.json
cell; coloured by its most frequent anomaly, numbered with its loss rate), the intervals, and per failing trial a timeline of four lanes on one time
axis -- browser, backend HTTP, Redis, faults -- with links to its trace and artifacts.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from lab.model.attribution import METRICS
from lab.report.store_timeline import store_timeline
from lab.report.timeline import trial_section

METRIC_WORDS = METRICS  # one sentence per metric, as the summary words it


def column(cell: dict[str, Any]) -> str:
    """The heatmap column of a cell: the same label as the terminal table (Cell.label)."""
    from lab.plan.schedule import fault_text

    return f"{fault_text(cell['fault'], cell.get('fault_params', {}))}/{cell['refresh']}" + (
        f"/t{cell['turns']}" if cell["turns"] != 5 else ""
    )


def _color(rate: float) -> str:
    # white-green (0) to red (1): loss is what the eye should find
    lo, hi = (234, 245, 234), (192, 57, 43)
    r, g, b = (round(a + (c - a) * rate) for a, c in zip(lo, hi))
    return f"rgb({r},{g},{b})"


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


# What colours a heatmap cell: the most frequent of these (loss first on a tie). An error whose
# write was applied (phantom_fail) is allowed for an unknown outcome, so it does not colour.
COLOURING = ("lost", "expired", "duplicated", "amnesia", "reordered", "unexpected", "history_failed", "stale")


def _worst(cell: dict[str, Any]) -> tuple[str, int]:
    """The anomaly that colours the cell, and in how many trials: a cell with duplicates,
    amnesia or reordering is never drawn green because nothing was lost."""
    an = cell.get("anomalies", {})
    k, neg = max((an.get(m, 0), -i) for i, m in enumerate(COLOURING))
    return COLOURING[-neg], k


def heatmap(cells: list[dict[str, Any]]) -> str:
    cols = list(dict.fromkeys(column(c) for c in cells))
    rows = list(dict.fromkeys(c["profile"] for c in cells))
    at = {(c["profile"], column(c)): c for c in cells}
    out = ['<table class="heatmap"><thead><tr><th>profile \\ fault / refresh</th>']
    out += [f'<th class="col">{escape(c)}</th>' for c in cols]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append(f"<tr><th>{escape(r)}</th>")
        for col in cols:
            c = at.get((r, col))
            if c is None:
                out.append('<td class="empty"></td>')
                continue
            k, n = c["rates"]["lost"]["k"], c["rates"]["lost"]["n"]
            lo, hi = c["ci95"]
            unex = c["status"] == "unexercised"
            worst, wk = _worst(c)
            style = "" if unex else f' style="background:{_color(wk / n if n else 0.0)}"'
            title = (
                f"{c['cell_id']}: lost in {k}/{n} trials, 95% CI {_pct(lo)}-{_pct(hi)}; "
                f"anomalies {json.dumps(c['anomalies'])}; {c['unknown']} unknown"
                + (f"; unexercised: {c['reason']}" if unex else "")
            )
            other = f" {worst} {wk}/{n}" if worst != "lost" and wk else ""
            text = "unexercised" if unex else f"{_pct(c['loss_rate'])}<small>{k}/{n}{escape(other)}</small>"
            out.append(
                f'<td class="hm{" unex" if unex else ""}" data-cell="{escape(c["cell_id"])}" '
                f'data-rate="{c["loss_rate"]}" data-anomaly="{worst}" '
                f'data-anomaly-rate="{wk / n if n else 0.0}" data-k="{k}" data-n="{n}"{style} '
                f'title="{escape(title)}"><a href="#cell-{escape(c["cell_id"])}">{text}</a></td>'
            )
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def intervals(cells: list[dict[str, Any]]) -> str:
    """One bar per cell: the loss rate's 95% Wilson interval with the point estimate."""
    w, h = 300, 14
    out = ['<table class="intervals"><tbody>']
    for c in cells:
        lo, hi = c["ci95"]
        k, n = c["rates"]["lost"]["k"], c["rates"]["lost"]["n"]
        svg = (
            f'<svg width="{w}" height="{h}" role="img" aria-label="{_pct(lo)} to {_pct(hi)}">'
            f'<rect x="0" y="6" width="{w}" height="2" fill="#ddd"/>'
            f'<rect x="{lo * w:.1f}" y="2" width="{max(1.0, (hi - lo) * w):.1f}" height="10" fill="#7f8c8d" opacity=".5"/>'
            f'<rect x="{c["loss_rate"] * w - 1:.1f}" y="0" width="3" height="{h}" fill="#c0392b"/></svg>'
        )
        out.append(
            f'<tr data-cell="{escape(c["cell_id"])}"><th>{escape(c["profile"])}</th>'
            f"<td>{escape(column(c))}</td><td>{svg}</td>"
            f"<td>{k}/{n} = {_pct(c['loss_rate'])} [{_pct(lo)}, {_pct(hi)}]"
            f"{' unexercised' if c['status'] == 'unexercised' else ''}</td></tr>"
        )
    out.append("</tbody></table>")
    return "".join(out)


def verdict_sentence(v: dict[str, Any]) -> str:
    where = f"under {v['fault']} / {v['refresh']}" + (f" ({v['turns']} turns)" if v.get("turns", 5) != 5 else "")
    if v["verdict"] == "causes":
        return f"<b>{escape(v['defect'])}</b> causes it: the chat {METRIC_WORDS[v['metric']]} {escape(where)}. {escape(v['evidence'])}"
    return f"inconclusive for {escape(v['defect'])} ({v['metric']}) {escape(where)}: {escape(v['evidence'])}"


# ---------------------------------------------------------------- timelines
CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse}th,td{padding:4px 6px;text-align:left;vertical-align:middle}
.suspects td{font-size:12px;border-bottom:1px solid #eee}.suspects tr.proven td:first-child{color:#c0392b;font-weight:bold}.suspects tr.one-of td:first-child{color:#d35400}.suspects tr.cleared td:first-child{color:#27ae60}.suspects tr.untested td:first-child{color:#777}
.heatmap th.col{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;font-size:12px}
.heatmap td.hm{width:64px;height:40px;text-align:center;border:1px solid #fff}
.heatmap td.hm a{color:#111;text-decoration:none;display:block}.heatmap small{display:block;font-size:11px}
.heatmap td.unex{background:repeating-linear-gradient(45deg,#eee,#eee 4px,#ddd 4px,#ddd 8px);font-size:11px}
.commands td{font-size:11px;padding:0 6px}.intervals td,.intervals th{font-size:12px;padding:1px 6px}
.ok,.item.ok{fill:#27ae60;color:#27ae60}.bad,.item.bad{fill:#c0392b;color:#c0392b}
.item.mark{fill:#34495e}.lost,.item.lost{fill:#8e0000;color:#8e0000;stroke:#000;stroke-width:1}.item.lua{fill:#95a5a6}.fault,.item.fault{fill:#e67e22;color:#e67e22;opacity:.8}
.item.refresh{stroke:#8e44ad;stroke-width:2;stroke-dasharray:4 3}.refresh{color:#8e44ad}
.lane-title{font-size:12px;fill:#555}.tick{font-size:10px;fill:#777}
.exit0{color:#27ae60}.exit1{color:#c0392b}code{font-size:12px;background:#f4f4f4;padding:1px 3px}
details.trial{margin:6px 0;padding:4px;border:1px solid #eee}summary{cursor:pointer}
"""


def render(results: dict[str, Any], run_dir: Path) -> str:
    cells = results.get("cells", [])
    code = results.get("exit", {}).get("code", 1)
    reasons = results.get("exit", {}).get("reasons", [])
    verdicts = results.get("verdicts", [])
    causes = [v for v in verdicts if v["verdict"] == "causes"]
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>chaoslab run {escape(str(results.get('run_id', '')))}</title><style>{CSS}</style></head><body>",
        f"<h1>chaoslab run {escape(str(results.get('run_id', '')))}</h1>",
        f"<p>mode {escape(str(results.get('mode')))} &middot; "
        + (f"seed {results.get('seed')} &middot; " if results.get("seed") is not None else "")
        + (
            f"driven through {'the app' if results.get('page') == 'app' else 'the lab'}'s page &middot; "
            if "page" in results
            else ""
        )
        + f"{len(cells)} cells, {sum(c['trials'] + c['unknown'] for c in cells)} trials &middot; "
        f"<span class='exit{0 if code == 0 else 1}'>exit {code}</span></p>",
    ]
    if reasons:
        parts.append("<ul>" + "".join(f"<li>{escape(r)}</li>" for r in reasons) + "</ul>")
    if "diagnoses" in results:  # lab investigate: a black box, diagnosed from outside
        parts.append(diagnoses_section(results))
        if "suspects" in results:
            from lab.suspects.verdict import lines_html

            parts.append(lines_html(results["suspects"]))
        parts.append(evidence_section(results, run_dir))
    else:
        parts.append("<h2>Verdicts</h2>")
        parts.append(
            "<ul class='verdicts'>" + "".join(f"<li>{verdict_sentence(v)}</li>" for v in causes) + "</ul>"
            if causes
            else "<p>No defect was shown to cause an anomaly.</p>"
        )
    other = [v for v in verdicts if v["verdict"] != "causes"]
    if other:
        parts.append(
            f"<details><summary>{len(other)} inconclusive</summary><ul>"
            + "".join(f"<li>{verdict_sentence(v)}</li>" for v in other)
            + "</ul></details>"
        )
    parts.append(
        "<h2>Anomalies per cell: the colour is the most frequent anomaly's rate, "
        "the number the loss rate</h2>" + heatmap(cells)
    )
    parts.append("<h2>95% intervals (Wilson) of the loss rate</h2>" + intervals(cells))
    parts += failing_sections(results, cells, run_dir)
    parts.append("</body></html>")
    return "\n".join(parts)


def failing_sections(results: dict[str, Any], cells: list[dict[str, Any]], run_dir: Path) -> list[str]:
    """Per cell, its failing trials that kept artifacts: timeline, trace, files, replay."""
    parts: list[str] = []
    replay = results.get("replay", {})
    with_artifacts = [c for c in cells if any((run_dir / "trials" / t).is_dir() for t in c.get("failing_trials", []))]
    if with_artifacts or "diagnoses" not in results:
        parts.append("<h2>Failing trials</h2>")
    for c in with_artifacts:
        failing = [t for t in c.get("failing_trials", []) if (run_dir / "trials" / t).is_dir()]
        parts.append(
            f'<h3 id="cell-{escape(c["cell_id"])}">{escape(c["profile"])} &middot; '
            f"{escape(column(c))} -- {len(failing)} failing</h3>"
        )
        parts += [trial_section(run_dir, t, replay.get(t, ""), i == 0) for i, t in enumerate(failing)]
    return parts


def diagnoses_section(results: dict[str, Any]) -> str:
    """`lab investigate`: the diagnoses with their evidence, or what a clean run bounds."""
    ds = results.get("diagnoses", [])
    out = [f"<h2>Diagnoses of {escape(str(results.get('target', '')))}: {escape(str(results.get('verdict', '')))}</h2>"]
    if ds:
        out.append(
            "<ul class='verdicts'>"
            + "".join(
                f"<li data-diagnosis='{escape(d['code'])}'><b>{escape(d['code'])}</b>: {escape(d['cause'])}. "
                + (
                    f"{d['k']}/{d['n']} trials [{_pct(d['ci95'][0])}, {_pct(d['ci95'][1])}]. "
                    if d["n"] >= 2
                    else "In the one trial that could show it: one trial gives no rate. "
                )
                + f"Evidence: {escape(d['evidence'])}</li>"
                for d in ds
            )
            + "</ul>"
        )
    else:
        out.append(
            "<ul>"
            + "".join(
                f"<li>{escape(name)}: {b['k']}/{b['n']} trials, rate below {_pct(b['upper95'])} at 95%</li>"
                for name, b in results.get("bounds", {}).items()
            )
            + "</ul>"
        )
    return "".join(out)


EVIDENCE_TRIALS = 3  # per diagnosis: enough to see the pattern, few enough to read


def evidence_section(results: dict[str, Any], run_dir: Path) -> str:
    """`lab investigate`: per diagnosis, its first trials turn by turn -- the answer the browser
    got, what the page showed after the refresh, what the settled history and the Redis key
    hold -- so the evidence can be checked by eye, not only read as a sentence."""
    from lab.model.checker import check_safe
    from lab.model.placement import place
    from lab.model.history import Trial

    try:
        raw = json.loads((run_dir / "trials.json").read_text())
    except (OSError, ValueError):
        return ""
    by_id = {t["trial_id"]: t for t in raw}
    out = ["<h2>Evidence, trial by trial</h2>"]
    for d in results.get("diagnoses", []):
        for i, tid in enumerate(d["trials"][:EVIDENCE_TRIALS]):
            if tid not in by_id:
                continue
            t = Trial.from_json(by_id[tid])
            c = check_safe(t)
            lost = set(c.lost["user"]) | set(c.lost["assistant"])
            shown = place(t.page_after_refresh, t.sends)[0] if t.page_after_refresh is not None else None
            kept = place(t.final_rows, t.sends)[0] if t.final_rows is not None else None
            stored = set((t.redis_final or {}).get("stored_turns", []))
            ttl = {o.turn: f"{o.pttl_ms}" + ("" if o.settled else " (unsettled)") for o in t.ttl}
            rows = []
            for s in t.sends:
                cls = "ok" if s.outcome == "ok" else "bad"
                answer = (
                    f"{s.status or 'no answer'} in {s.ms or 0:.0f} ms"
                    + (" (HTML)" if s.html else "")
                    + (" under the fault" if s.under_fault else "")
                    + (" -- cut after the first chunk" if s.cut else "")
                )
                page = _yes(shown[s.id]) if shown and s.id in shown else escape(t.page_error or "-")
                rows.append(
                    f"<tr><td>{s.turn}</td><td class='{cls}'>{escape(answer)}</td><td>{page}</td>"
                    f"<td class='{'lost' if s.id in lost else ''}'>"
                    f"{_yes(kept[s.id]) if kept and s.id in kept else 'never settled'}</td>"
                    f"<td>{'yes' if s.turn in stored else ('no' if t.redis_final else '-')}</td>"
                    f"<td>{escape(ttl.get(s.turn, '-'))}</td></tr>"
                )
            flap = f"<p>reads never settled: {escape(json.dumps(t.flapping))}</p>" if t.flapping else ""
            flap += store_timeline(t)
            out.append(
                f"<details class='trial' data-trial='{escape(tid)}'{' open' if i == 0 else ''}><summary>"
                f"<b>{escape(d['code'])}</b> &middot; trial {escape(tid)} &middot; {escape(t.fault)} / "
                f"{escape(t.refresh)}{' &middot; unknown: ' + escape(t.unknown) if t.unknown else ''}"
                f"</summary><table class='intervals'><tr><th>turn</th><th>answer</th>"
                f"<th>page after the refresh (user/reply rows)</th><th>settled history (user/reply rows; "
                f"positions)</th><th>text in the Redis key</th><th>PTTL after it (ms)</th></tr>{''.join(rows)}"
                f"</table>{flap}</details>"
            )
    return "".join(out) if len(out) > 1 else ""


def _yes(p: Any) -> str:
    """A message's rows in a read: counts, and where they are (a reply above its question shows)."""
    return f"{len(p.user)}/{len(p.reply)}" + (f" @{p.user[:1]}/{p.reply[:1]}" if p.user or p.reply else "")


def write(run_dir: Path) -> Path:
    """(Re)render report.html from the run folder."""
    results = json.loads((run_dir / "results.json").read_text())
    out = run_dir / "report.html"
    out.write_text(render(results, run_dir))
    return out
