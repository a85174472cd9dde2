"""The target spec: a valid spec parses; every error names the field, the value and the form."""

from __future__ import annotations

from lab.investigate.evidence import rows

import json
import re
import tomllib
from pathlib import Path

import pytest

from lab.common.errors import UsageError
from lab.model.history import Row
from lab.investigate.spec import parse as sp

ROOT = Path(__file__).resolve().parents[5]
EXAMPLE = ROOT / "examples" / "chat-service.toml"


def _data() -> dict:
    return tomllib.loads(EXAMPLE.read_text())


def test_example_parses() -> None:
    s = sp.load(EXAMPLE)
    assert s.name == "chat-service"
    assert s.start.cwd == ROOT
    assert s.http.base_url == "http://127.0.0.1:18190"
    assert s.chat.id_field == "id" and s.chat.reply_path == "$.reply"
    assert s.history.format == "objects" and s.history.order == "oldest_first"
    assert s.redis.key == "chat:{session}" and s.redis.expires is None  # not said: a TTL seen tells
    assert sp.load(EXAMPLE, ["redis.expires=true"]).redis.expires is True
    assert s.stream is not None and s.stream.request == {"stream": True}


def test_a_hash_tag_around_the_session_is_the_keys_own() -> None:
    """Braces around the id (a Redis Cluster hash tag, seen on a Fastify app's
    parley:v1:thr:{ID}:log) are the key's: the pattern holds {session} inside them."""
    from lab.investigate.evidence.store import key_shape

    data = _data()
    data["redis"]["key"] = "parley:v1:thr:{{session}}:log"
    key = sp.parse(data, EXAMPLE).redis.key
    assert key is not None and key.replace("{session}", "SQ5Dsl0x") == "parley:v1:thr:{SQ5Dsl0x}:log"
    assert key_shape(key).fullmatch(b"parley:v1:thr:{a_b-c}:log")
    assert not key_shape(key).fullmatch(b"parley:v1:thr:{a_b-c}:meta")


def test_a_star_stands_for_an_id_the_lab_cannot_see() -> None:
    """`*` where the key's name holds an id the lab does not see (one inside Flask's signed
    cookie): parsed as it is, and its shape is one id between the separators."""
    from lab.investigate.evidence.store import key_shape

    data = _data()
    data["redis"]["key"] = "c:*"
    key = sp.parse(data, EXAMPLE).redis.key
    assert key == "c:*"
    assert key_shape(key).fullmatch(b"c:3f2a9c0e") and not key_shape(key).fullmatch(b"c:3f2a:meta")
    assert key_shape("u:*:thread:*").fullmatch(b"u:42:thread:ab12")


def test_no_stream_section_no_mid_stream_experiment() -> None:
    from lab.investigate.run.experiments import default_plan

    data = _data()
    del data["stream"]
    assert sp.parse(data, EXAMPLE).stream is None
    assert "mid_stream" not in {e.refresh for e in default_plan(3, streams=False)}
    assert "mid_stream" in {e.refresh for e in default_plan(3, streams=True)}


def test_set_overrides_fields_and_reads_toml_values() -> None:
    s = sp.load(EXAMPLE, ["http.port=18191", "start.env.CHAT_DEFECTS=ttl_set_once"])
    assert s.http.port == 18191 and s.http.base_url.endswith(":18191")
    assert s.start.env["CHAT_DEFECTS"] == "ttl_set_once"


