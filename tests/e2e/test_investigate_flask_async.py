"""An app written apart from the lab (examples/flask_async_app.py: Flask's async views, each on a
loop of its own, redis.asyncio, the id in Flask's session cookie, a history of [role, text]
arrays): one module-level client shared across those loops fails about half the requests with
no fault -> errors_without_fault, its line proven ("... if SHARED else None": no suspect line
before, 2026-12-06); the app without it: only the session cookie a browser restart drops, which
is true of it (Flask's session cookie has no Max-Age)."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import investigate
from tests.helpers import ROOT

FLASK_ASYNC = ROOT / "examples" / "flask-async.toml"
ONLY = ("--only", "browser_restart", "--turns", "3", "--trials", "3")


def test_a_client_shared_across_event_loops_fails_by_itself_and_its_line_is_proven(tmp_path: Path) -> None:
    code, out, results = investigate(tmp_path, *ONLY, "--set", "start.env.APP_BUGS=global_client", spec=FLASK_ASYNC)
    assert code == 1, out
    found = {d["code"] for d in results["diagnoses"]}
    assert "errors_without_fault" in found and found <= {
        "errors_without_fault",
        "history_reads_failing",
        "session_cookie",
    }
    proven = [x for x in results["suspects"]["suspects"] if x["status"] == "proven"]
    assert [x["check"] for x in proven] == ["module_client"], proven


def test_the_correct_app_shows_only_its_session_cookie(tmp_path: Path) -> None:
    code, out, results = investigate(tmp_path, *ONLY, spec=FLASK_ASYNC)
    assert [d["code"] for d in results["diagnoses"]] == ["session_cookie"], out


def test_a_ttl_set_with_nx_is_never_renewed_on_the_key_found_by_what_it_holds(tmp_path: Path) -> None:
    """EXPIRE ... NX on every turn sets the TTL once: ttl_not_renewed, read on the key found by the
    trial's messages (`c:*`: the id in its name is inside the signed cookie), its line proven."""
    args = ("--only", "none", "--turns", "3", "--trials", "2", "--set", "start.env.APP_BUGS=expire_nx")
    code, out, results = investigate(tmp_path, *args, spec=FLASK_ASYNC)
    found = {d["code"]: d for d in results["diagnoses"]}
    assert code == 1 and "ttl_not_renewed" in found and set(found) <= {"ttl_not_renewed", "session_cookie"}, out
    judged = found["ttl_not_renewed"]
    assert judged["k"] == judged["n"] >= 4, judged
    proven = [x for x in results["suspects"]["suspects"] if x["status"] == "proven"]
    assert [x["check"] for x in proven] == ["ttl_conditional"], proven  # its EXPIRE ... NX line
