"""`lab init` against the examples, each started for real (the lab's Redis through Toxiproxy):
the drafted spec passes lab investigate's contract check unedited (the built-in service, the
foreign app, the FastAPI app behind its login), or the run names exactly what it could not
infer (the Socket.IO app's event names, its session and history) and exits 3."""

from __future__ import annotations

import os
import secrets
import tomllib
from pathlib import Path

import pytest

from lab.common.config import PORT_ENV
from tests.e2e.investigating import ROOT, assert_nothing_left
from tests.cleanup import lab_down_after
from tests.helpers import free_ports, run_lab

GUNICORN = "{python} -m gunicorn --config services/chat/gunicorn.conf.py --bind 127.0.0.1:{port} services.chat.wsgi:app"


def _init(
    tmp_path: Path, start: str, *extra: str, env: dict[str, str] | None = None, stdin: str = ""
) -> tuple[int, str, str]:
    ports = free_ports(len(PORT_ENV) + 1)
    e = dict(os.environ) | {name: str(p) for name, p in zip(PORT_ENV.values(), ports)} | (env or {})
    e["LAB_RUN_DIR"] = str(tmp_path / "run")
    out = tmp_path / "drafted.toml"
    with lab_down_after(e):  # `lab init` starts the app, Redis and Toxiproxy: a timed-out one leaves them
        p = run_lab(
            e,
            "init",
            "--start",
            start,
            "--port",
            str(ports[-1]),
            "--cwd",
            str(ROOT),
            "--out",
            str(out),
            *extra,
            timeout=300,
            stdin=stdin,
        )
        assert_nothing_left(tmp_path / "run-investigate", p.stdout + p.stderr)
    return p.returncode, p.stdout + p.stderr, out.read_text() if out.exists() else ""


