"""Suspects judged by a run's diagnoses: proven, not proven (with its bound), not exercised."""

from __future__ import annotations

from lab.suspects import Scan, Suspect
from lab.suspects.verdict import NOT_EXERCISED, NOT_PROVEN, PROVEN, judge, lines_html, lines_text


def _s(check: str, diagnoses: tuple[str, ...], line: int = 1) -> Suspect:
    return Suspect(check, "app.py", line, f"{check} mechanism", diagnoses, "why", "code()")


SCAN = Scan(
    [
        _s("ttl_conditional", ("ttl_not_renewed", "no_ttl"), 3),
        _s("dangling_task", ("replies_not_stored",), 7),
        _s("stream_end_save", ("saved_at_stream_end",), 9),
    ],
    files=2,
    skipped=1,
)


def test_proven_not_proven_and_not_exercised() -> None:
    out = judge(
        SCAN,
        [("no_ttl", 5, 5), ("acked_lost", 2, 5)],
        {"ttl_not_renewed": 10, "no_ttl": 10, "replies_not_stored": 15, "saved_at_stream_end": 0},
    )
    status = {x["check"]: x for x in out["suspects"]}
    assert status["ttl_conditional"]["status"] == PROVEN and status["ttl_conditional"]["by"] == "no_ttl"
    assert (status["ttl_conditional"]["k"], status["ttl_conditional"]["n"]) == (5, 5)
    nr = status["dangling_task"]
    assert (nr["status"], nr["by"], nr["n"], nr["upper95"]) == (NOT_PROVEN, "replies_not_stored", 15, 0.2039)
    assert status["stream_end_save"]["status"] == NOT_EXERCISED and status["stream_end_save"]["by"] is None
    # A diagnosis no suspect points at says so.
    assert out["without_suspect"] == ["acked_lost"]


def test_the_views_never_show_a_suspect_as_a_finding() -> None:
    out = judge(SCAN, [], {"replies_not_stored": 15})
    text = lines_text(out, "app/")
    assert "proven: none" in text and "not proven (1)" in text and "not exercised (2)" in text
    html = lines_html(out)
    assert html.count("data-status='proven'") == 0 and html.count("data-status='not proven'") == 1
