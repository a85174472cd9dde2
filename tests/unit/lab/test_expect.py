"""lab.expect: which unknown trials are replaced (an experiment's precondition that missed), and
what a cell that stays unknown after replacing says."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.model.checker import NOTHING_ACKED, Result
from lab.expect import assert_cell, honestly_unknown
from lab.model.history import Send, Trial
from lab.model.outcome import CellOutcome, TrialOutcome
from lab.plan.schedule import Cell


def _outcome(tid: str, validity: str, *reasons: str) -> TrialOutcome:
    return TrialOutcome(None, Trial(tid), Result(validity, reasons=list(reasons)))  # type: ignore[arg-type]


def test_only_a_missed_precondition_is_replaced() -> None:
    assert honestly_unknown(_outcome("a", "unknown", "concurrent sends not exercised: at the backend ..."))
    assert honestly_unknown(_outcome("b", "unknown", "the experiment's preconditions did not hold", "pacing"))
    # The lab or the app broke, or nothing was acknowledged: not replaced, the test must see it.
    assert not honestly_unknown(_outcome("c", "unknown", "driver: TimeoutError: ..."))
    assert not honestly_unknown(_outcome("d", "unknown", "no send was acknowledged: the trial exercised nothing"))
    # Nothing acknowledged because the app answered 5xx: the app's doing, not replaced; because
    # nothing was answered at all (timeouts on a loaded machine): replaced.
    answered, silent = _outcome("f", "unknown", NOTHING_ACKED), _outcome("g", "unknown", NOTHING_ACKED)
    for o, status in ((answered, 503), (silent, None)):
        s = Send("t1", "x", 1)
        s.complete("info", status, "HTTP 503" if status else "timeout", 1.0)
        o.trial.sends.append(s)
    assert not honestly_unknown(answered) and honestly_unknown(silent)
    # A retry the driver could not make: of a send that timed out, replaced; of a 5xx, not.
    retried = {status: _outcome(f"r{status}", "unknown", "driver (retry): TimeoutError: ...") for status in (None, 502)}
    for status, o in retried.items():
        s = Send("t1", "x", 1)
        s.complete("info", status, "HTTP 502" if status else "timeout", 1.0)
        o.trial.sends.append(s)
    assert honestly_unknown(retried[None]) and not honestly_unknown(retried[502])
    assert not honestly_unknown(_outcome("e", "valid"))
    # The machine's network changed under the browser (a Docker bridge beside the run): replaced.
    assert honestly_unknown(_outcome("n", "unknown", "the browser dropped the history read after the refresh (...)"))
    assert honestly_unknown(_outcome("m", "unknown", "the browser dropped turn 2's request (...)"))


def test_a_cell_still_unknown_after_replacing_says_so(tmp_path: Path) -> None:
    cell = Cell((), "none", "two_tabs", 5)
    o = CellOutcome(cell, [_outcome("g-r3-000", "unknown", "concurrent sends not exercised: 5.6 ms apart")])
    o.replaced = [_outcome(f"g-{i:03d}", "unknown", "concurrent sends not exercised: 5.6 ms apart") for i in range(3)]
    with pytest.raises(AssertionError, match="too few trials judged: 1/1 unknown even after replacing 3"):
        assert_cell(o, "t::x", output_dir=tmp_path)


def test_all_means_every_trial_judged_and_an_excused_one_is_not_judged(tmp_path: Path) -> None:
    cell = Cell((), "none", "after_ack", 5)

    def lost(tid: str) -> TrialOutcome:
        o = _outcome(tid, "invalid")
        o.result.lost["assistant"] = ["t1"]
        return o

    nothing = _outcome("n", "unknown", "no send was acknowledged: the trial exercised nothing")
    excuse = ("no send was acknowledged", 1)
    # Three trials lose, the fourth acknowledged nothing: excused, so "all" means all three.
    assert_cell(CellOutcome(cell, [lost("a"), lost("b"), lost("c"), nothing]), "t::x", lost="all", unknown_ok=excuse)
    # A judged trial that does not lose fails "all".
    o = CellOutcome(cell, [lost("a"), lost("b"), _outcome("c", "valid"), nothing])
    with pytest.raises(AssertionError, match="lost: 2/4 trials, expected 3"):
        assert_cell(o, "t::x", output_dir=tmp_path, lost="all", unknown_ok=excuse)
    # More unknown trials than excused: none is excused, the cell is too little judged.
    o = CellOutcome(cell, [lost("a"), nothing, nothing])
    with pytest.raises(AssertionError, match="too few trials judged: 2/3 unknown"):
        assert_cell(o, "t::x", output_dir=tmp_path, lost="all", unknown_ok=excuse)
