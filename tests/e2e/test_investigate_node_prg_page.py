"""The post/redirect/get app (examples/node/prg.js) through its own page ([page]: its form typed
into and submitted). Before, every send was its 303 ("Response body is unavailable for redirect
responses": every trial unknown); the roles, the classes "line you" / "line assistant", were read
whole (every page after a refresh "amnesia"); a reload after a 500 page posted the form again
(the failed message stored by the lab's own reload: phantom_fail); a reload while the form's
POST was in flight was aborted by its navigation (in_flight unknown). Now: its swallowed save
and its TTL set once are drawn; without them, nothing over the same experiments."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import diagnosed_then_silent, investigate
from tests.helpers import ROOT

SPEC = ROOT / "examples" / "node-prg-page.toml"
# A 500 page (down), the refused write. (The refresh mid-POST: the render style's test below --
# the same form's POST in flight, the same way back to the form's page.)
ONLY = ("--only", "down|write_refused:at=write", "--turns", "3", "--trials", "2")


def test_a_form_apps_own_page_its_bugs_drawn_and_its_silence_without_them(tmp_path: Path) -> None:
    found, results, out = diagnosed_then_silent(tmp_path, SPEC, ONLY, "swallow,expire_once", "PRG_BUGS")
    assert set(found) == {"acked_write_refused", "ttl_not_renewed"}, out
    assert all(d["k"] == d["n"] >= 2 for d in found.values()), found
    judged = {c["fault"] for c in results["cells"] if c["trials"] >= 2}
    assert {"down", "write_refused"} <= judged, results["cells"]


def test_a_form_app_answering_with_the_conversation_itself_is_judged_and_silent(tmp_path: Path) -> None:
    """The same app answering each message's POST with the conversation's page itself (200, no
    redirect): the page's URL is then the form's action. Its id is read from it by the chat
    path; a refresh or a 500 page goes back to the page the first message was typed on (it
    went to the last POST's action, a 404: every such trial waited 30 s); a page the pool hands
    to the next trial keeps none of its last trial's form state (a refresh opened that trial's
    conversation: acked_lost in 2 of 20 trials of the correct app). Every trial judged."""
    args = ("--only", "none|down|in_flight", "--turns", "3", "--trials", "2", "--set", "start.env.PRG_ANSWER=render")
    code, out, results = investigate(tmp_path, *args, spec=SPEC)
    assert code == 0 and results["diagnoses"] == [], out
    assert all(c["trials"] == 2 and not c["unknown"] for c in results["cells"]), results["cells"]
