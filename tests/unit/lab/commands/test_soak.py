"""lab.commands.soak: the matrix (the correct profile, every fault the mode can do x every refresh point)
and the pass/fail rule read from a run's results.json."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lab.commands import soak
from lab.faults import REGISTRY
from lab.plan.schedule import REFRESH_POINTS


def test_the_matrix_is_the_correct_profile_under_every_native_fault_and_refresh_point() -> None:
    cells = soak.soak_matrix("native")
    native = {n for n, cls in REGISTRY.items() if "native" in cls.modes}
    assert {c.fault for c in cells} == native
    assert {(c.fault, c.refresh) for c in cells} == {(f, r) for f in native for r in REFRESH_POINTS}
    assert all(c.defects == () for c in cells)
    assert soak.soak_faults("native")[1] == ["redis_net_disconnect"]  # compose only: named
    restart = {c.params.get("durable") for c in cells if c.fault == "redis_restart"}
    assert restart == {True}  # AOF: only a durable Redis can prove nothing acknowledged is lost
    assert all(c.retry_cut for c in cells if c.fault == "ack_lost")
    assert all(c.turns == 10 for c in cells if c.refresh == "in_flight" and c.make_fault().window != "trial")


def _cell(fault: str, refresh: str, trials: int, lost: int = 0, dup: int = 0, status: str = "valid") -> dict[str, Any]:
    return {
        "fault": fault,
        "fault_params": {},
        "refresh": refresh,
        "trials": trials,
        "unknown": 1,
        "rates": {"lost": {"k": lost}, "duplicated": {"k": dup}},
        "status": status,
        "reason": "fault not confirmed" if status == "unexercised" else "",
    }


def test_passes_only_with_nothing_lost_or_duplicated_and_every_cell_exercised() -> None:
    ok = {"cells": [_cell("none", "settled", 300), _cell("down", "settled", 300)], "interrupted": False}
    assert soak.verdict(ok, 2) == (0, [])
    code, text = soak.render(ok, 2, Path("/r"))
    assert code == 0 and "lost 0/300" in text and "95% upper bound < 1.3%" in text

    assert soak.verdict({"cells": [_cell("none", "settled", 300, dup=1)]}, 1)[0] == 1
    assert soak.verdict({"cells": [_cell("none", "settled", 300, status="unexercised")]}, 1)[0] == 1
    assert soak.verdict({"cells": [_cell("none", "settled", 300)]}, 2)[0] == 1  # a cell missing
    assert soak.verdict({"cells": [_cell("none", "settled", 3)], "interrupted": True}, 1)[0] == 1


def test_per_fault_rows_add_up_the_refresh_points() -> None:
    cells, faults = soak.rows_from({"cells": [_cell("down", r, 50) for r in REFRESH_POINTS]})
    assert len(cells) == 8 and [(f.name, f.trials, f.unknown) for f in faults] == [("down", 400, 8)]
    assert round(faults[0].upper(), 4) == 0.0095  # 0/400: below 1 % at 95 %