@pytest.mark.parametrize(
    "start, extra, expect",
    [
        ("{python} examples/foreign_app.py", (), {"http": "cookie", "history": "separator"}),
        (
            GUNICORN,
            ("--env", "CHAT_REDIS_URL={redis_url}", "--env", "PYTHONPATH={cwd}"),
            {"http": "ready_path", "stream": "request"},
        ),
        ("node examples/node/sse.js", (), {"http": "cookie", "stream": "request"}),  # an SSE answer: [stream] {}
        # No OpenAPI, no cookie: a create call found by its collection, the id in the URL.
        ("node examples/node/rest.js", (), {"session": "create", "chat": "path"}),
        # Go: the create call's id inside an object ($.thread.id), the history the thread itself.
        ("examples/go/chatd", (), {"session": "create", "history": "items"}),
        # Routes called through the page's own fetch helper (api(method, path, payload)); a model SDK.
        (
            "{python} -m gunicorn --chdir examples --workers 2 --threads 4 --bind 127.0.0.1:{port} streams_app:app",
            ("--env", "ANTHROPIC_BASE_URL=x"),
            {"session": "create", "chat": "reply_path", "model": "protocols"},
        ),
        # A create call whose token the page sends back in a header of its own (X-Chat-Token).
        ("examples/go-sse/chatd", ("--env", "OPENAI_BASE_URL=x"), {"session": "name", "stream": "end"}),
        # A plain WebSocket: [transport] from the page's script and the frames that answered.
        ("node examples/node/live.js", ("--env", "OPENAI_BASE_URL=x"), {"transport": "chunk", "session": "value"}),
        # A history of [role, text] arrays: their places are the fields ("0", "1"); no Redis key
        # named after the session as the lab sees it (the id is inside Flask's signed cookie): the
        # one key holding two messages, its id as `*`.
        (
            "{python} -m gunicorn --chdir examples --workers 1 --threads 8 --bind 127.0.0.1:{port} flask_async_app:app",
            ("--env", "OPENAI_BASE_URL=x"),
            {"history": "role_field", "http": "cookie", "redis": "c:*"},
        ),
        # The id in a streamed answer's first event, sent back in the query of a URL the page builds
        # with a conditional; the order told by two messages (no reply text to place).
        (
            "{python} -m gunicorn --chdir examples --workers 2 --threads 4 --bind 127.0.0.1:{port} sse_app:app",
            ("--env", "OPENAI_BASE_URL=x"),
            {"session": "name", "stream": "end", "history": "order"},
        ),
        # A cookie set only by the app's page (GET /), a WebSocket the handshake's cookie opens.
        ("examples/go-ws/chatd", ("--env", "OPENAI_BASE_URL=x"), {"transport": "end_text", "http": "cookie"}),
        # A message posted as a form (q=...): refused as JSON, taken as a form.
        ("{python} examples/aiohttp_app.py", (), {"chat": "body", "history": "order"}),
        # Socket.IO: the event the page emits, the events that answered a message emitted so.
        ("node examples/node/sio_page.js", (), {"transport": "end_text", "session": "field"}),
        # The page's minted id in the message's body; the message answered 202 {"turn"}, its reply
        # streamed on an EventSource of that turn ([stream] follow, read to its end to be stored).
        ("node examples/node/relay.js", (), {"session": "field", "stream": "follow"}),
        # The same app's reply made by a job and polled for by its page: the answer holds none of it.
        ("node examples/node/relay.js", ("--env", "RELAY_REPLY=poll"), {"session": "field", "chat": "reply_from"}),
        # Tornado: an NDJSON stream (its end a JSON line), a url-safe token (`-`, `_`) in the path.
        ("{python} examples/tornado_progressive.py", (), {"session": "create", "stream": "end"}),
        # Django's CSRF check (the csrftoken cookie echoed in X-CSRFToken), its id in a signed cookie.
        (
            "{python} -m gunicorn --chdir examples/django_chat chatproj.wsgi -w 2 -b 127.0.0.1:{port}",
            (),
            {"http": "csrf_cookie", "redis": "chat:conv:*:msgs"},
        ),
        # A server-rendered history (no JSON route): the page's messages by a selector, the
        # speaker a class token; the message posted by the page's own (htmx) form.
        ("{python} examples/htmx_chat/main.py", (), {"history": "role_field", "chat": "body"}),
        # Post/redirect/get with no script: the id from where / led (any other is 404), the page the history.
        ("node examples/node/prg.js", (), {"session": "page_url", "history": "items"}),
        # A CSRF token in the form's hidden input; the speaker a data attribute beside a label and
        # a time (the text a part of the element), newest first; the id inside a signed cookie.
        (
            "{python} -m gunicorn -w 2 -b 127.0.0.1:{port} --chdir examples/flask_csrf app:app",
            (),
            {"chat": "hidden_from", "history": "content_field", "redis": "hist:*"},
        ),
        # A CSRF token in a <meta> tag the page's script sends in X-CSRFToken (Flask-WTF: 400
        # without it); the id in Flask's signed cookie.
        (
            "{python} -m gunicorn --chdir examples/flask_meta app:app -b 127.0.0.1:{port} --workers 1 --threads 4",
            (),
            {"http": "csrf_meta", "redis": "tutor:*:log"},
        ),
        # The same in Express (csrf-sync: 403 without x-csrf-token), its sessions in the same Redis.
        ("node examples/node/quill.js", (), {"http": "csrf_meta", "redis": "quill:conversation:*:turns"}),
        # A "New chat" button's POST redirecting to the page (ids checked); the header the page's
        # script sends with a message (the turn's HTML answered to it, a redirect without).
        ("examples/go-tmpl/chatd", (), {"session": "create_method", "chat": "headers"}),
    ],
    ids=[
        "foreign",
        "chat-service",
        "node-sse",
        "node-rest",
        "go",
        "flask-streams",
        "go-sse",
        "node-live",
        "flask-async",
        "flask-sse",
        "go-ws",
        "aiohttp-form",
        "node-sio-page",
        "node-relay",
        "node-relay-poll",
        "tornado",
        "django",
        "htmx",
        "node-prg",
        "flask-csrf",
        "flask-meta",
        "node-quill",
        "go-tmpl",
    ],
)
def test_init_drafts_a_spec_that_passes_the_contract_check(
    tmp_path: Path, start: str, extra: tuple[str, ...], expect: dict[str, str]
) -> None:
    code, out, text = _init(tmp_path, start, *extra)
    assert code == 0, out
    assert "contract ok" in out and "passes the contract check" in out, out
    spec = tomllib.loads(text)
    if "redis" in expect:  # no key named after the session: the one holding both messages, found
        assert spec["redis"]["key"] == expect["redis"] and "[redis] key: not inferred" not in out, text
    else:
        assert "{session}" in spec["redis"]["key"], text
    assert all(k in spec[section] for section, k in expect.items() if section != "redis"), text
    assert "COULD NOT INFER" not in text


