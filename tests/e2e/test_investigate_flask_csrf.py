"""An app written apart from the lab (examples/flask_csrf: Flask on two gunicorn workers, the
conversation rendered on the server newest first, a form POST answered 303, a CSRF token of its
own in a hidden input, the id inside Flask's signed cookie): before [chat] hidden_from, every send
of the lab's was refused 400 (2026-12-06). Its save moved to a thread whose error is only logged
-> acked_write_refused; without it: nothing under the same fault."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import diagnosed_then_silent
from tests.helpers import ROOT

FLASK_CSRF = ROOT / "examples" / "flask-csrf.toml"
ONLY = ("--only", "write_refused", "--turns", "3", "--trials", "2")


def test_a_csrf_guarded_form_app_s_thread_save_and_its_silence_without_it(tmp_path: Path) -> None:
    found, _, out = diagnosed_then_silent(tmp_path, FLASK_CSRF, ONLY, "late_save", "FLASK_BUGS")
    assert set(found) == {"acked_write_refused"}, out
    assert found["acked_write_refused"]["k"] == found["acked_write_refused"]["n"] >= 2, found
