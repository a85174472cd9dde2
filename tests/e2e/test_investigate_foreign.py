"""`lab investigate` against the foreign example (examples/foreign_app.py) with one real bug
switched on (FOREIGN_BUGS): each diagnosis that is otherwise only unit-tested is raised against
a real app, from real Redis/Toxiproxy/Chromium trials, with its evidence. Each run is as narrow
as still proves the point (`--only` one fault, 1 trial per experiment, 3 turns).

The control -- the correct app gets none of these diagnoses under the same experiments -- is
tests/e2e/test_investigate.py::test_foreign_app_newest_first_strings_no_ids_no_health_no_anomaly:
the whole default plan (a superset of every narrowed run here: same spec, 3 turns, 1 trial per
experiment), no diagnosis at all.

Then mistakes that lose nothing, and a look-alike of one (out_of_order, repeat_replies,
ttl_two_commands): each must get its own diagnosis and no other, or none.

And the app's own page (GET /, the DOM contract the lab's page driver is written against) in
Chromium."""

from __future__ import annotations

import json
import shlex
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect

from lab.common.config import PORT_ENV, LabConfig
from lab.investigate.spec import parse as spec_mod
from lab.investigate.target import process as target
from lab.investigate.target.link import redis_link
from tests.cleanup import lab_down_after
from tests.e2e.investigating import FOREIGN, api_spec, assert_nothing_left, investigate, investigate_env
from tests.helpers import ROOT, free_ports, run_lab

# bug -> (the diagnosis that must name it, the narrowest experiments that show it)
BUGS = {
    "ack_early": ("acked_too_fast", "latency"),  # a reply faster than the 300 ms Redis latency
    "cap_history": ("history_capped", "none"),  # 3 turns = 6 rows, capped at 4: in every trial
    # The reload right after the last ack: the store's record has the turn before the read left.
    "stale_cache": ("history_from_copy", "latency"),
    "no_ttl": ("no_ttl", "none"),
}


