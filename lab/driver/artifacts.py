"""A failing trial's folder: its backend events, Redis commands, network log, Redis dump,
toxics, the trial and its replay command (and, for the first ones of a cell, a screenshot;
the trace is written there by the browser)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from lab.driver.driver import ChatDriver
from lab.driver.observe import ExpiredKeys, RedisCommands
from lab.model.outcome import TrialOutcome
from lab.stack.events import BackendEvents
from services.chat import session


async def write(
    folder: Path,
    o: TrialOutcome,
    d: ChatDriver,
    dump: dict[str, Any],
    shot: bytes | None,
    events: BackendEvents,
    commands: RedisCommands,
    expired: ExpiredKeys,
) -> Path:
    """The data is gathered here, on the loop that owns the event readers; the files are
    written in a thread, so the other trials keep running."""
    assert o.plan is not None
    sid = d.session_id or ""
    events.poll()
    backend = [
        e for s in {sid, *(x.get("sid") for x in events.by_sid.get(sid, []))} for e in events.by_sid.get(str(s), [])
    ]
    sids = {sid, *(e.get("sid") for e in backend)} - {None, ""}
    cmds = sorted((c for s in sids for c in commands.by_sid.get(str(s), [])), key=lambda c: c["t"])
    dump["expired_at"] = {k: t for k, t in expired.at.items() if any(k.startswith(session.key(str(s))) for s in sids)}
    texts = {
        "backend-events.jsonl": "".join(json.dumps(e) + "\n" for e in backend),
        "redis-commands.jsonl": "".join(json.dumps(c) + "\n" for c in cmds),
        "network.jsonl": "".join(json.dumps(e) + "\n" for e in d.log),
        "redis.json": json.dumps(dump, indent=2) + "\n",
        "toxics.json": json.dumps([e for e in o.trial.events if e.get("kind") == "fault"], indent=2) + "\n",
        "trial.json": json.dumps(
            {
                "trial_id": o.plan.trial_id,
                "seed": o.plan.seed,
                "cell": o.plan.cell.as_json(),
                "messages": list(o.plan.messages),
                "fault_turn": o.plan.fault_turn,
                "result": {
                    "validity": o.result.validity,
                    "reasons": o.result.reasons,
                    "anomalies": o.result.anomalies(),
                    "lost": o.result.lost,
                },
                "replay": o.replay_command(),
                "history": o.trial.as_json(),
            },
            indent=2,
        )
        + "\n",
    }

    def write_files() -> None:
        folder.mkdir(parents=True, exist_ok=True)
        if shot:
            (folder / "screenshot.png").write_bytes(shot)
        for name, text in texts.items():
            (folder / name).write_text(text)

    await asyncio.to_thread(write_files)
    return folder
