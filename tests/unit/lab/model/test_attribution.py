"""The attribution rule and the run's exit decision, on hand-made cell statistics."""

from __future__ import annotations

from typing import Any

from lab.model.attribution import NO_LATE_WRITE, NOT_APPLICABLE, NOT_REFUSED, CellStats, verdicts
from lab.report import decide, junit_xml, table
from lab.plan.schedule import Cell, parse_profile


def stats(
    profile: str,
    lost: int,
    n: int = 20,
    fault: str = "none",
    refresh: str = "after_ack",
    status: str | None = None,
    dup: int = 0,
    params: tuple = (),
) -> CellStats:
    cell = Cell(parse_profile(profile), fault, refresh, 5, params)
    return CellStats(
        cell,
        n,
        0,
        max(lost, dup),
        {"lost": lost, "expired": 0, "duplicated": dup, "amnesia": 0},
        {"lost": lost} if lost else {},
        5 * n,
        5 * n,
        status or ("invalid" if lost or dup else "valid"),
    )


def test_fire_and_forget_causes_the_loss() -> None:
    cells = [
        stats("correct", 0),
        stats("incident", 20),
        stats("fire_and_forget", 20),
        stats("incident-fire_and_forget", 0),
    ]
    [v] = verdicts(cells)
    assert (v.defect, v.metric, v.causes) == ("fire_and_forget", "lost", True)
    assert v.evidence == (
        "alone 20/20 [0.84, 1.00], correct 0/20 [0.00, 0.16], incident 20/20 "
        "[0.84, 1.00], incident without it 0/20 [0.00, 0.16]"
    )
    assert v.sentence().startswith("fire_and_forget causes it: the chat loses acknowledged turns")


def test_not_necessary_is_inconclusive() -> None:
    cells = [
        stats("correct", 0),
        stats("incident", 20),
        stats("fire_and_forget", 20),
        stats("incident-fire_and_forget", 18),
    ]
    [v] = verdicts(cells)
    assert v.causes is False and "incident without it is not clearly below incident" in v.evidence


def test_overlapping_intervals_are_inconclusive() -> None:
    cells = [stats("correct", 0, n=3), stats("blind_retry", 0, n=3, dup=3)]
    [v] = verdicts(cells)
    assert (v.metric, v.causes) == ("duplicated", False)
    assert "alone is not clearly above correct" in v.evidence


def test_defect_outside_the_incident_is_judged_against_correct() -> None:
    [v] = verdicts([stats("correct", 0), stats("blind_retry", 0, dup=20)])
    assert (v.defect, v.metric, v.causes) == ("blind_retry", "duplicated", True)
    assert v.evidence == "alone 20/20 [0.84, 1.00], correct 0/20 [0.00, 0.16]"


def test_no_verdict_from_an_unexercised_cell() -> None:
    cells = [stats("correct", 0, status="unexercised"), stats("blind_retry", 0, dup=20)]
    assert verdicts(cells) == []


def test_exit_decision() -> None:
    ok = decide([stats("correct", 0), stats("fire_and_forget", 20)], [], interrupted=False)
    assert ok.exit_code == 0 and ok.reasons == []
    bad = decide([stats("correct", 1)], [], interrupted=False)
    assert bad.exit_code == 1 and "the correct profile lost or duplicated" in bad.reasons[0]
    env = decide([stats("correct", 5, fault="redis_restart", refresh="settled")], [], False)
    assert env.exit_code == 0, "no persistence is the environment, not a defect"
    unex = decide([stats("correct", 0, status="unexercised")], [], False)
    assert unex.exit_code == 1 and unex.reasons[0].startswith("unexercised")
    assert decide([], [], interrupted=True).exit_code == 1


def test_junit_has_one_case_per_cell_and_fails_only_the_correct_profile() -> None:
    xml = junit_xml([stats("correct", 1), stats("fire_and_forget", 20)], decide([], [], False)).decode()
    assert xml.count("<testcase") == 2 and xml.count("<failure") == 1
    assert 'failures="1"' in xml and 'errors="0"' in xml


def test_a_cell_not_applicable_to_the_app_is_skipped_not_an_error() -> None:
    """An experiment the app's own design left nothing to test (write_refused at=answer on an app
    that stores before it answers) is a skipped case with its reason, and no unexercised run."""
    na = stats("correct", 0, n=0, fault="write_refused", refresh="settled", status="unexercised")
    na.reason = f"{NOT_APPLICABLE}: {NO_LATE_WRITE} (2 trials)"
    xml = junit_xml([stats("correct", 0), na], decide([], [], False)).decode()
    assert xml.count("<skipped") == 1 and 'errors="0"' in xml and 'skipped="1"' in xml
    broken = stats("correct", 0, status="unexercised")
    broken.reason = "all trials unknown"
    assert 'errors="1"' in junit_xml([broken], decide([], [], False)).decode()