def _diagnosed(
    tmp_path: Path, code: str, *args: str, spec: Path = FOREIGN
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Run, and check the diagnosis is raised truthfully: exit 1, k >= 1 of n, its trials listed
    (real trial ids of this run) and named in its evidence."""
    exit_code, out, results = investigate(tmp_path, "--trials", "1", *args, spec=spec)
    assert exit_code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert code in found, out
    d = found[code]
    assert 1 <= d["k"] <= d["n"] and len(d["trials"]) == d["k"], d
    trial_ids = {t["trial_id"] for t in json.loads(next((tmp_path / "reports").glob("*/trials.json")).read_text())}
    assert set(d["trials"]) <= trial_ids, (d, trial_ids)
    assert any(t in d["evidence"] for t in d["trials"]), d
    assert f"[{code}]" in out
    _assert_proven_at_the_bug(results, code, out)
    return found, d, out


# diagnosis -> the static check whose line at the bug it proves (lab/suspects; [source] in the spec)
PROVES = {
    "acked_too_fast": "background_write",
    "history_capped": "history_trim",
    "stale_reads": "history_cache",
    "history_from_copy": "history_cache",
    "no_ttl": "ttl_conditional",
    "writes_out_of_order": "concurrent_writes",
    "ttl_skipped_on_error": "ttl_two_commands",
    "lost_update": "read_modify_write",
}


def _assert_proven_at_the_bug(results: dict[str, Any], code: str, out: str) -> None:
    """The diagnosis is shown beside its suspect line in examples/foreign_app.py: proven."""
    lines = results["suspects"]["suspects"]
    proven = [x for x in lines if x["status"] == "proven"]
    assert all(x["path"] == "examples/foreign_app.py" for x in proven), proven
    if code in PROVES:
        assert any(x["check"] == PROVES[code] and x["by"] == code for x in proven), (code, proven)
        assert "The lines ([source] examples/foreign_app.py" in out and "  proven (" in out, out
    else:  # e.g. lost_on_redis_restart: the environment, no line of the app
        assert code in results["suspects"]["without_suspect"], results["suspects"]


@pytest.mark.parametrize("bug", list(BUGS), ids=list(BUGS))
def test_foreign_bug_is_diagnosed(tmp_path: Path, bug: str) -> None:
    code, only = BUGS[bug]
    found, d, out = _diagnosed(tmp_path, code, "--only", only, "--set", f"start.env.FOREIGN_BUGS={bug}")
    if bug == "ack_early":
        # Acknowledged too fast, yet stored in the end: not a loss.
        assert "of injected Redis latency a send was acknowledged in" in d["evidence"], d
        assert "acked_lost" not in found, out
    elif bug == "cap_history":
        # Every fault-free conversation: 3 turns (6 rows), after a browser restart, and 12 turns.
        assert "capped at 4 rows" in d["cause"] and d["k"] == d["n"] == 3, d
        # The cap trims the Redis key itself: nothing is stored that the history hides.
        assert "history_hides_stored" not in found and "acked_lost" not in found, out
    elif bug == "stale_cache":
        assert "turn 3 had been in Redis" in d["evidence"], d  # the last turn, missing right after its ack
        assert "acked_lost" not in found and "stale_reads" not in found, out  # ... there once refreshed
    elif bug == "no_ttl":
        assert "PTTL -1" in d["evidence"] and d["k"] == d["n"] == 3, d


def test_a_key_kept_without_a_ttl_is_no_defect_unless_the_spec_says_conversations_expire(tmp_path: Path) -> None:
    """no_ttl's app (EXPIRE never sent) under a spec that does not say its conversations expire:
    the same PTTL -1 as an app that keeps them on purpose (LangChain's RedisChatMessageHistory
    does by default) -- no diagnosis, no_ttl listed as not judged. With the spec's word
    (examples/foreign-app.toml: expires = true), test_foreign_bug_is_diagnosed[no_ttl]."""
    spec = tmp_path / "keeps.toml"
    text = FOREIGN.read_text().replace('cwd = ".."', f"cwd = {str(ROOT)!r}")
    spec.write_text("\n".join(line for line in text.splitlines() if not line.startswith("expires =")) + "\n")
    exit_code, out, results = investigate(
        tmp_path, "--trials", "1", "--only", "none", "--set", "start.env.FOREIGN_BUGS=no_ttl", spec=spec
    )
    assert exit_code == 0 and results["diagnoses"] == [], out
    assert results["not_judged"]["no_ttl"] == "needs key + expiry in one trial", results["not_judged"]


def test_stale_cache_of_the_whole_history(tmp_path: Path) -> None:
    """The cache keeps what the page read on open (the send path does not refill it): the page
    right after the sends shows NONE of them, its read answering 200 with the same cookie, and
    the settled history has them all -- the store's record held them before that read left: a
    copy served, not "no anomaly".
    Through the lab's page (the API spec): the app's own page reads the history after every
    send, which refreshes the cache."""
    found, d, out = _diagnosed(
        tmp_path,
        "history_from_copy",
        "--only",
        "latency",
        "--set",
        "start.env.FOREIGN_BUGS=stale_cache",
        "--set",
        "start.env.FOREIGN_CACHE_SEND_FILLS=0",
        "--set",
        "start.env.FOREIGN_CACHE_MS=10000",
        spec=api_spec(tmp_path),
    )
    # The key held every turn before the page's read left: a copy, not a late write.
    assert "(it showed none of the conversation)" in d["evidence"], d
    assert "acked_lost" not in found and "session_cookie" not in found and "stale_reads" not in found, out


def test_redis_restart_loses_the_conversation(tmp_path: Path) -> None:
    """The correct app with `--only redis_restart`: the lab's Redis has no persistence, so a
    restart loses every turn before it. This diagnoses the environment (Redis without
    RDB/AOF), not the app: the app has no bug switched on."""
    found, d, out = _diagnosed(tmp_path, "lost_on_redis_restart", "--only", "redis_restart")
    assert "(environment)" in d["cause"] and d["k"] == d["n"] == 1, d
    assert "acked_lost" not in found, out  # explained by the restart, not reported twice


# ----------------------------------------- mistakes that are not loss, and look-alikes of it
def test_out_of_order_writes_are_diagnosed_as_order_only(tmp_path: Path) -> None:
    """out_of_order: the two rows of a turn written by concurrent coroutines on one asyncio
    loop, both awaited before the answer but not ordered -- replies stored above their
    questions (measured directly: in most conversations). Every row lands, each with its TTL,
    once: the order is the only anomaly. The fault-free experiments suffice (3 conversations:
    3, 3 and 12 turns)."""
    found, d, out = _diagnosed(
        tmp_path, "writes_out_of_order", "--only", "none", "--set", "start.env.FOREIGN_BUGS=out_of_order"
    )
    assert set(found) == {"writes_out_of_order"}, out


def test_repeated_reply_texts_are_no_anomaly(tmp_path: Path) -> None:
    """repeat_replies: the assistant answers every message with the same text, the app is
    otherwise correct -- equal replies are neither duplicates nor each other's stored copies.
    The fault-free experiments and the one-shot drop (a failed turn stores nothing, while its
    reply's text is stored by the other turns)."""
    exit_code, out, results = investigate(
        tmp_path, "--trials", "1", "--only", "none|drop", "--set", "start.env.FOREIGN_BUGS=repeat_replies", spec=FOREIGN
    )
    assert exit_code == 0, out
    assert results["diagnoses"] == [] and results["verdict"] == "no anomaly found", out


def test_ttl_in_a_second_command_is_skipped_on_error(tmp_path: Path) -> None:
    """ttl_two_commands: LPUSH, then EXPIRE as a separate command. The one-shot drop loses the
    LPUSH's reply (the turn is stored, the send answers 500) and the EXPIRE is never sent; the
    next acknowledged write renews the TTL. A milder finding than a TTL writes do not renew,
    and the key has a TTL."""
    found, d, out = _diagnosed(
        tmp_path, "ttl_skipped_on_error", "--only", "drop", "--set", "start.env.FOREIGN_BUGS=ttl_two_commands"
    )
    assert "ttl_not_renewed" not in found and "no_ttl" not in found, out


# ---------------------------------------------------------------------- the app's own page
@pytest.fixture
def foreign_app(tmp_path: Path) -> Iterator[str]:
    """The correct foreign app as a real process, against the lab's Redis (through Toxiproxy,
    as `lab investigate` runs it) on free ports; everything stopped afterwards."""
    ports = free_ports(len(PORT_ENV) + 1)
    env = {name: str(p) for name, p in zip(PORT_ENV.values(), ports)}
    env["LAB_RUN_DIR"] = str(tmp_path / "run")
    cfg = LabConfig.from_env(env)
    spec = spec_mod.load(FOREIGN, [f"http.port={ports[-1]}"])
    link = redis_link(cfg)
    link.up()
    try:
        with target.running(spec, cfg.run_dir, cfg.host, cfg.ports["redis_proxy"]):
            yield spec.http.base_url
    finally:
        link.down()
        assert_nothing_left(cfg.run_dir, "after the foreign app fixture")


def _rendered(page: Page) -> list[tuple[str | None, str]]:
    items = page.locator("#messages li.msg")
    return [(items.nth(i).get_attribute("data-role"), items.nth(i).inner_text()) for i in range(items.count())]


def test_own_page_sends_and_renders_oldest_first(foreign_app: str, browser: Browser) -> None:
    with urllib.request.urlopen(foreign_app + "/", timeout=5) as resp:
        body = resp.read().decode()
        assert resp.status == 200 and resp.headers["Content-Type"].startswith("text/html")
    assert all(s in body for s in ('id="msg"', 'id="send"', 'id="messages"', 'id="error"')), body

    ctx = browser.new_context(base_url=foreign_app)
    try:
        page = ctx.new_page()
        page.goto("/")
        expect(page.locator("body")).to_have_attribute("data-loaded", "1")
        assert _rendered(page) == [] and page.locator("#error").is_hidden()

        page.locator("#msg").fill("first message")
        page.locator("#send").click()  # the click starts the send: data-idle is removed at once
        expect(page.locator("body")).to_have_attribute("data-idle", "1")
        expect(page.locator("#messages li.msg")).to_have_count(2)
        expect(page.locator("#msg")).to_have_value("")
        page.locator("#msg").fill("second message")
        page.locator("#msg").press("Enter")
        expect(page.locator("#messages li.msg")).to_have_count(4)
        expect(page.locator("body")).to_have_attribute("data-idle", "1")
        expect(page.locator("#send")).to_be_enabled()

        expected = [
            ("user", "first message"),
            ("bot", "You said 13 characters; this is message 1."),
            ("user", "second message"),
            ("bot", "You said 14 characters; this is message 2."),
        ]
        assert _rendered(page) == expected
        assert page.locator("#error").is_hidden()

        page.reload()
        expect(page.locator("body")).to_have_attribute("data-loaded", "1")
        assert _rendered(page) == expected  # from the server (same cookie), oldest first
    finally:
        ctx.close()


def test_app_page_of_a_streaming_app_is_cut_only_mid_stream(tmp_path: Path) -> None:
    """With [stream] and [page], only the mid_stream experiment cuts a reply: the other
    experiments read every answer to its end (no send of theirs is marked cut). This app does
    not stream at all (its JSON answer arrives whole with its headers), so the cut the page
    made at the answer's start came after the answer's end: that trial is unknown, never a
    pass, and the run says so (exit 3) instead of "no anomaly found"."""
    exit_code, out, results = investigate(
        tmp_path, "--trials", "1", "--only", "none", "--set", "stream.request={}", spec=FOREIGN
    )
    assert exit_code == 3, out
    trials = json.loads(next((tmp_path / "reports").glob("*/trials.json")).read_text())
    cut = {t["refresh"]: [s["cut"] for s in t["sends"]] for t in trials}
    assert set(cut) == {"settled", "browser_restart", "mid_stream"}, cut
    assert cut["mid_stream"][-1] is True and not any(cut["mid_stream"][:-1]), cut
    assert all(c is None for r, cs in cut.items() if r != "mid_stream" for c in cs), cut
    why = {t["refresh"]: t["unknown"] for t in trials}
    assert why["mid_stream"] is not None and "the mid-stream window was not tested" in why["mid_stream"], why
    assert [r for r, w in why.items() if w] == ["mid_stream"], why


def test_read_modify_write_is_a_lost_update_and_nothing_else(tmp_path: Path) -> None:
    """The history as one JSON document (a Redis string, another layout than the list), GET ->
    add -> SET: the whole default plan finds the two tabs' lost update and no other diagnosis --
    the turns sent one at a time are all kept, so nothing else is evidenced. The same plan on
    the app without the bug finds nothing (test_investigate.py's foreign control)."""
    found, d, out = _diagnosed(tmp_path, "lost_update", "--set", "start.env.FOREIGN_BUGS=read_modify_write")
    assert set(found) == {"lost_update"}, out
    assert d["k"] == d["n"] == 1 and "in flight together" in d["evidence"], d
    trials = json.loads(next((tmp_path / "reports").glob("*/trials.json")).read_text())
    tabs = next(t for t in trials if t["refresh"] == "two_tabs")
    assert tabs["redis_final"]["type"] == "string" and len(tabs["sends"]) == 5, tabs  # turn 1, then 2 rounds of 2 tabs


# --------------------------------------------- apps unlike ours: after the answer, fixed order
def _five(tmp_path: Path, bug: str, *only: str, trials: int = 5) -> tuple[dict[str, Any], str, list[dict[str, Any]]]:
    exit_code, out, results = investigate(
        tmp_path, "--trials", str(trials), *only, "--set", f"start.env.FOREIGN_BUGS={bug}", spec=FOREIGN
    )
    trials = json.loads(next((tmp_path / "reports").glob("*/trials.json")).read_text())
    assert exit_code == 1, out
    return {d["code"]: d for d in results["diagnoses"]}, out, trials


@pytest.mark.parametrize(
    "bugs",
    ["write_after_answer", "write_after_answer,slow_read,repeat_replies"],
    ids=["fast-read", "read-as-slow-as-the-writes-repeated-replies"],
)
def test_a_turn_written_after_the_answer_is_seen_in_the_store(tmp_path: Path, bugs: str) -> None:
    """write_after_answer: the user's row, the reply's row and EXPIRE each sent after the answer,
    in order, one 300 ms round trip apart under the latency. The store's record (MONITOR) shows
    the reply's row reaching Redis after the browser had the answer, in every trial:
    stored_after_answer, and nothing else -- the stale page it causes where the app's read is
    fast is its consequence, not a second cause; no TTL cause (the reads taken while the chain
    ran are not settled).

    With slow_read the app's history read costs as many round trips as the chain, so the page
    reloaded right after the answer shows every turn: the page alone finds nothing, the store
    still does. Every reply reads the same: placed by time, not by text."""
    found, out, trials = _five(tmp_path, bugs, "--only", "after_ack")
    # Its chains run after the answers with nothing ordering them, so one turn's chain may reach
    # Redis behind the next turn's: writes_out_of_order, true and at its rate (1 of 10 trials in a
    # CI run, 2026-12-05), is the only other diagnosis allowed.
    assert set(found) - {"writes_out_of_order"} == {"stored_after_answer"}, out
    d = found["stored_after_answer"]
    judged = [t for t in trials if not t["unknown"]]
    assert d["k"] == d["n"] == len(judged) >= 5, (d, len(judged))
    assert "after its answer (MONITOR" in d["evidence"] and d["replay"] and "--trial" in d["replay"]["command"], d
    assert all(t["store"] and t["store_note"] is None for t in judged), [t["store_note"] for t in judged]
    delays = [t["refresh_delay_ms"] for t in judged]
    # Each reload left the page well within one injected latency of the answer (the window tested).
    assert all(x is not None and 0 <= x < 300 for x in delays), delays
    assert all(o["settled"] is False or o["length"] % 2 == 0 for t in trials for o in t["ttl"]), trials
    if "slow_read" in bugs:  # the page showed every turn: only the store saw it
        assert all(len(t["page_after_refresh"]) == 2 * len(t["sends"]) for t in judged), out


def test_a_per_worker_cache_is_a_copy_served_and_nothing_else(tmp_path: Path) -> None:
    """worker_cache with two worker processes (a pre-fork server): each keeps its own TTL cache
    of the histories it read and drops only its own copy on a send. A read that lands on the
    other worker serves its older copy: the store's record has the turn before that read left,
    the page lacks it -> history_from_copy, at the race's rate (the kernel picks the worker), and
    nothing else -- no lost update, no stale read as a second cause, nothing lost.

    Every history request also reads a greeting set up as the app started (FOREIGN_GREETING, a key
    of the conversations' shape never written in the run): a copy served beside it is no read
    of another identity's key -- that key holds something (history_from_another_key drew 8/40
    from these trials before it asked, 2026-12-05, seed 6)."""
    greeting = ("--set", "start.env.FOREIGN_GREETING=1")
    found, out, trials = _five(tmp_path, "worker_cache", "--set", "start.env.FOREIGN_WORKERS=2", *greeting, trials=3)
    assert set(found) == {"history_from_copy"}, out
    d = found["history_from_copy"]
    judged = [t for t in trials if not t["unknown"]]
    assert 1 <= d["k"] <= d["n"] <= len(judged) and len(judged) >= 27, (d, len(judged))
    assert "had been in Redis" in d["evidence"] and "(MONITOR against the browser's request time)" in d["evidence"], d
    # The same two workers without the cache: nothing (silence on the app without the bug).
    exit_code, out, results = investigate(
        tmp_path / "correct",
        "--trials",
        "3",
        "--only",
        "none",
        "--set",
        "start.env.FOREIGN_WORKERS=2",
        *greeting,
        spec=FOREIGN,
    )
    assert exit_code == 0 and results["diagnoses"] == [] and "No anomaly found" in out, out


def test_a_history_served_reversed_is_a_fixed_reversal_not_a_race(tmp_path: Path) -> None:
    """reversed_history: stored oldest first, served as the newest-first list the API promises --
    every conversation upside down, in every trial, under every fault: history_reversed (it says
    to check the spec's order first) and not writes_out_of_order; nothing else. A fixed reversal,
    not a rate: 3 trials an experiment."""
    found, out, trials = _five(tmp_path, "reversed_history", trials=3)
    assert set(found) == {"history_reversed"}, out
    d = found["history_reversed"]
    judged = [t for t in trials if not t["unknown"]]
    assert d["k"] == d["n"] == len(judged) >= 18, (d, len(judged))
    assert "spec's [history] order first" in d["cause"], d
    assert "every row was RPUSHed, so the list lies oldest first" in d["evidence"], d  # the store's record
    assert "replay trial " in out and "--trial" in out, out


def test_a_history_read_from_another_key_is_another_identity_and_nothing_else(tmp_path: Path) -> None:
    """history_cookie: the history route reads the session under a cookie renamed there only, so
    it takes a fresh id and reads that (empty) conversation's key: every refresh shows nothing
    while Redis holds every turn under the send route's key. The store's record shows the page's
    read going to a key of the conversation's shape that no trial owns, the conversation's own
    not read -- history_from_another_key in every judged trial, and no copy, no hiding read path,
    no loss beside it (the settled whole plan, --trials 5 --seed 7: 40/40 and nothing else).
    Beside it every history request reads a greeting key of the same shape set up as the app
    started: the key read instead is the empty one, not the one that holds something."""
    found, out, trials = _five(tmp_path, "history_cookie", "--only", "none", "--set", "start.env.FOREIGN_GREETING=1")
    assert set(found) == {"history_from_another_key"}, out
    d = found["history_from_another_key"]
    assert "conv:greeting" not in d["evidence"], d  # named: the empty key, not the greeting read first
    judged = [t for t in trials if not t["unknown"]]
    assert d["k"] == d["n"] == len(judged) >= 10, (d, len(judged))
    for t in judged:
        own = t["redis_final"]["key"]
        assert t["redis_final"]["stored_turns"] == list(range(1, t["turns"] + 1)), t  # all stored
        assert t["page_after_refresh"] == [] and t["store_other_reads"], t  # none shown, read elsewhere
        assert all(r["key"] != own and r["key"].startswith("conv:") for r in t["store_other_reads"]), t
    # The diagnosis's replay line, run as printed (two runs): the trial's experiment again, with
    # its seed, and the same diagnosis reproduced in each.
    argv = shlex.split(d["replay"]["command"])
    assert argv[1:2] == ["replay"] and d["replay"]["trial"] in argv, argv
    env, port = investigate_env(tmp_path / "replay")
    # A port of its own for the replay's target (a later --set wins): the line's own was once still
    # taken a moment after the first run ended, on a loaded fresh-clone run (2026-12-06).
    again = ("--set", f"http.port={port}", "--runs", "2", "--reports", str(tmp_path / "replay" / "reports"))
    with lab_down_after(env):
        p = run_lab(env, *argv[1:], *again, timeout=300)
    said = p.stdout + p.stderr
    assert p.returncode == 0 and f"{d['replay']['trial']}, seed " in said, said  # 0: reproduced (lab replay too)
    assert "history_from_another_key reproduced 2/2" in said, said
    # Each run is the replayed trial again: its seed (its texts), not a new one.
    first = next(t for t in trials if t["trial_id"] == d["replay"]["trial"])
    again = json.loads(next((tmp_path / "replay" / "reports").glob("*/trials.json")).read_text())
    assert [t["seed"] for t in again] == [first["seed"]] * 2, (first["seed"], [t["seed"] for t in again])


def test_a_cookie_scoped_to_the_send_route_is_said_so_and_nothing_is_lost(tmp_path: Path) -> None:
    """cookie_path: the send route sets the session cookie with its own Path (/api/send), so the
    history route never gets it: every refresh shows an empty conversation while Redis holds
    every turn. The lab finds the cookie whatever its Path, reads the key, and names the Path --
    session_cookie_path in every judged trial and nothing else: no cap of 0 rows, no read path
    that hides, no loss (before, the cookie was looked up for the base URL, which filters by
    path: no key read, "acked_lost" and "capped at 0 rows")."""
    found, out, trials = _five(tmp_path, "cookie_path", "--only", "none")
    assert set(found) == {"session_cookie_path"}, out
    d = found["session_cookie_path"]
    judged = [t for t in trials if not t["unknown"]]
    assert d["k"] == d["n"] == len(judged) >= 10, (d, len(judged))
    assert "Path=/api/send" in d["cause"] and "/api/messages" in d["cause"], d
    for t in judged:
        assert t["cookie_scope"]["covers_history"] is False and t["cookie_scope"]["covers_send"] is True, t
        assert t["redis_final"]["stored_turns"] == list(range(1, t["turns"] + 1)), t  # all stored
        assert t["page_after_refresh"] == [], t  # ... and none shown


def test_a_reversal_is_told_through_replies_that_all_read_the_same(tmp_path: Path) -> None:
    """reversed_history + repeat_replies: newest first served as is, and every reply the same
    text, two tabs sending together included. Which equal reply is whose cannot be told, so those
    rows say nothing about order; the questions, all mirrored, still do: history_reversed in
    every judged trial, and no race (writes_out_of_order), no duplicate, no loss."""
    found, out, trials = _five(tmp_path, "reversed_history,repeat_replies", "--only", "two_tabs|browser_restart")
    assert set(found) == {"history_reversed"}, out
    d = found["history_reversed"]
    judged = [t for t in trials if not t["unknown"]]
    assert d["k"] == d["n"] == len(judged) >= 8, (d, len(judged))
    assert any(t["refresh"] == "two_tabs" for t in judged) and any(t["refresh"] == "browser_restart" for t in judged)
