"""A failing trial in report.html: its timeline -- four lanes on one time axis (browser,
backend HTTP, Redis, faults) -- and its section with the trace, artifacts and replay command,
rendered from the trial's own artifact folder."""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from lab.model.history import Trial
from lab.report.model_lane import model_lane

LANES = (("browser", "browser"), ("http", "backend HTTP"), ("redis", "Redis"), ("fault", "faults"))
MODEL_LANE = ("model", "model calls")
ARTIFACTS = (
    "trial.json",
    "network.jsonl",
    "backend-events.jsonl",
    "redis-commands.jsonl",
    "redis.json",
    "toxics.json",
    "screenshot.png",
)
W, LANE_H, LEFT = 960, 34, 110  # timeline geometry (px)


def _jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    except (OSError, ValueError):
        return []


def _json(path: Path) -> dict[str, Any]:
    try:
        return dict(json.loads(path.read_text()))
    except (OSError, ValueError):
        return {}


def lane_items(folder: Path) -> dict[str, list[dict[str, Any]]]:
    """The trial's artifacts as timeline items per lane: {t0, t1 (spans), label, kind}."""
    trial = _json(folder / "trial.json")
    lost = {i for ids in trial.get("result", {}).get("lost", {}).values() for i in ids}
    lanes = {
        "browser": _browser_lane(folder, lost),
        "http": _http_lane(folder),
        "redis": _redis_lane(folder),
        "fault": _fault_lane(trial),
    }
    history = trial.get("history") or {}
    if history.get("model_calls") is not None:  # lab chaos --model: what each call was told
        lanes["model"] = model_lane(Trial.from_json(history))
    return lanes


def _browser_lane(folder: Path, lost: set[str]) -> list[dict[str, Any]]:
    browser: list[dict[str, Any]] = []
    requests: dict[Any, float] = {}
    for e in _jsonl(folder / "network.jsonl"):
        t, kind = float(e["t"]), e.get("kind")
        if kind == "request":
            requests[e["id"]] = t
        elif kind in ("response", "requestfailed"):
            t0 = requests.pop(e.get("id"), t)
            ok = kind == "response" and int(e.get("status", 0)) < 400
            label = f"POST /chat {e.get('status', e.get('failure', 'failed'))}"
            if e.get("id") in lost:
                label += " -- acknowledged, then lost" if ok else " -- lost"
            browser.append(
                {"t0": t0, "t1": t, "label": label, "kind": "lost" if e.get("id") in lost else "ok" if ok else "bad"}
            )
        elif kind in ("send", "retry", "refresh"):
            label = {
                "send": f"send turn {e.get('turn')}",
                "retry": "retry",
                "refresh": f"refresh ({e.get('how', '')})",
            }[kind]
            browser.append({"t0": t, "label": label, "kind": "refresh" if kind == "refresh" else "mark"})
    browser += [{"t0": t0, "t1": None, "label": "POST /chat (no answer)", "kind": "bad"} for t0 in requests.values()]
    return browser


def _http_lane(folder: Path) -> list[dict[str, Any]]:
    http: list[dict[str, Any]] = []
    for e in _jsonl(folder / "backend-events.jsonl"):
        ev, t = e.get("event"), float(e.get("t", 0))
        if ev == "http":
            t0 = float(e.get("t0", t))
            http.append(
                {
                    "t0": t0,
                    "t1": t,
                    "label": f"{e['method']} {e['path']} {e['status']}",
                    "kind": "ok" if int(e["status"]) < 400 else "bad",
                }
            )
        elif ev in ("store.error", "chat.stream_closed", "chat.saved_at_stream_end"):
            label = f"{ev}: {e.get('what', '')} {e.get('error', '')}".strip()[:90]
            http.append({"t0": t, "label": label, "kind": "bad" if ev == "store.error" else "mark"})
    return http


def _redis_lane(folder: Path) -> list[dict[str, Any]]:
    redis_lane = [
        {
            "t0": float(c["t"]),
            "label": " ".join(c["args"][:2] if c["args"] and c["args"][0].upper() != "EVAL" else c["args"][:1]),
            "kind": "lua" if c.get("lua") else "mark",
        }
        for c in _jsonl(folder / "redis-commands.jsonl")
    ]
    dump = _json(folder / "redis.json")
    redis_lane += [
        {"t0": float(t), "label": f"expired {k}", "kind": "bad"} for k, t in dump.get("expired_at", {}).items()
    ]
    return redis_lane


def _fault_lane(trial: dict[str, Any]) -> list[dict[str, Any]]:
    faults: list[dict[str, Any]] = []
    armed = None
    no_fault = trial.get("cell", {}).get("fault") == "none"
    for e in [] if no_fault else (trial.get("history") or {}).get("events", []):
        if e.get("kind") == "fault":
            armed = float(e["t"])
            if e.get("turn") is None:  # a whole-trial fault: in place from the start to the end
                faults.append({"t0": armed, "t1": None, "label": str(e.get("evidence", ""))[:90], "kind": "fault"})
                armed = None
        elif e.get("kind") == "heal" and armed is not None:
            faults.append(
                {"t0": armed, "t1": float(e["t"]), "label": f"fault at turn {e.get('turn')}", "kind": "fault"}
            )
            armed = None
    return faults


