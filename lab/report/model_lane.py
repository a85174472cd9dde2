"""The model's lane of a trial's picture: each call that served a send, from its start to its
end, with the turns it carried; red where it was told less than the user had been acknowledged,
or answered with an error or cut. Drawn by `lab investigate`'s diagnoses (store_timeline) and
by `lab chaos --model`'s failing trials (timeline)."""

from __future__ import annotations

from typing import Any

from lab.model import context
from lab.model.history import Trial


def model_lane(t: Trial) -> list[dict[str, Any]]:
    """Each call that served a send: its span, the turn it served, the turns it carried of those
    acknowledged before that send left, and how it was answered."""
    told = {x.call: x for x in context.judge(t)}
    turn = {s.id: s.turn for s in t.sends}
    items = []
    for i, c in enumerate(t.model_calls or []):
        x = told.get(i)
        if x is None or not c.get("t_start"):
            continue
        given = [n for n in x.expected if n not in x.missing]
        what = f"call for turn {turn[x.send]} ({c.get('outcome', '?')}): carried turns {given or 'none'}"
        if x.missing:
            what += f" -- told less: turns {x.missing} acknowledged before it left, not given"
        bad = x.told_less or c.get("outcome") in ("error", "cut", "held")
        items.append({"t0": float(c["t_start"]), "t1": c.get("t_end"), "label": what, "kind": "bad" if bad else "ok"})
    return items
