"""The lesson catalogue, exercise validation, --reset and the pass/fail judgement (no services)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab import lessons
from lab.common.errors import UsageError
from lab.model.history import Send, Trial
from lab.model.checker import Result
from lab.lessons.check import judge, lesson_config
from lab.lessons.validate import validate
from lab.model.outcome import CellOutcome, TrialOutcome
from lab.plan.schedule import plan_trial
from services.chat.defects import CORRECT, REGISTRY as DEFECTS

ALL = sorted(lessons.REGISTRY)
TOPICS = {
    1: "fire_and_forget",
    2: "ttl_set_once",
    3: "shared_loop_client",
    4: "blind_retry",
    5: "swallowed_errors",
    6: "save_at_stream_end",
    7: None,
    8: "read_modify_write",
}


def test_eight_lessons_numbered_from_one_each_on_its_pitfall() -> None:
    assert ALL == list(range(1, 9))
    assert {n: lessons.REGISTRY[n].defect for n in ALL} == TOPICS
    assert len(lessons.catalogue()) == 8 and lessons.catalogue()[0].startswith(" 1. ")


@pytest.mark.parametrize("key", ["1", "01", "create_task", "01_create_task"])
def test_a_lesson_is_found_by_number_or_slug(key: str) -> None:
    assert lessons.get(key).number == 1


def test_an_unknown_lesson_names_the_valid_ones() -> None:
    with pytest.raises(UsageError) as exc:
        lessons.get("99")
    assert exc.value.exit_code == 2
    assert "unknown lesson '99'" in str(exc.value) and " 8. " in str(exc.value)


@pytest.mark.parametrize("number", ALL)
def test_exercise_and_solution_load_and_differ(number: int) -> None:
    le = lessons.REGISTRY[number]
    assert le.exercise.is_file() and le.pristine.is_file() and le.solution.is_file()
    assert le.pristine.read_text() != le.solution.read_text()
    got = validate(le.kind, le.pristine, number), validate(le.kind, le.solution, number)
    if le.kind == "config":
        assert [g["durable"] for g in got] == [False, True]


@pytest.mark.parametrize("number", [n for n in ALL if lessons.REGISTRY[n].kind == "behaviour"])
def test_the_pristine_exercise_is_its_lessons_defect(number: int) -> None:
    """Unfixed, the exercise changes the same Behaviour steps as the defect module, to the
    same effect where the steps are plain values (so the check measures that defect)."""
    from services.chat import exercise

    le = lessons.REGISTRY[number]
    mine = exercise.load(le.pristine).apply(CORRECT)
    theirs = DEFECTS[le.defect].apply(CORRECT)  # type: ignore[index]
    fields = CORRECT.__dataclass_fields__
    assert {f for f in fields if getattr(mine, f) != getattr(CORRECT, f)} == {
        f for f in fields if getattr(theirs, f) != getattr(CORRECT, f)
    }


@pytest.mark.parametrize("number", ALL)
def test_the_lesson_text_renders_with_its_code(number: int) -> None:
    le = lessons.REGISTRY[number]
    text = lessons.intro(le) + lessons.outro(le)
    for e in le.excerpts:  # a marker gone from the code raises: the lesson drifted
        assert e.marker in e.render()
    assert f"lab lesson {number} --check" in text and le.exercise.name in text


def test_reset_restores_the_pristine_exercise(tmp_path: Path) -> None:
    le = lessons.get(1)
    target = tmp_path / "exercise.py"
    target.write_text("broken(\n")
    assert lessons.reset(le, target) == target
    assert target.read_text() == le.pristine.read_text()


@pytest.mark.parametrize(
    "text, line, fragment",
    [
        ("x = 1\ndef apply(b)\n    return b\n", 2, "SyntaxError"),
        ("import no_such_module_here\n", 1, "ModuleNotFoundError"),
        ("def apply(b):\n    return 42\n", 1, "must return a Behaviour"),
        ("from dataclasses import replace\n\ndef apply(b):\n    return replace(b, nope=1)\n", 4, "TypeError"),
    ],
)
def test_a_broken_exercise_is_reported_at_its_line(tmp_path: Path, text: str, line: int, fragment: str) -> None:
    bad = tmp_path / "exercise.py"
    bad.write_text(text)
    with pytest.raises(UsageError) as exc:
        validate("behaviour", bad, 1)
    assert str(exc.value).startswith(f"{bad}:{line}: ") and fragment in str(exc.value)
    assert "lab lesson 1 --reset" in str(exc.value)


def test_a_config_exercise_needs_a_boolean(tmp_path: Path) -> None:
    bad = tmp_path / "exercise.py"
    bad.write_text('"""doc"""\nDURABLE = "yes"\n')
    with pytest.raises(UsageError, match=r":2: DURABLE must be True or False"):
        validate("config", bad, 7)


def test_lesson_stacks_keep_off_the_default_ports() -> None:
    cfg = lesson_config({})
    assert cfg.ports["redis"] == 16579 and cfg.run_dir.name == "lesson"
    assert lesson_config({"LAB_REDIS_PORT": "36379"}).ports["redis"] == 36379


# ------------------------------------------------------------------ judge(): pure
def _outcome(
    n: int, lost: int = 0, unknown: int = 0, acked: bool = True, fault_error: str | None = None
) -> CellOutcome:
    le = lessons.get(1)
    cell = le.check_cell()
    out = CellOutcome(cell, fault_error=fault_error)
    for i in range(n):
        plan = plan_trial(cell, i, f"t{i}")
        trial = Trial(plan.trial_id, sends=[Send(f"m{i}", "hi", 1, "ok" if acked else "info", 200 if acked else 503)])
        res = Result("valid", sends=1, acked_sends=int(acked))
        if i < lost:
            res.validity, res.lost["assistant"] = "invalid", [f"m{i}"]
        elif i < lost + unknown:
            res = Result("unknown", reasons=["the refresh point was not reached"])
        out.trials.append(TrialOutcome(plan, trial, res))
    return out


def test_no_anomaly_in_enough_exercised_trials_passes() -> None:
    j = judge(lessons.get(1), _outcome(20))
    assert j.passed and j.lines[0].startswith("PASS") and "0/20 [0.00, 0.16]" in j.lines[1]


def test_one_lost_turn_fails_with_the_rate_and_an_example() -> None:
    j = judge(lessons.get(1), _outcome(20, lost=1))
    assert not j.passed and "1/20 trials show lost" in j.lines[0] and j.example is not None


@pytest.mark.parametrize(
    "outcome, fragment",
    [
        (_outcome(20, unknown=3), "only 17 trials gave a verdict, 20 needed"),
        (_outcome(20, acked=False), "refusing writes is not a fix"),
        (_outcome(20, fault_error="toxic not listed"), "fault not confirmed"),
    ],
    ids=["unknown-trials", "nothing-acknowledged", "fault-unconfirmed"],
)
def test_an_unexercised_cell_is_not_a_pass(outcome: CellOutcome, fragment: str) -> None:
    j = judge(lessons.get(1), outcome)
    assert not j.passed and j.lines[0].startswith("FAIL: not exercised") and fragment in j.lines[0]


def test_a_runtime_error_in_the_exercise_is_found_in_the_backend_log(tmp_path: Path) -> None:
    from lab.lessons.check import exercise_error

    ex = tmp_path / "exercise.py"
    log = tmp_path / "backend.log"
    log.write_text(
        "old run\n"
        + "\n".join(
            [
                "ERROR chat unhandled error",
                "Traceback (most recent call last):",
                '  File "/srv/views.py", line 97, in chat',
                "    await b.run_write(...)",
                f'  File "{ex}", line 19, in run_write',
                "    awiat coro",
                "NameError: name 'awiat' is not defined",
                "INFO chat {}",
            ]
        )
        + "\n"
    )
    assert exercise_error(log, len("old run\n"), ex) == f"{ex}:19: NameError: name 'awiat' is not defined"
    assert exercise_error(log, log.stat().st_size, ex) is None


# ------------------------------------------------------------------ the check's rounds
@pytest.mark.parametrize(
    "lost_from, asked", [(0, [4]), (None, [4, 16]), (6, [4, 16])], ids=["at-once", "never", "late"]
)
def test_a_check_fails_after_its_first_batch_where_the_defect_shows_there(
    monkeypatch: pytest.MonkeyPatch, lost_from: int | None, asked: list[int]
) -> None:
    """The first round is one batch (4 trials side by side): a defect shown there ends the check;
    otherwise the rest of the 20 run (a pass never rests on fewer)."""
    from lab.lessons import check

    le = lessons.get(1)
    runs: list[int] = []

    def fake_run(stack: object, cells: list, out_dir: Path, model: object = None) -> list[CellOutcome]:
        ((cell, plans),) = cells
        done = sum(runs)
        runs.append(len(plans))
        lost = 0 if lost_from is None else max(0, done + len(plans) - lost_from)
        got = _outcome(len(plans), lost=min(lost, len(plans)))
        got.cell = cell
        return [got]

    monkeypatch.setattr(check, "_run", fake_run)
    outcome = check._sample(le, None, le.check_cell(), 20, 7, Path("."), None)  # type: ignore[arg-type]
    assert runs == asked
    assert len(outcome.trials) == sum(asked)
