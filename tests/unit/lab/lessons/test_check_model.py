"""A lesson on the stand-in (`lab lesson N --model`): what the model was told, per profile,
beside the table; the replay line keeps --model; without the stand-in, nothing is added."""

from __future__ import annotations

from lab import lessons
from lab.lessons.check import _model_line, replay_command
from lab.model.checker import Result
from lab.model.history import Trial
from lab.model.outcome import CellOutcome, TrialOutcome
from lab.plan.schedule import plan_trial


def _outcome(profile_defects: tuple[str, ...], told_less: list[bool], model: bool = True) -> CellOutcome:
    lesson = lessons.get("2")
    cell = next(c for c in lesson.demo_cells() if c.defects == profile_defects)
    out = CellOutcome(cell)
    for i, less in enumerate(told_less):
        plan = plan_trial(cell, i, f"d0-{i:03d}")
        r = Result("valid", told_less=["m2"] if less else [])
        out.trials.append(TrialOutcome(plan, _trial(plan.trial_id), r, model=model))
    return out


def _trial(tid: str) -> Trial:
    t = Trial(tid)
    t.model_calls = []
    return t


def test_the_models_side_is_told_per_profile_beside_the_table() -> None:
    bad, good = _outcome(("ttl_set_once",), [True, True, False]), _outcome((), [False, False, False])
    lines = _model_line([bad, good])
    assert lines[0] == "The model's side:"
    assert "ttl_set_once   told less than acknowledged in 2/3" in lines[1]
    assert "correct        told less than acknowledged in 0/3" in lines[2]


def test_without_the_stand_in_nothing_is_added_and_the_replay_has_no_model() -> None:
    plain = _outcome((), [False], model=False)
    assert _model_line([plain]) == []
    assert "--model" not in replay_command(lessons.get("2"), plain.trials[0], None)
    assert replay_command(lessons.get("2"), _outcome((), [False]).trials[0], None).endswith("--model --runs 5")
