"""Two apps written apart from the lab whose pages keep their CSRF token in a <meta> tag and send
it in a header with every POST (Flask-WTF: X-CSRFToken, 400 without it; Express with csrf-sync:
x-csrf-token, 403 without it): before [http] csrf_meta every send of the lab's page was refused,
and `lab init` found no chat route. Each app's bug drawn, and nothing without it under the same
experiment."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import diagnosed_then_silent, investigate
from tests.helpers import ROOT

FLASK_META = ROOT / "examples" / "flask-meta.toml"
NODE_QUILL = ROOT / "examples" / "node-quill.toml"


def test_flask_wtf_s_token_in_a_meta_tag_and_a_swallowed_store_error(tmp_path: Path) -> None:
    """swallow: a Redis error while storing logged, the answer 200 all the same."""
    only = ("--only", "write_refused", "--turns", "3", "--trials", "2")
    found, _, out = diagnosed_then_silent(tmp_path, FLASK_META, only, "swallow", "TUTOR_BUGS")
    assert set(found) == {"acked_write_refused"}, out
    assert found["acked_write_refused"]["k"] == found["acked_write_refused"]["n"] >= 2, found


def test_csrf_sync_s_token_and_a_reply_write_nobody_awaits_hidden_by_the_session_s_save(tmp_path: Path) -> None:
    """fire_reply: the reply's RPUSH a promise with a logging .catch. express-session saves the
    session (a SET on the same connection) before the answer ends, so the RPUSH always lands
    before the answer: no timing shows it. Refused once the send has stored its message
    (write_refused at=later), it is acknowledged and never stored; the app awaiting it answers
    503 there. (at=write, the message's own write, is answered 503 by both.)"""
    only = ("--only", "write_refused:at=later", "--turns", "3", "--trials", "2")
    code, out, results = investigate(
        tmp_path / "bug", *only, "--set", "start.env.QUILL_BUGS=fire_reply", spec=NODE_QUILL
    )
    found = {d["code"]: d for d in results["diagnoses"]}
    assert code == 1 and "acked_write_refused" in found, out
    # Met at the message's EXPIRE instead (awaited, answered 503): ttl_skipped_on_error, true of
    # an app whose append and TTL are two commands -- beside it, and alone without the bug.
    assert set(found) <= {"acked_write_refused", "ttl_skipped_on_error"}, out
    assert found["acked_write_refused"]["k"] >= 1, found
    code, ok_out, ok = investigate(tmp_path / "ok", *only, spec=NODE_QUILL)
    assert {d["code"] for d in ok["diagnoses"]} <= {"ttl_skipped_on_error"}, ok_out