def timeline(folder: Path) -> str:
    lanes = lane_items(folder)
    return svg(lanes, LANES + ((MODEL_LANE,) if "model" in lanes else ()))


def svg(lanes: dict[str, list[dict[str, Any]]], titles: tuple[tuple[str, str], ...]) -> str:
    """Lanes of items ({t0, t1 (spans), label, kind}) on one time axis, in ms from the first."""
    ts = [x for items in lanes.values() for i in items for x in (i["t0"], i.get("t1")) if x]
    if not ts:
        return '<p class="note">no timeline: the trial recorded no events</p>'
    start, end = min(ts), max(ts)
    span = max(end - start, 1e-3)
    width = W - LEFT - 10

    def x(t: float | None) -> float:
        return LEFT + ((end if t is None else t) - start) / span * width

    height = LANE_H * len(titles) + 24
    out = [f'<svg class="timeline" width="{W}" height="{height}" role="img">']
    for i, (lane, title) in enumerate(titles):
        y = i * LANE_H
        out.append(
            f'<g class="lane" data-lane="{lane}"><rect x="0" y="{y}" width="{W}" height="{LANE_H}" '
            f'fill="{"#fafafa" if i % 2 else "#f0f3f5"}"/>'
            f'<text x="6" y="{y + 20}" class="lane-title">{title}</text>'
        )
        for n, item in enumerate(lanes[lane]):
            x0 = x(item["t0"])
            label = escape(f"{item['label']} @ +{(item['t0'] - start) * 1000:.0f} ms")
            cls = f"item {item['kind']}"
            if "t1" in item:
                x1 = x(item["t1"])
                out.append(
                    f'<rect class="{cls}" x="{x0:.1f}" y="{y + 8 + (n % 3) * 6}" '
                    f'width="{max(2.0, x1 - x0):.1f}" height="6"><title>{label}</title></rect>'
                )
            elif item["kind"] == "refresh":
                out.append(
                    f'<line class="{cls}" x1="{x0:.1f}" y1="0" x2="{x0:.1f}" y2="{height - 24}">'
                    f"<title>{label}</title></line>"
                )
            else:
                out.append(f'<circle class="{cls}" cx="{x0:.1f}" cy="{y + 17}" r="3"><title>{label}</title></circle>')
        out.append("</g>")
    for k in range(5):  # the time axis, in ms from the trial's first event
        t = start + span * k / 4
        anchor = ("start", "middle", "middle", "middle", "end")[k]
        out.append(
            f'<text x="{x(t):.1f}" y="{height - 6}" text-anchor="{anchor}" class="tick">'
            f"+{(t - start) * 1000:.0f} ms</text>"
        )
    out.append("</svg>")
    return "".join(out)


def trial_section(run_dir: Path, trial_id: str, replay: str, open_: bool) -> str:
    folder = run_dir / "trials" / trial_id
    trial = _json(folder / "trial.json")
    result = trial.get("result", {})
    traces = sorted(p.name for p in folder.glob("trace-*.zip"))
    links = [f'<a href="trials/{escape(trial_id)}/{a}">{a}</a>' for a in ARTIFACTS if (folder / a).exists()]
    links += [f'<a href="trials/{escape(trial_id)}/{t}">{t}</a>' for t in traces]
    show = "".join(f"<code>.venv/bin/playwright show-trace {escape(str(folder / t))}</code><br>" for t in traces)
    lost = result.get("lost", {})
    commands = _jsonl(folder / "redis-commands.jsonl")
    t_first = min([float(c["t"]) for c in commands], default=0.0)
    dump = _json(folder / "redis.json")
    rows = "".join(
        f"<tr><td>+{(float(c['t']) - t_first) * 1000:.0f} ms</td><td>{'lua' if c.get('lua') else ''}</td>"
        f"<td><code>{escape(' '.join(c['args'])[:160])}</code></td></tr>"
        for c in commands
    )
    redis_table = (
        f"<details><summary>{len(commands)} Redis commands on this conversation's keys; "
        f"at the end: {len(dump.get('rows', []))} rows, PTTL {dump.get('pttl_ms', '?')} ms"
        f"{', expired' if dump.get('expired_at') else ''}</summary>"
        f"<table class='commands'>{rows}</table></details>"
    )
    summary = (
        f"{escape(trial_id)}: {escape(', '.join(result.get('reasons', [])))} -- lost "
        f"{len(lost.get('user', []))} user / {len(lost.get('assistant', []))} replies"
    )
    return (
        f'<details class="trial" data-trial="{escape(trial_id)}"{" open" if open_ else ""}>'
        f"<summary>{summary}</summary>{timeline(folder)}{redis_table}"
        f'<p class="legend"><span class="ok">&#9632;</span> answered '
        f'<span class="bad">&#9632;</span> failed / expired '
        f'<span class="lost">&#9632;</span> acknowledged, then lost '
        f'<span class="fault">&#9632;</span> fault window <span class="refresh">|</span> refresh</p>'
        f"<p>artifacts: {' &middot; '.join(links)}</p><p>trace: {show or 'none kept'}</p>"
        f"<p>replay: <code>{escape(replay)}</code></p></details>"
    )
