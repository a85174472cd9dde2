"""A reply that is not the answer to its message's POST (examples/node/relay.js: Express and
node-redis, a thread id the page mints and sends in the body, the message answered 202 {"turn"},
the reply streamed on an EventSource of that turn): the lab's page follows the turn's stream
([stream] follow) and takes the send as answered at its end event. The correct app, which stores
the reply before that event, is silent with every trial judged -- its mid-stream cuts cut the
reply's own stream; its reply_after_end bug (the reply stored after the end event, a failure only
logged) is drawn: stored after the answer, and acknowledged though refused.

Before [stream] follow, the send was answered by the 202: no reply waited for, the reply's stream
never opened, and the app never made one -- half the conversation untested."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.investigating import investigate
from tests.helpers import ROOT

SPEC = ROOT / "examples" / "node-relay.toml"
ONLY = ("--only", "after_ack|mid_stream|write_refused:at=answer", "--trials", "2")


def test_a_reply_streamed_on_its_own_request_is_followed_to_its_end(tmp_path: Path) -> None:
    code, out, ok = investigate(tmp_path / "ok", *ONLY, spec=SPEC)
    assert code == 0 and ok["diagnoses"] == [], out
    trials = json.loads(next((tmp_path / "ok" / "reports").glob("*/trials.json")).read_text())
    assert trials and not [t["unknown"] for t in trials if t["unknown"]], out
    # Unrefused, every send was answered by its reply's stream, the reply then read in the
    # settled history (a refused one's stream ended in its error event: not answered).
    sends = [s for t in trials if t["fault"] != "write_refused" for s in t["sends"] if not s["cut"]]
    assert sends and all(s["outcome"] == "ok" and s["reply"] for s in sends), sends
    cuts = [t["sends"][-1] for t in trials if t["refresh"] == "mid_stream"]
    assert len(cuts) == 2 and all(c["cut"] for c in cuts), cuts  # the follow's stream, cut mid-reply

    code, out, bug = investigate(tmp_path / "bug", *ONLY, "--set", "start.env.RELAY_BUGS=reply_after_end", spec=SPEC)
    assert code == 1, out
    found = {d["code"]: d for d in bug["diagnoses"]}
    assert {"stored_after_answer", "acked_write_refused"} <= set(found), out