@pytest.mark.parametrize(
    "path,value,expect",
    [
        (("http", "port"), "80x", "http.port = '80x'"),
        (("http", "port"), 6000, "ERR_UNSAFE_PORT"),
        (("history", "format"), "xml", "history.format = 'xml'"),
        (("history", "order"), "random", "history.order = 'random'"),
        (("history", "items"), "messages", "history.items = 'messages'"),
        (("chat", "path"), "chat", "chat.path = 'chat'"),
        (("start", "command"), [], "start.command = []"),
        (("start", "command"), ["{redis}"], "placeholders among"),
        (("start", "cwd"), "no/such/dir", "start.cwd = 'no/such/dir'"),
        (("redis", "key"), "chat:session", "{session}"),
        (("redis", "key"), "chat:{session}:{session}", "containing {session} once"),
        (("redis", "key"), "chat: {session}", "redis.key = 'chat: {session}'"),
        (("stream", "request"), "stream", "stream.request = 'stream'"),
        (("redis", "expires"), "yes", "redis.expires = 'yes'"),
        (("chat", "body"), "xml", "json or form"),
        (("http", "csrf_cookie"), "csrf token", "the CSRF token's cookie name"),
        (("http", "csrf_meta"), "<meta>", "the <meta name> holding the token"),
    ],
    ids=lambda v: str(v),
)
def test_bad_field_names_field_value_and_form(path: tuple[str, str], value: object, expect: str) -> None:
    data = _data()
    data[path[0]][path[1]] = value
    with pytest.raises(UsageError) as e:
        sp.parse(data, EXAMPLE)
    assert expect in str(e.value)
    assert "expected" in str(e.value)
    assert e.value.exit_code == 2


def test_missing_required_field_and_unknown_section() -> None:
    data = _data()
    del data["http"]["cookie"]
    with pytest.raises(UsageError, match=r"http.cookie = None .*required"):
        sp.parse(data, EXAMPLE)
    data = _data()
    data["extra"] = {}
    with pytest.raises(UsageError, match="one of the sections"):
        sp.parse(data, EXAMPLE)


def test_not_toml_and_missing_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("name = \n")
    with pytest.raises(UsageError, match="not valid TOML"):
        sp.load(bad)
    with pytest.raises(UsageError, match="cannot read target spec"):
        sp.load(tmp_path / "none.toml")


def _hist(**kw: str) -> sp.History:
    base = dict(
        path="/h",
        format="objects",
        items="$",
        role_field="role",
        content_field="content",
        separator=":",
        order="oldest_first",
        user_role="user",
        assistant_role="assistant",
    )
    base.update(kw)
    return sp.History(**base)  # type: ignore[arg-type]


def test_history_strings_newest_first_under_a_path() -> None:
    h = _hist(format="strings", items="$.data.messages", order="newest_first")
    body = '{"data": {"messages": ["assistant:hi there", "user: hello: me"]}}'
    assert rows.parse_history(h, body) == [("user", " hello: me"), ("assistant", "hi there")]


def test_history_of_role_and_text_arrays_read_by_their_places() -> None:
    h = _hist(items="$.log", role_field="0", content_field="1")
    body = '{"log": [["user", "hello"], ["assistant", "hi there"]]}'
    assert rows.parse_history(h, body) == [("user", "hello"), ("assistant", "hi there")]
    gradio = _hist(format="pairs", content_field="0", reply_field="1", user_role="user", assistant_role="assistant")
    assert rows.parse_history(gradio, '[["hello", "hi there"], ["again", null]]') == [
        ("user", "hello"),
        ("assistant", "hi there"),
        ("user", "again"),
    ]


def test_history_of_pairs_a_turn_per_item_its_reply_after_its_question() -> None:
    """{"prompt", "reply"} per turn, the reply null until stored; newest first reverses the turns,
    never a turn's own two rows. An id names the question's row, and the reply's its own."""
    body = json.dumps(
        {"log": [{"id": "t2", "q": "second", "a": None}, {"id": "t1", "q": "first", "a": "one"}, {"q": "x", "a": ""}]}
    )
    h = _hist(format="pairs", items="$.log", content_field="q", reply_field="a", order="newest_first", id_field="id")
    assert rows.parse_rows(h, body) == [
        Row("", "user", "x"),
        Row("t1", "user", "first"),
        Row("t1/reply", "assistant", "one"),
        Row("t2", "user", "second"),
    ]
    with pytest.raises(ValueError, match="expected an object with 'q'"):
        rows.parse_history(h, '{"log": [{"prompt": "x"}]}')
    data = _data()
    data["history"] = {"path": "/h", "format": "pairs", "reply_field": "a"}
    assert sp.parse(data, EXAMPLE).history.reply_field == "a"


