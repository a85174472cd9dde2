"""Suspects judged by a run's diagnoses: proven, not proven (with its bound), not exercised."""

from __future__ import annotations

from lab.suspects import Scan, Suspect
from lab.suspects.verdict import NOT_EXERCISED, NOT_PROVEN, ONE_OF, PROVEN, judge, lines_html, lines_text


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


def test_a_diagnosis_two_kinds_of_line_leave_alike_proves_neither_alone() -> None:
    """acked_write_refused is left alike by a swallowed error and by a write left to a task: with
    lines of both kinds in the source, each is "one of", never proven; a diagnosis only one kind
    leaves (acked_while_unreachable) still proves its line."""
    scan = Scan(
        [
            _s("swallowed_error", ("acked_while_unreachable", "acked_write_refused"), 4),
            _s("dangling_task", ("stored_after_answer", "acked_write_refused"), 8),
        ],
        files=1,
        skipped=0,
    )
    shared = {x["check"]: x for x in judge(scan, [("acked_write_refused", 4, 4)], {})["suspects"]}
    assert {x["status"] for x in shared.values()} == {ONE_OF}
    assert "dangling_task lines here leave alike" in shared["swallowed_error"]["evidence"]
    text = lines_text(judge(scan, [("acked_write_refused", 4, 4)], {}), "app/")
    assert "one of (2)" in text and "proven: none" not in text
    both = {
        x["check"]: x
        for x in judge(scan, [("acked_write_refused", 4, 4), ("acked_while_unreachable", 3, 3)], {})["suspects"]
    }
    assert (both["swallowed_error"]["status"], both["swallowed_error"]["by"]) == (PROVEN, "acked_while_unreachable")
    assert both["dangling_task"]["status"] == ONE_OF
    html = lines_html(judge(scan, [("acked_write_refused", 4, 4)], {}))
    assert html.count("data-status='one of'") == 2
