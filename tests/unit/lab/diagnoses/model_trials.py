"""What the model diagnoses' tests build their trials from: a trial's sends (each answered, the
faulted one as the fault answers it), a store write naming the turns it carries, the stand-in's
record of a call, the stored rows, and the codes drawn."""

from __future__ import annotations

from typing import Any

from lab import diagnoses as dg
from lab.model.history import Row, Send, Trial

T0 = 1_800_000_000.0


def sends(tid: str, n: int = 3, faulted: int | None = 2, answer: tuple[str, int] = ("ok", 200)) -> list[Send]:
    """``n`` sends of trial ``tid`` a second apart, each acknowledged half a second later; send
    ``faulted`` under the fault and answered as ``answer`` (outcome, status)."""
    out = []
    for turn in range(1, n + 1):
        s = Send(f"t{turn}", f"chaoslab probe {tid} turn {turn} ab12", turn, reply=f"reply {turn}", t_invoke=T0 + turn)
        s.complete(*(answer if turn == faulted else ("ok", 200)), "", T0 + turn + 0.5)
        s.under_fault = turn == faulted
        out.append(s)
    return out


def write(turn: int, cmd: str = "LPUSH", **extra: Any) -> dict[str, Any]:
    """The store's record of one write carrying turn ``turn``'s message and reply, 100 ms before its answer."""
    return {
        "t": T0 + turn + 0.4,
        "conn": "c1",
        "cmd": cmd,
        "args": [],
        "write": True,
        "user": [turn],
        "reply": [turn],
        **extra,
    }


def call(text: str, outcome: str = "whole", **extra: Any) -> dict[str, Any]:
    """The stand-in's record of a call whose last user message is ``text``."""
    return {"messages": [{"role": "user", "text": text}], "outcome": outcome, **extra}


def rows(all_sends: list[Send], turns: list[int] | None = None) -> list[Row]:
    """The stored history holding ``turns`` (every send's by default): message, then reply."""
    wanted = turns if turns is not None else [s.turn for s in all_sends]
    return [r for t in wanted for r in (Row("", "user", all_sends[t - 1].text), Row("", "assistant", f"reply {t}"))]


def codes(trials: list[Trial]) -> list[str]:
    return [d.code for d in dg.diagnose(trials)]
