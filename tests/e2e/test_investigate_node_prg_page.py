"""The post/redirect/get app (examples/node/prg.js) through its own page ([page]: its form typed
into and submitted). Before, every send was its 303 ("Response body is unavailable for redirect
responses": every trial unknown); the roles, the classes "line you" / "line assistant", were read
whole (every page after a refresh "amnesia"); a reload after a 500 page posted the form again
(the failed message stored by the lab's own reload: phantom_fail); a reload while the form's
POST was in flight was aborted by its navigation (in_flight unknown). Now: its swallowed save
and its TTL set once are drawn; without them, nothing over the same experiments."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import diagnosed_then_silent
from tests.helpers import ROOT

SPEC = ROOT / "examples" / "node-prg-page.toml"
# The refresh mid-POST (in_flight), a 500 page (down), the refused write.
ONLY = ("--only", "down|in_flight|write_refused:at=write", "--turns", "3", "--trials", "2")


def test_a_form_apps_own_page_its_bugs_drawn_and_its_silence_without_them(tmp_path: Path) -> None:
    found, results, out = diagnosed_then_silent(tmp_path, SPEC, ONLY, "swallow,expire_once", "PRG_BUGS")
    assert set(found) == {"acked_write_refused", "ttl_not_renewed"}, out
    assert all(d["k"] == d["n"] >= 2 for d in found.values()), found
    judged = {c["fault"] for c in results["cells"] if c["trials"] >= 2}
    assert {"down", "latency", "write_refused"} <= judged, results["cells"]