def test_init_finds_the_login_and_the_ids_in_the_url_in_openapi(tmp_path: Path) -> None:
    password = "pw-" + secrets.token_hex(12)
    env = {"CHAT_USER": "ada", "CHAT_PASSWORD": password, "LAB_LOGIN_USERNAME": "ada", "LAB_LOGIN_PASSWORD": password}
    code, out, text = _init(tmp_path, "{python} examples/fastapi_chat.py", env=env)
    assert code == 0, out
    spec = tomllib.loads(text)
    assert spec["session"] == {"in": "path", "from": "create", "create": "/api/conversations", "id": "$.id"}, text
    assert spec["auth"]["body"]["password"] == "{env:LAB_LOGIN_PASSWORD}" and spec["redis"]["key"] == "conv:{session}"
    assert password not in out and password not in text


def test_init_without_the_login_values_names_them(tmp_path: Path) -> None:
    env = {"CHAT_USER": "ada", "CHAT_PASSWORD": "pw-" + secrets.token_hex(8)}
    code, out, text = _init(tmp_path, "{python} examples/fastapi_chat.py", env=env)
    assert code == 3, out
    assert "auth.body: the login's values: set LAB_LOGIN_USERNAME and LAB_LOGIN_PASSWORD" in out, out


NODE_UNKNOWN = {  # what lab init cannot see from outside a Socket.IO app, and the answers
    "transport.event": "chat",
    "transport.chunk": "token",
    "transport.end": "done",
    "chat.message_field": "text",
    "history.path": "/api/history",
    "session.in": "header",
    "session.name": "X-Conversation-Id",
    "session.from": "answer",
    "session.id": "$.conversation_id",
    "session.field": "conversation_id",
}


def test_init_of_a_socketio_app_names_exactly_what_it_could_not_infer(tmp_path: Path) -> None:
    code, out, text = _init(tmp_path, "node examples/node/server.js", "--no-ask")
    assert code == 3, out
    named = [line.split(":")[0].strip(" -") for line in out.splitlines() if line.startswith("  - ")]
    assert named == list(NODE_UNKNOWN), out
    assert 'kind = "socketio"' in text and len([x for x in text.splitlines() if "= ?   # COULD NOT INFER" in x]) == 10
    assert 'items = "$.messages"' in text  # the list GET /api/history answers, unconfirmed


def test_init_asks_what_it_could_not_infer_and_the_answers_pass_the_check(tmp_path: Path) -> None:
    answers = "".join(v + "\n" for v in NODE_UNKNOWN.values())
    code, out, text = _init(tmp_path, "node examples/node/server.js", "--ask", stdin=answers)
    assert code == 0, out
    assert "contract ok" in out and "COULD NOT INFER" not in text, out
    spec = tomllib.loads(text)
    assert spec["transport"] == {"kind": "socketio", "event": "chat", "chunk": "token", "end": "done"}, text


def test_init_finds_an_id_the_first_answer_gives_and_a_role_named_the_apps_way(tmp_path: Path) -> None:
    """examples/starlette_stream_app.py: no OpenAPI, no cookie, no create call -- the first
    answer's conversation_id, read back as the history's query parameter and sent again in the
    body; history items of {"who": "human" | "ai", "text": ...}; a Stream under
    thread:<id>:events. The draft is examples/starlette-stream.toml's, and passes the contract
    check (before, 2026-12-05: exit 3, the history and the session not inferred)."""
    code, out, text = _init(tmp_path, "{python} examples/starlette_stream_app.py")
    assert code == 0, out
    assert "contract ok" in out and "COULD NOT INFER" not in text, out
    spec, want = tomllib.loads(text), tomllib.loads((ROOT / "examples" / "starlette-stream.toml").read_text())
    for section in ("session", "chat", "history", "redis"):
        assert spec[section] == want[section], (section, text)


def test_init_drafts_an_app_keeping_each_message_under_a_key_of_its_own(tmp_path: Path) -> None:
    """examples/keyed_messages_app.py: FastAPI whose handlers read the JSON themselves (OpenAPI lists
    the routes, no body's field), the message's text in "body", the cookie set by the first POST,
    each message a Hash under a key of its own and the conversation a Sorted Set of their ids.
    The routes from OpenAPI's list, the field by trying it; no [redis] key, and why."""
    code, out, text = _init(tmp_path, "{python} examples/keyed_messages_app.py")
    assert code == 0 and "passes the contract check" in out, out
    spec = tomllib.loads(text)
    assert spec["chat"]["path"] == "/v1/messages" and spec["chat"]["message_field"] == "body", text
    assert spec["history"]["order"] == "newest_first" and spec["http"]["cookie"] == "uid", text
    assert "redis" not in spec and "[redis] key: not inferred" in out and "not named after the session" in out, out
