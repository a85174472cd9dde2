"""The backend loads a lesson's exercise only in lab mode, and applies it only when asked."""

from __future__ import annotations

from pathlib import Path

from services.chat import create_app, exercise

EXERCISE = Path(__file__).resolve().parents[4] / "lab/lessons/exercises/01_create_task.py"


def test_an_exercise_is_loaded_in_lab_mode_only() -> None:
    on = create_app({"LAB_MODE": True, "LAB_EXERCISE": str(EXERCISE)})
    off = create_app({"LAB_MODE": False, "LAB_EXERCISE": str(EXERCISE)})
    assert callable(exercise.step(on)) and exercise.step(off) is None


def test_asking_for_an_exercise_the_backend_lacks_is_a_400() -> None:
    app = create_app({"LAB_MODE": True})
    resp = app.test_client().get("/history", headers={"X-Lab-Defects": "exercise"})
    assert resp.status_code == 400 and resp.get_json()["error"] == "no_exercise"
