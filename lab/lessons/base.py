"""The lesson model and its registry (the lesson modules register here; see lab/lessons)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lab.common.config import ROOT
from lab.common.errors import UsageError
from lab.plan.schedule import Cell

HERE = Path(__file__).resolve().parent
# Anomalies no lesson's fixed code may show (lab/model/checker.py); a lesson may forbid more.
ALWAYS_FORBIDDEN = ("lost", "duplicated", "expired", "amnesia")
MIN_TRIALS = 20


@dataclass(frozen=True)
class Excerpt:
    """The few lines of a real file that matter, found by a marker (never by line number)."""

    path: str  # relative to the repository root
    marker: str  # text of the first line shown
    lines: int = 6
    before: int = 0  # lines shown above the marker

    def read(self) -> tuple[int, list[str]]:
        """(first line number, lines); UsageError when the marker is gone (the lesson drifted)."""
        text = (ROOT / self.path).read_text().splitlines()
        for i, line in enumerate(text):
            if self.marker in line:
                start = max(0, i - self.before)
                return start + 1, text[start : i + self.lines]
        raise UsageError(
            f"{self.path} no longer contains {self.marker!r}",
            "the lesson's excerpt drifted from the code: update its marker",
        )

    def render(self) -> str:
        first, lines = self.read()
        width = len(str(first + len(lines)))
        body = "\n".join(f"    {n:>{width}} | {line}" for n, line in enumerate(lines, first))
        return f"  {self.path}:{first}\n{body}"


@dataclass(frozen=True)
class Lesson:
    number: int
    slug: str
    title: str
    story: str
    defect: str | None  # the defect module it is about (None: configuration)
    fault: str
    refresh: str
    turns: int
    look_for: str
    mechanism: str
    excerpts: tuple[Excerpt, ...]
    fault_params: tuple[tuple[str, Any], ...] = ()
    forbid: tuple[str, ...] = ALWAYS_FORBIDDEN  # "5xx" also counts sends answered 5xx
    kind: Literal["behaviour", "config"] = "behaviour"
    fix_hint: str = ""
    fault_turn: int | None = None  # a one-send fault armed before this turn (None: seeded choice)
    # When it loses: the `lab window` arguments that draw the lesson's curve, and what that curve
    # showed when measured (docs/window.md has the figures).
    window: str = ""
    window_seen: str = ""

    @property
    def name(self) -> str:
        return f"{self.number:02d}_{self.slug}"

    @property
    def exercise(self) -> Path:
        """The file the trainee edits."""
        return ROOT / "lessons" / self.name / "exercise.py"

    @property
    def pristine(self) -> Path:
        return HERE / "exercises" / f"{self.name}.py"

    @property
    def solution(self) -> Path:
        return HERE / "solutions" / f"{self.name}.py"

    def demo_cells(self) -> list[Cell]:
        """The experiment `lab lesson N` shows: the lesson's defect, then the correct code."""
        if self.kind == "config":
            return [self._cell((), durable=False), self._cell((), durable=True)]
        assert self.defect is not None
        return [self._cell((self.defect,)), self._cell(())]

    def check_cell(self, durable: bool | None = None) -> Cell:
        """The cell `--check` runs: the trainee's exercise loaded into the backend (or, for a
        configuration lesson, the configuration it chose)."""
        if self.kind == "config":
            return self._cell((), durable=bool(durable))
        return self._cell(("exercise",))

    def _cell(self, defects: tuple[str, ...], **params: Any) -> Cell:
        merged = {**dict(self.fault_params), **params}
        return Cell(defects, self.fault, self.refresh, self.turns, tuple(sorted(merged.items())))


REGISTRY: dict[int, Lesson] = {}


def register(lesson: Lesson) -> Lesson:
    if lesson.number in REGISTRY:
        raise ValueError(f"lesson {lesson.number} registered twice")
    REGISTRY[lesson.number] = lesson
    return lesson


def catalogue() -> list[str]:
    return [f"{n:>2}. {le.title}" for n, le in sorted(REGISTRY.items())]


def get(key: str | int) -> Lesson:
    """A lesson by number ("3", "03") or slug ("create_task"); UsageError listing the valid ones."""
    text = str(key).strip()
    for lesson in REGISTRY.values():
        if text in (str(lesson.number), f"{lesson.number:02d}", lesson.slug, lesson.name):
            return lesson
    valid = "\n".join(catalogue())
    raise UsageError(
        f"unknown lesson {text!r}; the lessons are:\n{valid}", "run `lab lesson N` with one of these numbers"
    )


def reset(lesson: Lesson, target: Path | None = None) -> Path:
    """Restore the exercise (or ``target``) from its pristine copy."""
    dest = target or lesson.exercise
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(lesson.pristine, dest)
    return dest


def intro(lesson: Lesson) -> str:
    """The story and the defect: printed before the experiment runs."""
    what = (
        f"the defect: {lesson.defect} (services/chat/defects/{lesson.defect}.py)"
        if lesson.defect
        else "the defect: none in the code -- it is in how Redis is run"
    )
    return "\n".join(
        [
            f"Lesson {lesson.number}: {lesson.title}",
            "",
            lesson.story,
            "",
            what,
            f"exposed by: fault {lesson.fault}, refresh {lesson.refresh}, {lesson.turns} turns per conversation",
        ]
    )


def outro(lesson: Lesson) -> str:
    """What to look for, the mechanism with its code, and the exercise."""
    rel = lesson.exercise.relative_to(ROOT)
    return "\n".join(
        [
            "",
            "What to look for (the table above; reports/ holds each failing trial's artifacts):",
            lesson.look_for,
            "",
            "The mechanism:",
            lesson.mechanism,
            *(
                [
                    "",
                    f"When it loses -- the curve: lab lesson {lesson.number} --window (lab window {lesson.window})",
                    f"  measured: {lesson.window_seen}",
                ]
                if lesson.window
                else []
            ),
            "",
            "The code concerned:",
            *(e.render() for e in lesson.excerpts),
            "",
            f"Your turn: in {rel}, {lesson.fix_hint}; then",
            f"  lab lesson {lesson.number} --check     (>= {MIN_TRIALS} trials under the fault: pass/fail)",
            f"  lab lesson {lesson.number} --reset     (start over from the original exercise)",
        ]
    )
