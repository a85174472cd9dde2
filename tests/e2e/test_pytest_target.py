"""`pytest --lab-target SPEC` on a user's own pytest-playwright test file (examples/pytest_user:
chat, reload, expect the messages -- nothing in it knows the lab), run as its own pytest
process against the foreign example: with a bug switch and a fault, the lab's rates with
intervals and the diagnosis beside the test's own verdict; against the correct app, none, with
the upper bounds."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.cleanup import lab_down_after
from tests.e2e.investigating import FOREIGN, ROOT, assert_nothing_left, investigate_env


def _user_tests(
    tmp_path: Path, *args: str, tests: str = "examples/pytest_user", spec: Path = FOREIGN, **env_vars: str
) -> tuple[int, str]:
    env, port = investigate_env(tmp_path)
    env.update(env_vars)
    cmd = [sys.executable, "-m", "pytest", tests, "--lab-target", str(spec)]
    cmd += ["--lab-set", f"http.port={port}", "-p", "no:cacheprovider", "-p", "no:xdist", "-q"]
    cmd += ["--output", str(tmp_path / "out"), "--junitxml", str(tmp_path / "junit.xml"), *args]
    with lab_down_after(env):  # the plugin's Redis, Toxiproxy and app of a timed-out pytest
        p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        out = p.stdout + p.stderr
        assert_nothing_left(tmp_path / "run-investigate", out)
    return p.returncode, out


# ack_early under 300 ms of Redis latency, 5 trials (acked_too_fast 5/5, the replay line, the
# trial's record, the junit properties): tests/e2e/test_wheel.py, from the installed wheel.


def test_a_users_test_against_the_correct_app_finds_nothing(tmp_path: Path) -> None:
    code, out = _user_tests(tmp_path, "--lab-trials", "3")
    assert code == 0, out
    assert out.count("no anomaly found in 3 judged trials") == 4, out  # with lab_chat's reload and restart
    assert "under none: 3 judged trials of 3" in out and "under latency:latency_ms=300: 3 judged trials of 3" in out
    assert "acknowledged turns lost: 0/3 [0.00, 0.56]" in out and "[" + "acked_too_fast]" not in out, out


def test_a_users_test_gets_the_stores_record(tmp_path: Path) -> None:
    """write_after_answer on a slow Redis: whether or not the user's test passes, the store's record (Redis
    MONITOR, followed for the session) shows each reply's row landing after its answer --
    stored_after_answer in every trial, with the reply placed from the settled history (the
    answer's body is gone once the test reloads). The app writes db 3, not the lab's URL's db 0:
    the recorder finds its key there at the first test and reads and follows it there (it read
    db 0 before: the key absent, the record empty, nothing drawn)."""
    sets = ["start.env.FOREIGN_BUGS=write_after_answer", "start.env.REDIS_URL=redis://{redis_host}:{redis_port}/3"]
    code, out = _user_tests(
        tmp_path, *(x for v in sets for x in ("--lab-set", v)), "--lab-trials", "3", "-k", "slow_redis"
    )
    # The user's own test is theirs: it fails where its reload read the history before a write
    # landed (the bug, at the machine's timing: 1 of 3 beside two other runs, 2026-12-03).
    assert code in (0, 1) and "chaoslab: the lab's judgement" in out, out
    assert "[stored_after_answer]" in out and "-- 3/3 [" in out, out
    assert "its record:" in out, out
    trials = [json.loads(p.read_text()) for p in (tmp_path / "out" / "lab").glob("*slow_redis*/trial.json")]
    assert len(trials) == 3 and all(t["store"] and t["store_note"] is None for t in trials), trials
    assert all(t["redis_final"]["type"] == "list" and t["redis_final"]["stored_turns"] for t in trials), trials
    # Each reply placed from the settled history where it says whose reply is whose: each
    # question followed by its reply. On a slow Redis the bug's own writes can interleave (turn
    # 1's question stored before turn 0's, or before its reply: CI 2026-12-04 and -05); a reply
    # that may be either of two turns' is then placed for neither (lab.investigate.evidence.rows).
    paired = [t for t in trials if _in_pairs(t)]
    assert paired and all(s["reply"] for t in paired for s in t["sends"]), trials


def _drawn_then_silent(
    tmp_path: Path,
    folder: str,
    spec: str,
    bug: list[str],
    drawn: str,
    beside: set[str],
    ok: tuple[str, ...] = (),
    **env: str,
) -> str:
    """An app's own UI tests (``folder``), 2 trials each, with its ``bug`` (--lab-set values):
    every test judged, ``drawn`` in 2 of 2 trials of one, nothing beyond ``beside``; then without
    the bug (``ok``: pytest's selection of the tests to run), every test judged and silent.
    Returns the bug run's output."""
    tests, target = f"examples/{folder}", ROOT / "examples" / spec
    sets = [x for v in bug for x in ("--lab-set", v)]
    code, out = _user_tests(tmp_path / "bug", *sets, "--lab-trials", "2", tests=tests, spec=target, **env)
    # The user's own tests are theirs: one may fail where the bug shows (a reload before a late write).
    assert code in (0, 1) and "under none: 2 judged trials of 2" in out and "of 2\n  unknown" not in out, out
    assert re.search(rf"\[{drawn}\] .* -- 2/2 \[", out), out
    assert set(re.findall(r"^  \[(\w+)\]", out, re.M)) <= {drawn, *beside}, out
    code, ok_out = _user_tests(tmp_path / "ok", "--lab-trials", "2", *ok, tests=tests, spec=target, **env)
    judged = len(re.findall(r" under \S+: 2 judged trials of 2$", ok_out, re.M))
    assert code == 0 and judged >= 1 and ok_out.count("no anomaly found in 2 judged trials") == judged, ok_out
    return out


def test_a_server_rendered_pages_own_tests_reach_their_refresh_and_its_task_saved_turns_are_found(
    tmp_path: Path,
) -> None:
    """The htmx app's own UI tests, kept in its folder and written in their own style: the page at
    / is the history, rendered by the server, so the reload's document is the read after the
    refresh -- dated by its request (dated by the navigation's commit, which comes after that
    document's answer, every trial was unknown: "the refresh point was not reached"). Its turns
    saved by a task nobody awaits, on db 4: under 300 ms of Redis latency, acked_too_fast in each
    trial (beside it at most stored_after_answer, the same late write, and writes_out_of_order: each
    turn's save a task of its own, nothing ordering them -- true of the app, 1 of 2 trials in a CI
    run); the app without the bug, nothing in any trial."""
    bug = ["start.env.HTMX_BUGS=fire_and_forget", "start.env.REDIS_URL=redis://{redis_host}:{redis_port}/4"]
    beside = {"stored_after_answer", "writes_out_of_order"}
    out = _drawn_then_silent(tmp_path, "htmx_chat/ui_tests", "htmx.toml", bug, "acked_too_fast", beside)
    assert "under latency:latency_ms=300: 2 judged trials of 2" in out, out


def test_a_post_redirect_get_apps_sends_are_answered_by_the_page_they_lead_to(tmp_path: Path) -> None:
    """A form app's UI tests (examples/node/prg_ui_tests, Python tests of an Express app): each
    message a POST answered 303 back to the conversation's page -- the send answered by that
    page's 200 (every send was "HTTP 303", no trial judged), and the page's GET after the
    redirect no refresh. Its failed save logged and the 303 sent anyway: acked_write_refused in
    each trial of the test that refuses writes. Its EXPIRE sent with the first turn only:
    ttl_not_renewed in each trial of the plain one, from the store's record alone (no PTTL read
    comes between a user's turns; before, not judged). Without the bugs, the plain one judged
    and silent."""
    bug = ["start.env.PRG_BUGS=swallow,expire_once"]
    out = _drawn_then_silent(
        tmp_path,
        "node/prg_ui_tests",
        "node-prg.toml",
        bug,
        "acked_write_refused",
        {"ttl_not_renewed"},
        ("-k", "reload"),
    )
    plain = re.search(r"reload\[chromium\] under none: 2 judged .*\n((?:  .*\n)*)", out)
    assert plain and re.search(r"^  \[ttl_not_renewed\] .* -- 2/2 \[", plain[1], re.M), out


def test_a_socket_apps_sends_are_read_from_its_frames(tmp_path: Path) -> None:
    """A Socket.IO app's UI tests (examples/node/sio_ui_tests): each message an event on the
    page's socket -- read from its frames, as lab investigate reads them, and the conversation's
    id from the message's own field (before: no send but the socket's own polling POSTs, and no
    id, so no trial judged). Its reply's store left to a promise nobody awaits, with writes refused
    once the reply has begun: replies_not_stored in each trial (beside it at most
    stored_after_answer: the same unawaited write, landed after its done frame -- as this app's
    lab investigate test allows); the plain test judged, and silent without the bug. The bug run's
    client kept to long-polling (no WebSocket: its packets in XHR bodies and answers; before,
    every trial unknown, "no socketio message frame"), the silent run's upgraded to a WebSocket."""
    bug = ["start.env.APP_BUGS=no_await_store", "start.env.SIO_TRANSPORTS=polling"]
    late = {"stored_after_answer"}
    _drawn_then_silent(
        tmp_path, "node/sio_ui_tests", "node-sio-page.toml", bug, "replies_not_stored", late, ("-k", "reload")
    )


def test_a_websocket_page_behind_a_login_is_read_from_its_frames(tmp_path: Path) -> None:
    """fastapi_chat's page through its own UI tests (examples/fastapi_chat_ui_tests): a login by
    the API, the page's URL moved by replaceState (no refresh), each message a JSON frame on its
    WebSocket, acknowledged by the app's ack frame. Its process's copy of every row, served while
    Redis refused the write: shown_not_stored in each trial; without the bug, every test judged
    and silent -- the refused write told by the app's error frame."""
    login = {"CHAT_USER": "ada", "CHAT_PASSWORD": "pw-" + "0123456789abcdef"}
    bug = ["start.env.FASTAPI_BUGS=memory_fallback"]
    _drawn_then_silent(tmp_path, "fastapi_chat_ui_tests", "fastapi-page.toml", bug, "shown_not_stored", set(), **login)


TABS_TEST = """
from playwright.sync_api import BrowserContext, expect

def test_a_second_tab_shows_the_chat(context: BrowserContext) -> None:
    page = context.new_page()
    page.goto("/")
    expect(page.locator("body[data-loaded='1']")).to_be_attached()
    for i in range(3):
        page.fill("#msg", f"question {i} asked in the first tab")
        page.click("#send")
        expect(page.locator("body[data-idle='1']")).to_be_attached()
    other = context.new_page()
    other.goto("/")
    expect(other.locator("#messages li.msg")).to_have_count(6)
"""

OWN_CONTEXT_TEST = """
from playwright.sync_api import Browser, expect

def test_the_page_loads_in_a_context_of_its_own(browser: Browser, base_url: str) -> None:
    ctx = browser.new_context(base_url=base_url)
    page = ctx.new_page()
    page.goto("/")
    expect(page.locator("body[data-loaded='1']")).to_be_attached()
    ctx.close()
"""


def test_a_test_using_context_is_recorded_and_one_using_only_base_url_finds_the_app_up(tmp_path: Path) -> None:
    """pytest-playwright's ``context`` without ``page``: recorded and judged, its second tab's load
    the refresh (before: the app was never started, the test failed on a refused connection). A
    test making its own context from ``browser`` with ``base_url``: the app is up for it, nothing
    recorded -- and a run of only such tests says that nothing was judged, and why."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_tabs.py").write_text(TABS_TEST)
    (tests / "test_own_context.py").write_text(OWN_CONTEXT_TEST)
    code, out = _user_tests(tmp_path / "both", "--lab-trials", "2", tests=str(tests))
    assert code == 0 and "2 judged trials of 2" in out and "no anomaly found in 2 judged trials" in out, out
    assert not re.search(r"^test_own_context.* judged trials", out, re.M), out
    code, out = _user_tests(tmp_path / "own", tests=str(tests / "test_own_context.py"))
    assert code == 0 and "chaoslab: no test recorded" in out and "page or context fixture" in out, out


def _in_pairs(trial: dict) -> bool:
    rows = [(r["role"], r["text"]) for r in trial["final_rows"]]
    sends = sorted(trial["sends"], key=lambda s: s["turn"])
    return [r[0] for r in rows] == ["user", "assistant"] * len(sends) and [r[1] for r in rows[::2]] == [
        s["text"] for s in sends
    ]


# A user's test of an API that calls a model, through the browser (its fetches are what the lab
# records): the thread id the test makes is the spec's query parameter. Twelve turns: which worker
# takes a turn is the kernel's pick, and a trial shows worker_memory only where a worker answers,
# the other answers after it, and the first answers again -- 6-turn trials were silent in 8 of 24
# (2026-12-05), and a CI run's 4 of them all were; at 12 turns, 0 of 24.
MODEL_USER_TEST = """
import uuid
from playwright.sync_api import Page

def test_the_model_remembers_the_conversation(page: Page) -> None:
    page.goto("/")
    thread = uuid.uuid4().hex
    for i in range(12):
        got = page.evaluate(
            \"\"\"async ([thread, i]) => {
                const r = await fetch(`/v1/chat?thread=${thread}`, {method: 'POST',
                    headers: {'Content-Type': 'application/json'},
                    body: JSON.stringify({message: `question ${i} of a user test`})});
                return r.status;
            }\"\"\",
            [thread, i],
        )
        assert got == 200
"""


def test_a_users_test_of_an_app_that_calls_a_model_gets_the_stand_in_and_its_judgement(tmp_path: Path) -> None:
    """The spec's [model]: the plugin serves the stand-in as lab investigate does, the app's
    OPENAI_BASE_URL points at it, and the calls of each test are judged -- worker_memory on two
    workers tells the model less than the user was acknowledged (model_told_less), while the
    user's own test, which checks only the answers, passes."""
    (tmp_path / "user").mkdir()
    (tmp_path / "user" / "test_model_chat.py").write_text(MODEL_USER_TEST)
    code, out = _user_tests(
        tmp_path,
        *("--lab-set", "start.env.MODEL_APP_BUGS=worker_memory", "--lab-trials", "2"),
        tests=str(tmp_path / "user"),
        spec=ROOT / "examples" / "model-flask.toml",
    )
    assert code == 0, out
    assert (
        "[model_told_less]" in out and "  model: " in out and "told less than the user had been acknowledged, in" in out
    ), out
    record = next(line for line in out.splitlines() if "its record:" in line).split("its record:")[1].strip()
    trial = json.loads(Path(record).read_text())
    assert len(trial["model_calls"]) >= 12 and all(c["protocol"] == "openai_chat" for c in trial["model_calls"]), trial


# A user's test of a streaming API through the browser: each answer's stream read to its end.
STREAM_USER_TEST = """
from playwright.sync_api import Page

ASK = '''async ([url, headers, body]) => {
  const r = await fetch(url, {method: 'POST', headers: {'Content-Type': 'application/json', ...headers},
                              body: JSON.stringify(body)});
  const reader = r.body.getReader(); let s = '';
  for (;;) { const {done, value} = await reader.read(); if (done) break; s += new TextDecoder().decode(value); }
  return r.status;
}'''


def test_three_streamed_answers(page: Page, inject) -> None:
    if LATENCY_MS:
        inject("latency", latency_ms=LATENCY_MS)
    page.goto(PAGE)
    headers = {}
    if CREATE:
        conv = page.evaluate("async (u) => (await (await fetch(u, {method: 'POST'})).json()).conversation.id", CREATE)
        headers = {"X-Conversation": conv}
    for i in range(3):
        assert page.evaluate(ASK, [CHAT, headers, {FIELD: f"a streamed question, number {i}", **EXTRA}]) == 200
    page.reload()
    assert page.evaluate("async ([u, h]) => (await fetch(u, {headers: h})).status", [HISTORY, headers]) == 200
"""


def _stream_test(
    folder: Path, page: str, chat: str, field: str, history: str, create: str = "", latency_ms: int = 0, **extra: object
) -> str:
    folder.mkdir(parents=True)
    names = (page, chat, field, history, create, latency_ms, extra)
    head = "PAGE, CHAT, FIELD, HISTORY, CREATE, LATENCY_MS, EXTRA = " + ", ".join(map(repr, names)) + "\n"
    (folder / "test_stream.py").write_text(head + STREAM_USER_TEST)
    return str(folder)


def test_a_streamed_answer_is_answered_at_its_end_not_its_first_chunk(tmp_path: Path) -> None:
    """A reply stored as its stream ends (FastAPI, the openai SDK's stream, the stand-in model) was
    stored before the answer -- dated by its first chunk, every trial of the correct app was
    stored_after_answer. A reply stored after its [DONE] event and before the stream closes
    (Express, save_before_close; 200 ms of Redis latency, so that its write lands well after the
    event) is drawn, 2/2: the answer is dated by that event as it reached the page, as lab
    investigate dates it (dated by the close, after the write, it was not). Silence without such
    a write: the correct streaming app above."""
    folder = _stream_test(
        tmp_path / "mf", "/healthz", "/api/chat", "prompt", "/api/history", "/api/conversations", stream=True
    )
    code, out = _user_tests(
        tmp_path / "model", "--lab-trials", "2", tests=folder, spec=ROOT / "examples" / "model-fastapi.toml"
    )
    assert code == 0 and "2 judged trials of 2" in out and "no anomaly found in 2 judged trials" in out, out
    folder = _stream_test(tmp_path / "sse", "/api/messages", "/chat", "message", "/api/messages", latency_ms=200)
    sets = ("--lab-set", "start.env.NODE_SSE_BUGS=save_before_close", "--lab-trials", "2")
    code, out = _user_tests(tmp_path / "late", *sets, tests=folder, spec=ROOT / "examples" / "node-sse.toml")
    assert code == 0 and re.search(r"\[stored_after_answer\] .* -- 2/2 \[", out), out


def test_a_users_reload_mid_reply_is_a_cut_and_a_turn_undone_then_is_drawn(tmp_path: Path) -> None:
    """examples/tornado_ui_tests on examples/tornado_progressive.py (an NDJSON reply saved as it
    streams, written to its end after the browser left). The user's reload cut the second reply:
    Chromium dated that body's end at its headers, so the turn counted as acknowledged whole and
    the app's writes after the reload as stored_after_answer 3/3 on the correct app (2026-12-07).
    The request's failure with no end event seen is the cut: nothing drawn; the turn LREMed when
    the browser leaves is cut_turn_removed, though the user's own test passes."""
    spec, tests = ROOT / "examples" / "tornado-progressive.toml", "examples/tornado_ui_tests"
    only = ("--lab-trials", "2", "-k", "middle")
    code, out = _user_tests(tmp_path / "ok", *only, tests=tests, spec=spec)
    assert code == 0 and "no anomaly found in 2 judged trials" in out, out
    code, out = _user_tests(
        tmp_path / "bug", *only, "--lab-set", "start.env.PROGRESSIVE_BUGS=rollback_on_cut", tests=tests, spec=spec
    )
    assert "[cut_turn_removed]" in out and "-- 2/2 [" in out and "[saved_at_stream_end]" not in out, out


def test_a_reply_the_users_page_polls_for_answers_its_send_when_it_shows(tmp_path: Path) -> None:
    """examples/node/relay_ui_tests on relay.js with RELAY_REPLY=poll ([chat] reply_from =
    "history"): the message answered 202, the reply made by the job and polled for by the page.
    Each send is answered by the first of the page's reads that shows its reply (its body kept as
    it came: the reload drops the page's bodies); dated by the 202, the correct app's reply rows
    were stored_after_answer 4/4 (2026-12-07). The spec was refused before."""
    spec = ROOT / "examples" / "node-relay-poll.toml"
    only = ("--lab-trials", "2", "-k", "after_a_reload")
    code, out = _user_tests(tmp_path, *only, tests="examples/node/relay_ui_tests", spec=spec)
    assert code == 0 and out.count("no anomaly found in 2 judged trials") == 1, out
    records = sorted((tmp_path / "out" / "lab").glob("*/trial.json"))
    assert len(records) == 2, out
    for f in records:
        sends = json.loads(f.read_text())["sends"]
        # The job's reply follows its 202 by some 300 ms (12 words, 25 ms apart): answered then.
        assert len(sends) == 3 and all(s["outcome"] == "ok" and s["status"] == 202 for s in sends), sends
        assert all(s["ms"] >= 250 and s["reply"] for s in sends), sends


def test_a_reply_streamed_on_its_own_request_answers_its_send_at_its_end(tmp_path: Path) -> None:
    """examples/node/relay_ui_tests on relay.js ([stream] follow: the message answered 202 {"turn"},
    its reply on an EventSource of that turn; refused by the plugin before). The page's EventSource
    is read beside it (wrapped before its scripts run) and each send answered by its stream's end
    event; the test's reload mid-reply is the cut. The correct app: nothing; its reply_after_end bug
    (the reply stored after the end event) is stored_after_answer on a slow link to Redis."""
    spec, tests = ROOT / "examples" / "node-relay.toml", "examples/node/relay_ui_tests"
    only = ("--lab-trials", "2", "-k", "slow_store or middle")
    code, out = _user_tests(tmp_path / "ok", *only, tests=tests, spec=spec)
    assert code == 0 and out.count("no anomaly found in 2 judged trials") == 2, out
    records = sorted((tmp_path / "ok" / "out" / "lab").glob("*/trial.json"))
    assert len(records) == 4, out
    for f in records:
        sends = json.loads(f.read_text())["sends"]
        whole, last = (sends, None) if "slow_store" in f.parent.name else (sends[:-1], sends[-1])
        assert all(s["outcome"] == "ok" and s["streamed"] and not s["cut"] and s["reply"] for s in whole), sends
        assert last is None or (last["cut"] and last["outcome"] == "ok"), sends
    only = ("--lab-trials", "2", "-k", "slow_store", "--lab-set", "start.env.RELAY_BUGS=reply_after_end")
    code, out = _user_tests(tmp_path / "bug", *only, tests=tests, spec=spec)
    assert "[stored_after_answer]" in out and "-- 2/2 [" in out, out


def test_a_users_write_refused_at_write_refuses_that_one_write(tmp_path: Path) -> None:
    """A user's test that injects write_refused at=write after a first turn (relay_ui_tests'
    store hiccup): the next write refused, then writes served again, as lab investigate's trial
    does -- applied alone it refused every write to the test's end, the job's reply too. With
    message_after_202 (the message stored by a promise nobody awaits), the message is lost and
    its reply shown: acked_write_refused in each trial, and the user's own test fails after its
    reload. The correct app answers 503 at that write: its page says so, nothing drawn."""
    spec, tests = ROOT / "examples" / "node-relay.toml", "examples/node/relay_ui_tests"
    only = ("--lab-trials", "2", "-k", "hiccup")
    bug = ("--lab-set", "start.env.RELAY_BUGS=message_after_202")
    code, out = _user_tests(tmp_path / "bug", *only, *bug, tests=tests, spec=spec)
    assert code == 1 and re.search(r"\[acked_write_refused\] .* -- 2/2 \[", out), out
    assert set(re.findall(r"^  \[(\w+)\]", out, re.M)) == {"acked_write_refused"}, out
    for f in sorted((tmp_path / "bug" / "out" / "lab").glob("*/trial.json")):
        sends = json.loads(f.read_text())["sends"]  # the hiccup's send: acknowledged, its stream whole
        assert [(s["status"], s["outcome"], s["streamed"], s["cut"]) for s in sends] == [(202, "ok", True, None)] * 2
    code, out = _user_tests(tmp_path / "ok", *only, tests=tests, spec=spec)
    assert code == 0 and out.count("no anomaly found in 2 judged trials") == 1, out
