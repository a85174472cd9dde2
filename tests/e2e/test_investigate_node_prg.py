"""An app written apart from the lab (examples/node/prg.js: Express rendering the conversation with
EJS, no client-side JS, a form POST answered 303 back to the page) makes its own ids -- GET /
redirects to /c/<16 hex>, any other id is 404 -- and has no JSON history: before [history] format
= "html" and [session] from = "redirect", lab init drafted neither and the lab could not talk to
it (2026-12-06). Its two bugs at once: a failed save logged and the redirect sent as if saved ->
acked_write_refused; EXPIRE on the first turn only -> ttl_not_renewed. Without them: nothing."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import diagnosed_then_silent
from tests.helpers import ROOT

PRG = ROOT / "examples" / "node-prg.toml"
# The send's first write refused (its claims are at=write's; at=later meets these apps' EXPIRE
# after their RPUSH: ttl_skipped_on_error, true of them, and not this test's claim).
ONLY = ("--only", "write_refused:at=write", "--turns", "3", "--trials", "2")


def test_a_post_redirect_get_app_s_swallowed_error_and_unrenewed_ttl_and_its_silence_without_them(
    tmp_path: Path,
) -> None:
    found, _, out = diagnosed_then_silent(tmp_path, PRG, ONLY, "swallow,expire_once", "PRG_BUGS")
    assert set(found) == {"acked_write_refused", "ttl_not_renewed"}, out
    assert all(d["k"] == d["n"] >= 2 for d in found.values()), found
