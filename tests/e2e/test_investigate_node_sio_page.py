"""An app written apart from the lab (examples/node/sio_page.js: Express, Socket.IO, ioredis; the
page mints the id and emits 'user_message' {conv, content}): drafted whole by lab init since
2026-12-06 (it asked for the events before). The reply's row stored without waiting and its
failure dropped -> acknowledged though Redis refused it, in every trial whose refused write is the
reply's (the user's row is awaited: refused, the app says so); the app without it: silent."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import diagnosed_then_silent
from tests.helpers import ROOT

SIO_PAGE = ROOT / "examples" / "node-sio-page.toml"
ONLY = ("--only", "write_refused", "--turns", "3", "--trials", "2")


def test_a_reply_row_stored_unawaited_is_acknowledged_though_refused(tmp_path: Path) -> None:
    found, results, out = diagnosed_then_silent(tmp_path, SIO_PAGE, ONLY, "no_await_store")
    # The same unawaited store may also land after its answer on a loaded machine (a fresh-clone
    # CI run: turn 3's rows 14 ms after it, 1 of 4 trials): stored_after_answer, true of the bug.
    assert "acked_write_refused" in found and set(found) <= {"acked_write_refused", "stored_after_answer"}, out
    answer_cells = [c for c in results["cells"] if c["fault_params"].get("at") == "answer"]
    assert found["acked_write_refused"]["k"] == 2 == sum(c["trials"] for c in answer_cells), results["cells"]
