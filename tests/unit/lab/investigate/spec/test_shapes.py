"""[session], [auth] and [transport]: the example specs parse to what they say; every mistake
names the field, the value and what is expected; a login's variable that is not set is named."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from lab.common.errors import UsageError
from lab.investigate.spec import parse as sp
from lab.investigate.browser.identity import local_storage
from lab.investigate.spec.shapes import login_body, page_url_pattern

ROOT = Path(__file__).resolve().parents[5]
REST, WS, NODE = (ROOT / "examples" / f for f in ("fastapi-rest.toml", "fastapi-ws.toml", "node-socketio.toml"))


@pytest.fixture(autouse=True)
def login_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_USER", "ada")
    monkeypatch.setenv("CHAT_PASSWORD", "pw-123456")


def _data(path: Path = REST) -> dict[str, Any]:
    return tomllib.loads(path.read_text())


def test_the_examples_parse_to_their_shapes() -> None:
    rest, ws, node = sp.load(REST), sp.load(WS), sp.load(NODE)
    assert (rest.session.carrier, rest.session.source, rest.session.create_path) == (
        "path",
        "create",
        "/api/conversations",
    )
    assert rest.auth is not None and rest.auth.token_path == "$.token" and rest.auth.header == "Authorization"
    assert rest.auth.secret_envs == ("CHAT_USER", "CHAT_PASSWORD") and rest.transport is None
    assert login_body(rest.auth) == {"username": "ada", "password": "pw-123456"}
    assert ws.transport is not None and ws.transport.kind == "websocket" and ws.transport.ack == "ack"
    assert ws.chat.path == ws.transport.path and ws.streams  # frames stream: a mid_stream experiment
    assert node.transport is not None and node.transport.kind == "socketio" and node.transport.path == "/socket.io/"
    assert (node.session.carrier, node.session.name, node.session.source) == ("header", "X-Conversation-Id", "answer")
    assert node.session.field == "conversation_id" and node.auth is None and node.http.cookie is None


def test_a_spec_without_session_keeps_the_cookie_shape() -> None:
    s = sp.load(ROOT / "examples" / "foreign-app.toml")
    assert (s.session.carrier, s.session.name, s.session.source) == ("cookie", "sid", "cookie")
    assert s.auth is None and s.transport is None


@pytest.mark.parametrize(
    "section, key, value, expect",
    [
        ("session", "in", "body", "session.in = 'body' is not valid; expected one of cookie, header, query, path"),
        ("session", "from", "cookie", "session.from = 'cookie' is not valid; expected cookie exactly when"),
        ("session", "id", "id", "session.id = 'id' is not valid; expected a JSON path"),
        ("auth", "token", "token", "auth.token = 'token' is not valid"),
        ("auth", "header_env", "KEY", "auth = ["),  # login and header_env: one of them
        ("auth", "body", {"password": 5}, "auth.body = {'password': 5} is not valid"),
    ],
)
def test_bad_shape_fields_name_field_value_and_form(section: str, key: str, value: object, expect: str) -> None:
    data = _data()
    data[section][key] = value
    with pytest.raises(UsageError) as e:
        sp.parse(data, REST)
    assert expect in str(e.value) and e.value.exit_code == 2


def test_path_sessions_need_the_placeholder_and_others_refuse_it() -> None:
    data = _data()
    data["chat"]["path"] = "/api/messages"
    with pytest.raises(UsageError, match=r"paths holding \{session\}"):
        sp.parse(data, REST)
    data["session"]["field"] = "conversation_id"  # the body carries it: the chat route need not
    assert sp.parse(data, REST).session.field == "conversation_id"
    data = _data()
    data["session"] = {"in": "header", "name": "X-Id", "from": "answer", "id": "$.id"}
    with pytest.raises(UsageError, match=r"no \{session\} unless"):
        sp.parse(data, REST)
    data["session"] = {"in": "path", "from": "create", "id": "$.id"}
    with pytest.raises(UsageError, match=r"session.create = None .*required with from = 'create'"):
        sp.parse(data, REST)


def test_a_login_variable_not_set_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAT_PASSWORD")
    with pytest.raises(UsageError) as e:
        sp.load(REST)
    assert "CHAT_PASSWORD, which is not set" in str(e.value) and "export CHAT_PASSWORD=" in str(e.value)


def test_transport_needs_its_reply_frames() -> None:
    data = _data(WS)
    del data["transport"]["chunk"]
    with pytest.raises(UsageError, match=r"transport.chunk = None .*required"):
        sp.parse(data, WS)
    data = _data(WS)
    data["transport"]["kind"] = "sse"
    with pytest.raises(UsageError, match="one of websocket, socketio"):
        sp.parse(data, WS)


def test_local_storage_of_an_origin_from_a_storage_state() -> None:
    state = {
        "cookies": [],
        "origins": [
            {"origin": "http://127.0.0.1:1", "localStorage": [{"name": "k", "value": "other"}]},
            {"origin": "http://127.0.0.1:2", "localStorage": [{"name": "k", "value": "v"}]},
        ],
    }
    assert local_storage(state, "http://127.0.0.1:2") == {"k": "v"}
    assert local_storage(state, "http://127.0.0.1:3") == {}


def test_the_app_page_keeps_the_id_in_its_url_or_storage() -> None:
    from lab.investigate.browser.identity import page_url_id

    page = sp.load(ROOT / "examples" / "fastapi-page.toml")
    assert page.session.page_url == "/c/{session}" and page.page is not None and page.auth is not None
    assert page.auth.token_path is None  # the login's cookie
    assert page_url_id("/c/{session}", "/c/ab12") == "ab12"
    assert page_url_id("/c/{session}", "/c/ab12/x") is None and page_url_id("/c/{session}", "/") is None
    data = _data(ROOT / "examples" / "fastapi-page.toml")
    del data["session"]["page_url"]
    with pytest.raises(UsageError, match="where the app's own page keeps the id"):
        sp.parse(data, REST)
    data = _data(NODE)
    data["page"] = {"input": "#m", "message": "li"}
    with pytest.raises(UsageError, match="drive a Socket.IO app through the lab's page"):
        sp.parse(data, NODE)


PRG = ROOT / "examples" / "node-prg.toml"


def test_an_id_from_a_redirect_needs_the_page_it_leads_to_in_the_path() -> None:
    s = sp.load(PRG).session
    assert (s.carrier, s.source, s.create_path, s.page_url) == ("path", "redirect", "/", "/c/{session}")
    for drop, field in (("page_url", "session.page_url"), ("create", "session.create")):
        data = _data(PRG)
        del data["session"][drop]
        with pytest.raises(UsageError, match=field.replace(".", r"\.")):
            sp.parse(data, PRG)


def test_the_page_s_pattern_takes_the_id_from_where_the_redirect_led() -> None:
    pattern = re.compile(page_url_pattern("/c/{session}"))
    assert pattern.match("/c/8f3a9b1c2d3e4f50").group(1) == "8f3a9b1c2d3e4f50"
    assert pattern.match("/c/8f3a/") and not pattern.match("/c/8f3a/say") and not pattern.match("/x/c/1")
    assert not re.match(page_url_pattern(None), "/c/1")


def test_chat_headers_are_a_table_of_strings() -> None:
    data = _data(PRG)
    data["chat"]["headers"] = {"HX-Request": "true"}
    assert sp.parse(data, PRG).chat.headers == {"HX-Request": "true"}
    data["chat"]["headers"] = {"HX-Request": True}
    with pytest.raises(UsageError, match=r"chat\.headers"):
        sp.parse(data, PRG)
