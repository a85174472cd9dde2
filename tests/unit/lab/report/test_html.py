"""report.html's renderer is a pure function of results.json and the trial artifacts: checked
here on hand-written inputs (no services)."""

from __future__ import annotations

import json
from pathlib import Path

from lab.report import html, timeline


def _cell(profile: str, fault: str, k: int, n: int, **extra: object) -> dict[str, object]:
    return {
        "cell_id": f"{profile}|{fault}|after_ack|t5",
        "profile": profile,
        "fault": fault,
        "fault_params": {},
        "refresh": "after_ack",
        "turns": 5,
        "trials": n,
        "unknown": 0,
        "anomalies": {"lost": k} if k else {},
        "rates": {"lost": {"k": k, "n": n}},
        "loss_rate": k / n,
        "ci95": [0.0, 1.0],
        "status": "valid",
        "reason": "",
        "failing_trials": [],
        **extra,
    }


def test_one_heatmap_cell_per_results_cell_with_its_rate() -> None:
    cells = [
        _cell("correct", "none", 0, 5),
        _cell("fire_and_forget", "none", 4, 5),
        _cell("correct", "down", 0, 5, status="unexercised", reason="no send acknowledged"),
    ]
    page = html.render({"run_id": "r", "cells": cells, "verdicts": [], "exit": {"code": 1}}, Path("/nonexistent"))
    assert page.count('class="hm') == 3
    assert 'data-cell="fire_and_forget|none|after_ack|t5" data-rate="0.8"' in page
    assert "unexercised" in page and "No defect was shown" in page


def test_text_from_the_run_is_escaped() -> None:
    hostile = "<script>alert(1)</script>"
    page = html.render(
        {
            "run_id": hostile,
            "cells": [_cell("correct", "none", 0, 5)],
            "verdicts": [],
            "exit": {"code": 1, "reasons": [hostile]},
        },
        Path("/nonexistent"),
    )
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_a_timeline_draws_each_lane_from_the_artifacts(tmp_path: Path) -> None:
    folder = tmp_path / "trials" / "c001-000"
    folder.mkdir(parents=True)
    t = 1000.0
    (folder / "trial.json").write_text(
        json.dumps(
            {
                "cell": {"fault": "latency"},
                "result": {"reasons": ["lost"], "lost": {"assistant": ["m1"]}},
                "history": {"events": [{"t": t, "kind": "fault", "evidence": "latency 300 ms"}]},
            }
        )
    )
    (folder / "network.jsonl").write_text(
        "\n".join(
            json.dumps(e)
            for e in [
                {"t": t + 0.1, "kind": "send", "turn": 1},
                {"t": t + 0.11, "kind": "request", "id": "m1"},
                {"t": t + 0.5, "kind": "response", "id": "m1", "status": 200},
                {"t": t + 0.6, "kind": "refresh", "how": "reload"},
            ]
        )
    )
    (folder / "backend-events.jsonl").write_text(
        json.dumps({"event": "http", "t": t + 0.49, "t0": t + 0.12, "method": "POST", "path": "/chat", "status": 200})
    )
    (folder / "redis-commands.jsonl").write_text(json.dumps({"t": t + 0.2, "lua": False, "args": ["LRANGE", "chat:x"]}))
    items = timeline.lane_items(folder)
    assert [i["kind"] for i in items["browser"]] == ["mark", "lost", "refresh"]
    assert items["http"][0]["label"] == "POST /chat 200"
    assert items["redis"][0]["label"] == "LRANGE chat:x"
    assert items["fault"][0]["t1"] is None  # a whole-trial fault spans the timeline
    svg = timeline.timeline(folder)
    assert all(f'data-lane="{lane}"' in svg for lane, _ in timeline.LANES)
