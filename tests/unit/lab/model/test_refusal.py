"""A refusal of one write the trial cannot place on its send (lab.model.refusal): an earlier
turn acknowledged, not yet written when the fault turn's send left, and lost -- the one write
refused may have been it. The checker then calls the trial unknown, whatever it shows; where
every earlier turn was written first, or the one pending was stored after all, the trial stands."""

from __future__ import annotations

from lab.model.checker import check
from lab.model.history import Trial
from tests.unit.lab.diagnoses.model_trials import T0, rows, sends, write


def _trial(stored: list[int], store: list[dict], at: str = "write", fault: str = "write_refused") -> Trial:  # type: ignore[type-arg]
    ss = sends("r", faulted=2)
    return Trial(
        "r",
        sends=ss,
        final_rows=rows(ss, stored),
        turns=3,
        store=store,
        fault=fault,
        fault_params={"at": at},
        fault_turn=2,
        history_reads=[200],
    )


def _late(turn: int, after_s: float) -> dict:  # type: ignore[type-arg]
    """A write of ``turn`` reaching Redis ``after_s`` after its send left (a promise nobody awaits)."""
    return write(turn) | {"t": T0 + turn + after_s}


def test_an_earlier_turn_still_pending_and_lost_leaves_the_refusal_unplaced() -> None:
    # Turn 1's write never reached Redis (refused); turn 2's landed after its answer; turn 3's in time.
    res = check(_trial([2, 3], [_late(2, 0.6), write(3)]))
    assert res.validity == "unknown", res
    assert res.reasons == [
        "write_refused: turn 1's write, acknowledged and not yet in Redis when turn 2's send left, never "
        "stored -- the one write refused may have been it: the trial cannot say which send it tested"
    ]


def test_the_faulted_turns_own_loss_with_every_earlier_turn_written_first_stands() -> None:
    res = check(_trial([1, 3], [write(1), write(3)]))
    assert res.validity == "invalid" and "lost" in res.reasons, res


def test_a_late_write_that_landed_after_all_leaves_the_trial_as_it_is() -> None:
    # Turn 1's write came after turn 2's send left, and is stored: not the one refused.
    res = check(_trial([1, 2, 3], [_late(1, 1.2), write(2), write(3)]))
    assert res.validity == "valid", res


def test_other_faults_every_write_of_a_send_and_no_record_are_not_judged_so() -> None:
    pending = [_late(2, 0.6), write(3)]
    assert check(_trial([2, 3], pending, at="send")).validity == "invalid"  # every write of the send: no choice
    assert check(_trial([2, 3], pending, fault="down")).validity == "invalid"
    blind = _trial([2, 3], pending)
    blind.store = None
    assert check(blind).validity == "invalid"


def test_with_no_record_of_a_black_box_any_earlier_turn_lost_leaves_the_refusal_unplaced() -> None:
    """A black box whose writes the lab cannot follow (MONITOR refused, a keyless spec): nothing
    says turn 1 was written before turn 2's send left -- its loss may be the refusal's."""
    blind = _trial([2, 3], [])
    blind.store, blind.store_note = None, "Redis refused MONITOR (NOPERM)"
    res = check(blind)
    assert res.validity == "unknown" and len(res.reasons) == 1, res
    assert res.reasons[0].startswith("write_refused: turn 1, acknowledged, never stored, and no store record"), res
    assert "(Redis refused MONITOR (NOPERM))" in res.reasons[0], res
    # Every earlier turn stored: the fault turn's own loss stands, record or none.
    own = _trial([1, 3], [])
    own.store, own.store_note = None, "no key known"
    assert check(own).validity == "invalid"
