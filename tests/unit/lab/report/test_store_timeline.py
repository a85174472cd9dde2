"""The investigate trial's picture (lab.report.store_timeline): with [model], a lane of model
calls -- each from its start to its end, the turns it carried -- with a call told less than the
user had been acknowledged drawn red and named; without [model], no such lane."""

from __future__ import annotations

from typing import Any

from lab.model.history import Send, Trial
from lab.report.model_lane import model_lane
from lab.report.store_timeline import store_timeline


def _send(n: int, t0: float) -> Send:
    s = Send(f"s{n}", f"probe turn {n} zz", n, t_invoke=t0)
    s.complete("ok", 200, "", t0 + 0.5)
    return s


def _call(n: int, t0: float, carried: list[int]) -> dict[str, Any]:
    msgs = [{"role": "user", "text": f"probe turn {k} zz"} for k in carried] + [
        {"role": "user", "text": f"probe turn {n} zz"}
    ]
    return {"t_start": t0, "t_end": t0 + 0.2, "outcome": "whole", "messages": msgs}


def test_a_call_told_less_is_drawn_red_and_named() -> None:
    t = Trial("e1-none-settled-00", sends=[_send(1, 100.0), _send(2, 101.0), _send(3, 102.0)])
    t.model_calls = [_call(1, 100.1, []), _call(2, 101.1, [1]), _call(3, 102.1, [2])]  # turn 1 left out
    items = model_lane(t)
    assert [i["kind"] for i in items] == ["ok", "ok", "bad"]
    assert "told less: turns [1]" in items[2]["label"] and "carried turns [2]" in items[2]["label"]
    picture = store_timeline(t)
    assert 'data-lane="model"' in picture and "told less" in picture


def test_without_model_calls_there_is_no_model_lane() -> None:
    t = Trial("e1-none-settled-00", sends=[_send(1, 100.0)])
    assert store_timeline(t) == ""  # neither a store record nor calls: no picture
    t.store = [{"t": 100.2, "cmd": "RPUSH", "conn": "c1", "user": [1], "reply": [], "write": True}]
    assert 'data-lane="store"' in store_timeline(t) and 'data-lane="model"' not in store_timeline(t)
