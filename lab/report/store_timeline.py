"""`lab investigate`'s evidence, drawn: a trial's sends as the browser saw them (from the send to
its answer), its refreshes, the store's record (lab.investigate.evidence.store) -- every command of the
app on the conversation's key -- and, where the app calls a model ([model]), each model call
from its start to its end with what it carried, on one time axis. A write that lands after its
turn's answer is the one to look at: it is drawn red, with how late it came; so is a call told
less than the user had been acknowledged, or answered with an error or cut."""

from __future__ import annotations

from typing import Any

from lab.model.history import Trial
from lab.model.store import CLOCK_GRAIN_S, answered
from lab.report.model_lane import model_lane
from lab.report.timeline import svg

LANES = (("browser", "browser"), ("store", "Redis (app)"), ("model", "model calls"))


def store_timeline(t: Trial) -> str:
    """The trial's picture, or "" where it has neither a store record nor model calls."""
    calls = model_lane(t)
    if t.store is None and not calls:
        return ""
    acked = answered(t)
    browser: list[dict[str, Any]] = [
        {
            "t0": s.t_invoke,
            "t1": s.t_complete,
            "label": f"turn {s.turn}: {s.status or 'no answer'}" + (" (cut)" if s.cut else ""),
            "kind": "ok" if s.outcome == "ok" else "bad",
        }
        for s in t.sends
        if s.t_invoke
    ]
    browser += [{"t0": e["t"], "label": "refresh", "kind": "refresh"} for e in t.events if e.get("kind") == "refresh"]
    store = []
    for c in t.store or []:
        turns = sorted(set(c["user"]) | set(c["reply"]))
        # A write later than the answer of a turn whose text it carries (a rewrite of earlier
        # turns is later than theirs too: the tooltip names the turn, the diagnosis places it).
        late_here = [n for n in turns if n in acked and c["write"] and c["t"] > acked[n] + CLOCK_GRAIN_S]
        what = f"{c['cmd']} ({c['conn']})" + (f" turn {', '.join(map(str, turns))}" if turns else "")
        if late_here:
            what += f" -- {(c['t'] - acked[late_here[-1]]) * 1000:.0f} ms after turn {late_here[-1]}'s answer"
        store.append({"t0": c["t"], "label": what, "kind": "bad" if late_here else "ok" if c["write"] else "mark"})
    lanes = LANES if t.model_calls is not None else LANES[:2]
    return svg({"browser": browser, "store": store, "model": calls}, lanes)
