"""The exercise's suspect lines (lab suspects), before the fix and after a check."""

from __future__ import annotations

from pathlib import Path

from lab.common.config import ROOT
from lab.lessons.base import Lesson
from lab.model.stats import wilson
from lab.suspects import Suspect, scan


def suspects_in(exercise: Path) -> list[Suspect]:
    """The exercise scanned with the service it plugs into (a Flask app: per-request loops)."""
    target = exercise.resolve()
    found = scan([target, ROOT / "services" / "chat"], root=ROOT).suspects
    return [s for s in found if (ROOT / s.path).resolve() == target]  # s.path: under ROOT, or absolute


def _show(s: Suspect) -> str:
    return f"    {s.where}: [{s.check}] {s.mechanism}\n        {s.code[:100]}"


def before(lesson: Lesson) -> str:
    """Printed with the story: where the static checks point in the exercise."""
    if lesson.kind == "config":
        return "The suspect line: none -- a server's configuration is outside the static checks."
    found = suspects_in(lesson.exercise)
    if not found:
        return (
            f"The suspect line: none in {lesson.exercise.relative_to(ROOT)} "
            "(already fixed? lab lesson N --reset restores the exercise)"
        )
    return "The suspect line of the exercise (lab suspects; a suspect, until the experiment proves it):\n" + "\n".join(
        _show(s) for s in found
    )


def after_check(lesson: Lesson, exercise: Path, passed: bool, trials: int) -> list[str]:
    """After --check: the lines the failing trials prove, or that the passing ones clear."""
    if lesson.kind == "config":
        return []
    found = suspects_in(exercise)
    if not passed:
        return (
            ["  proven: the failing trials show the mechanism of these lines:"] + [_show(s) for s in found]
            if found
            else ["  no suspect line in the exercise: the static checks miss this version"]
        )
    hi = wilson(0, trials)[1]
    if not found:
        return [
            f"  cleared: no suspect line left in the exercise, and 0/{trials} trials lost anything "
            f"(rate < {hi:.0%} at 95%)"
        ]
    return [f"  not proven: still a suspect line, but {trials} trials drew nothing (rate < {hi:.0%} at 95%):"] + [
        _show(s) for s in found
    ]