def test_table_shows_the_dominant_anomaly() -> None:
    text = table([stats("correct", 0), stats("fire_and_forget", 20), stats("blind_retry", 0, dup=7)])
    assert "L 20/20" in text and "D 7/20" in text and "- 0/20" in text


def _not_streamed(tid: str, reason: str, stream: bool = False) -> Any:
    """A model_cut trial whose faulted send's model call asked (or not) for a stream."""
    from lab.model.checker import Result
    from lab.model.history import Send, Trial
    from lab.model.outcome import TrialOutcome

    t = Trial(tid, fault="model_cut", sends=[Send("s1", f"{tid} turn 1", 1, under_fault=True)])
    t.model_calls = [{"stream": stream, "outcome": "whole", "messages": [{"role": "user", "text": f"{tid} turn 1"}]}]
    return TrialOutcome(None, t, Result("unknown", reasons=[reason]))


def test_a_cell_that_does_not_apply_to_the_app_leaves_the_verdict_alone() -> None:
    """Every trial of model_cut unknown, and the stand-in's record shows the app asks for whole
    answers: a fact about the app ("n/a"), not a gap in the run -- no "unknown" exit; so too
    when one of those trials was unknown for another reason first (the record still shows the
    call); a cell whose trials were all unknown with a streamed call, or any other cell, still
    is one."""
    from lab.model.attribution import NOT_APPLICABLE, cell_stats
    from lab.model.context import NOT_STREAMED
    from lab.model.outcome import CellOutcome

    cell = Cell((), "model_cut", "settled", 3, target="app")
    why = f"the faulted send's model call was answered whole, not cut ({NOT_STREAMED})"
    for trials in (
        [_not_streamed(f"t{i}", why) for i in range(2)],
        [_not_streamed("t0", "the settled read never settled"), _not_streamed("t1", why)],
    ):
        cut = cell_stats(CellOutcome(cell, trials))
        assert cut.status == "unexercised" and cut.reason.startswith(NOT_APPLICABLE), cut.reason
        assert decide([stats("correct", 0), cut], [], False, diagnoses=[]).exit_code == 0
        assert "n/a" in table([cut])
    streamed = [_not_streamed("t0", "x"), _not_streamed("t1", "y", stream=True)]
    assert not cell_stats(CellOutcome(cell, streamed)).reason.startswith(NOT_APPLICABLE)
    none_cell = Cell((), "none", "settled", 3, target="app")
    other = cell_stats(CellOutcome(none_cell, [_not_streamed("t9", "driver: x")]))
    assert decide([stats("correct", 0), other], [], False, diagnoses=[]).exit_code == 3


def test_a_defect_that_tells_the_model_less_is_attributed_beside_the_loss() -> None:
    """lab chaos --model: told_less is a metric of its own, with its own verdict sentence."""

    def told(profile: str, k: int) -> CellStats:
        st = stats(profile, 0, fault="ttl_elapse", refresh="settled")
        st.with_metric["told_less"] = k
        return st

    cells = [told("correct", 0), told("incident", 12), told("ttl_set_once", 20), told("incident-ttl_set_once", 0)]
    (v,) = [v for v in verdicts(cells) if v.metric == "told_less"]
    assert v.defect == "ttl_set_once" and v.causes
    assert "tells the model less than the user was acknowledged" in v.sentence()
    # Older statistics without the metric count it as never seen.
    assert stats("correct", 0).rate("told_less") == (0, 20)


def test_a_refusal_moment_the_app_never_reaches_is_a_fact_about_it() -> None:
    """write_refused at=later on an app that stores a turn in one command (or transaction): no
    write came after the send's first, so no trial had one refused -- "n/a" with why, not an
    unknown run; at=write's trials so are still a gap."""
    from lab.model.attribution import NOT_APPLICABLE, NOTHING_TO_REFUSE, cell_stats
    from lab.model.checker import Result
    from lab.model.history import Trial
    from lab.model.outcome import CellOutcome, TrialOutcome

    def refused_none(at: str) -> Any:
        trials = []
        for i in range(2):
            t = Trial(f"t{i}", fault="write_refused", unknown=NOT_REFUSED + " after it first changed the key")
            trials.append(TrialOutcome(None, t, Result("unknown", reasons=[t.unknown or ""])))
        return cell_stats(CellOutcome(Cell((), "write_refused", "settled", 3, (("at", at),), target="app"), trials))

    later = refused_none("later")
    assert (
        later.status == "unexercised" and later.reason == f"{NOT_APPLICABLE}: {NOTHING_TO_REFUSE['later']} (2 trials)"
    )
    assert decide([stats("correct", 0), later], [], False, diagnoses=[]).exit_code == 0
    assert not refused_none("write").reason.startswith(NOT_APPLICABLE)
