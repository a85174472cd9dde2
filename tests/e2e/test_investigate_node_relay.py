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

    # The bug's run leaves out the cuts (the reply stored late is read by the answer's end).
    only = ("--only", "after_ack|write_refused:at=answer", "--trials", "2")
    code, out, bug = investigate(tmp_path / "bug", *only, "--set", "start.env.RELAY_BUGS=reply_after_end", spec=SPEC)
    assert code == 1, out
    found = {d["code"]: d for d in bug["diagnoses"]}
    assert {"stored_after_answer", "acked_write_refused"} <= set(found), out


POLLED = ROOT / "examples" / "node-relay-poll.toml"


def test_a_reply_the_page_polls_for_is_answered_when_it_shows(tmp_path: Path) -> None:
    """RELAY_REPLY=poll: the job makes the reply as soon as the message is taken, the page polls
    the thread for it ([chat] reply_from = "history"). Taken as the 202's, the correct app drew
    stored_after_answer 10/22, writes_out_of_order 10/22, stale_reads 11/22 and
    replies_not_stored 4/22 (2026-12-07); answered by the read that shows the reply, nothing --
    and its message stored by a promise nobody awaits is drawn under refused writes."""
    only = ("--only", "after_ack|write_refused:at=write", "--trials", "2")
    code, out, ok = investigate(tmp_path / "ok", *only, spec=POLLED)
    assert code == 0 and ok["diagnoses"] == [], out
    trials = json.loads(next((tmp_path / "ok" / "reports").glob("*/trials.json")).read_text())
    judged = [t for t in trials if not t["unknown"]]
    assert len(judged) == len(trials) == 6, out
    # Each unrefused send answered at the read that showed its reply: after the 202's own time.
    sends = [s for t in judged if t["fault"] != "write_refused" for s in t["sends"]]
    assert sends and all(s["outcome"] == "ok" and s["status"] == 202 and s["reply"] for s in sends), sends

    code, out, bug = investigate(
        tmp_path / "bug",
        "--only",
        "write_refused:at=write",
        "--trials",
        "2",
        "--set",
        "start.env.RELAY_BUGS=message_after_202",
        spec=POLLED,
    )
    assert code == 1 and [d["code"] for d in bug["diagnoses"]] == ["acked_write_refused"], out


def test_a_reply_the_apps_own_page_polls_for_is_answered_when_it_renders_it(tmp_path: Path) -> None:
    """The same app driven through its own page ([page], relay.html polling the thread after each
    202): a send is answered when the page renders the message's reply, and the refresh right
    after the answer waits for it -- reloaded at the 202 (the page's own fetch answered), the
    correct app's reply was missing from the page after the refresh while the history had it:
    stale_reads 2/2 (2026-12-07). Nothing now, every trial judged."""
    spec = ROOT / "examples" / "node-relay-poll-page.toml"
    code, out, ok = investigate(tmp_path, "--only", "after_ack", "--trials", "2", spec=spec)
    assert code == 0 and ok["diagnoses"] == [], out
    trials = json.loads(next((tmp_path / "reports").glob("*/trials.json")).read_text())
    assert len(trials) == 4 and not [t["unknown"] for t in trials if t["unknown"]], out
    sends = [s for t in trials for s in t["sends"]]
    assert all(s["outcome"] == "ok" and s["status"] == 202 for s in sends), sends
    # The page after the refresh shows every reply: it came after the reply rendered.
    assert all(len([r for r in t["page_after_refresh"] if r["role"] == "assistant"]) == 3 for t in trials), trials