def test_a_content_of_parts_reads_as_its_text_parts_joined() -> None:
    # The Vercel AI SDK's UIMessage parts; OpenAI's and Anthropic's content blocks.
    body = json.dumps(
        [
            {"role": "user", "parts": [{"type": "text", "text": "hi "}, {"type": "text", "text": "there"}]},
            {
                "role": "assistant",
                "parts": [{"type": "reasoning", "text": "hmm"}, {"type": "step-start"}, {"text": "ok"}],
            },
            {"role": "assistant", "parts": [{"type": "output_text", "text": "yes"}, {"type": "image", "url": "u"}]},
        ]
    )
    assert rows.parse_history(_hist(content_field="parts"), body) == [
        ("user", "hi there"),
        ("assistant", "ok"),
        ("assistant", "yes"),
    ]


def test_history_outside_the_spec_says_what_was_expected() -> None:
    with pytest.raises(ValueError, match="not JSON"):
        rows.parse_history(_hist(), "<html><h1>500 Internal Server Error</h1></html>")
    with pytest.raises(ValueError, match="expected an object with 'role' and 'content'"):
        rows.parse_history(_hist(), '[{"who": "user"}]')
    with pytest.raises(ValueError, match="no field 'messages'"):
        rows.parse_history(_hist(items="$.messages"), "[]")


def test_a_reply_streamed_on_its_own_request_names_its_path_and_the_answers_id() -> None:
    """[stream] follow: the reply's stream, {turn} from the chat's answer at follow_id; a path
    without {turn}, an id that is no JSON path, or [page] beside it (the app's own page is read
    by its chat request's answer) is refused, naming the field and what it takes."""
    relay = tomllib.loads((ROOT / "examples" / "node-relay.toml").read_text())
    s = sp.parse(relay, EXAMPLE)
    assert s.stream is not None and (s.stream.follow, s.stream.follow_id) == ("/api/turns/{turn}/events", "$.turn")
    for key, value, says in (
        ("follow", "/api/turns/events", "holding {turn}"),
        ("follow_id", "turn", "a JSON path like $.turn"),
    ):
        bad = json.loads(json.dumps(relay))
        bad["stream"][key] = value
        with pytest.raises(UsageError, match=f"stream.{key}.*{re.escape(says)}"):
            sp.parse(bad, EXAMPLE)
    paged = json.loads(json.dumps(relay)) | {"page": {"input": "#prompt", "message": ".turn"}}
    with pytest.raises(UsageError, match=r"stream\.follow.*no \[page\] beside it"):
        sp.parse(paged, EXAMPLE)


def test_a_reply_the_page_polls_for_is_said_in_chat_and_only_where_a_page_polls_over_http() -> None:
    polled = tomllib.loads((ROOT / "examples" / "node-relay-poll.toml").read_text())
    assert sp.parse(polled, EXAMPLE).chat.reply_from == "history"
    # The app's own page polling by itself ([page]): what it renders is read.
    paged = sp.parse(tomllib.loads((ROOT / "examples" / "node-relay-poll-page.toml").read_text()), EXAMPLE)
    assert paged.chat.reply_from == "history" and paged.page is not None
    assert sp.parse(_data(), EXAMPLE).chat.reply_from == "answer"
    for extra in ({"chat": {**polled["chat"], "reply_from": "later"}}, {"stream": {"request": {}}}):
        with pytest.raises(UsageError, match=r"chat\.reply_from.*(answer|history)"):
            sp.parse(polled | extra, EXAMPLE)
