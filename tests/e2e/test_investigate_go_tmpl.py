"""An app written apart from the lab (examples/go-tmpl: Go's html/template, a "New chat" button
POSTing to a redirect, ids it checks, its page's script posting the form with X-Requested-With
and appending the turn's HTML): before [chat] headers and a POST create, lab init could not reach
a conversation, and without the header the app answers a redirect whose page reads the store
again -- after a goroutine's write has landed (2026-12-06). Its two bugs at once: the save a
goroutine -> acked_write_refused; EXPIRE ... NX -> ttl_not_renewed. Without them: nothing."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import diagnosed_then_silent
from tests.helpers import ROOT

GO_TMPL = ROOT / "examples" / "go-tmpl.toml"
ONLY = ("--only", "write_refused", "--turns", "3", "--trials", "2")


def test_a_go_template_app_s_goroutine_save_and_nx_ttl_and_its_silence_without_them(tmp_path: Path) -> None:
    found, _, out = diagnosed_then_silent(tmp_path, GO_TMPL, ONLY, "goroutine_save,expire_nx", "GO_BUGS")
    assert {"acked_write_refused", "ttl_not_renewed"} <= set(found), out
    assert all(found[c]["k"] == found[c]["n"] >= 2 for c in ("acked_write_refused", "ttl_not_renewed")), found
