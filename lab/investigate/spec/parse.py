"""The target spec: a TOML file describing a foreign chat backend's contract, parsed into frozen
dataclasses. Every error names the field, the value and the expected form (UsageError, exit 2).

Placeholders, filled when the target starts: {redis_host} {redis_port} {redis_url} (always the
Toxiproxy address in front of the lab's Redis), {port} (http.port), {python} (this Python),
{spec_dir} (the folder of the spec file), {cwd} (start.cwd, resolved), {model_url} (the stand-in
model through Toxiproxy, where the spec has [model]).
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

from lab.common.errors import UsageError
from lab.common import html_select
from lab.investigate.spec import model as spec_model, shapes
from lab.investigate.spec.fields import JSON_PATH, URL_PATH, bad, headers, number, table, text
from lab.investigate.spec.schema import Chat, History, Http, PageSpec, RedisKey, Spec, Start

HISTORY_FORMATS = ("objects", "strings", "pairs", "html")
ORDERS = ("oldest_first", "newest_first")
PLACEHOLDERS = ("redis_host", "redis_port", "redis_url", "port", "python", "spec_dir", "cwd", "model_url")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
# redis.key: {session} once (one conversation, one key). Other braces are the key's own: a Redis
# Cluster hash tag around the id is common (thr:{{session}}:log is the key thr:{ID}:log).
# Or, where the key's name holds no id the lab sees (one inside a signed cookie, a hash of it, a
# login's user id), `*` for each id: the key of that shape holding the trial's messages.
KEY_PATTERN = re.compile(r"^(?:(?:(?!\{session\})\S)*\{session\}(?:(?!\{session\})\S)*|(?!.*\{session\})\S*\*\S*)$")


def _check_placeholders(field_name: str, text: str) -> None:
    for name in _PLACEHOLDER.findall(text):
        if name not in PLACEHOLDERS:
            raise bad(field_name, text, f"placeholders among {{{'}, {'.join(PLACEHOLDERS)}}}")


def apply_overrides(data: dict[str, Any], sets: list[str]) -> dict[str, Any]:
    """`--set a.b.c=VALUE`: VALUE is read as TOML (1, true, "x") and else as a plain string."""
    for item in sets:
        key, eq, raw = item.partition("=")
        parts = key.strip().split(".")
        if not eq or not all(parts):
            raise UsageError(f"--set {item!r} is not KEY=VALUE", "e.g. --set start.env.CHAT_DEFECTS=ttl_set_once")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        node = data
        for p in parts[:-1]:
            nxt = node.setdefault(p, {})
            if not isinstance(nxt, dict):
                raise UsageError(f"--set {item!r}: {p} is not a table in the spec")
            node = nxt
        node[parts[-1]] = value
    return data


def load(path: Path, sets: list[str] | None = None) -> Spec:
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(
            f"cannot read target spec {path}: {exc.strerror}",
            "give a TOML file, e.g. --target examples/chat-service.toml",
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"target spec {path} is not valid TOML: {exc}") from None
    return parse(apply_overrides(data, sets or []), path)


def parse(data: dict[str, Any], path: Path) -> Spec:
    known = {"name", "start", "http", "chat", "history", "redis", "stream", "page", "source", "session", "auth"}
    known |= {"transport", "model"}
    extra = sorted(set(data) - known)
    if extra:
        raise bad(extra[0], data[extra[0]], f"one of the sections {', '.join(sorted(known))}")
    name = text(data, "", "name", default=path.stem, expected="a string")
    start = _start(table(data, "start"), path.resolve().parent)
    r = table(data, "redis", required=False)
    key = text(
        r,
        "redis",
        "key",
        pattern=KEY_PATTERN,
        expected="a key pattern containing {session} once, e.g. chat:{session} (braces of a hash tag "
        "around it are the key's own: chat:{{session}}), or `*` for an id the lab cannot see, e.g. chat:*",
    )
    url_env = text(
        r,
        "redis",
        "url_env",
        pattern=re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$"),
        expected="the name of the environment variable holding the app's Redis URL, e.g. APP_REDIS_URL",
    )
    if url_env is not None and not start.external:
        raise bad(
            "redis.url_env",
            url_env,
            "only with [start] external = true (a compose app's own REDIS_URL is read from its file)",
        )
    expires = r.get("expires")
    if expires is not None and not isinstance(expires, bool):
        raise bad(
            "redis.expires",
            expires,
            "true (conversations are meant to expire: a key with no TTL is a defect) or false (kept on purpose)",
        )
    transport = shapes.transport(data)
    http = _http(table(data, "http"))
    # Over a transport the message goes out as a frame: [chat] names only its field and timeout.
    chat = _chat(table(data, "chat", required=transport is None), transport.path if transport else None)
    history = _history(table(data, "history"))
    _polled_fits(data, chat)
    paths = (history.path,) + ((chat.path,) if transport is None else (transport.path,))
    return Spec(
        name,
        path,
        start,
        http,
        chat,
        history,
        RedisKey(key, url_env, expires),
        shapes.stream(data),
        _page(data),
        source=_source(data, start.cwd),
        session=shapes.session(data, http.cookie, paths, page="page" in data),
        auth=shapes.auth(data),
        transport=transport,
        model=spec_model.model(data),
    )


def _start(st: dict[str, Any], spec_dir: Path) -> Start:
    if "compose" in st:
        from lab.investigate.spec.compose import compose_start

        app = compose_start(st, spec_dir)
        env = _env(st)
        return Start((), Path(app.file).parent, env, number(st, "start", "ready_timeout_s", 600, 1, 1800), compose=app)
    external = st.get("external", False)
    if not isinstance(external, bool):
        raise bad("start.external", external, "true (the app already runs: lab proxy up) or false")
    if external:
        if "command" in st:
            raise bad("start.command", st["command"], "no command with external = true (the lab starts nothing)")
        return Start((), spec_dir, {}, number(st, "start", "ready_timeout_s", 30, 1, 600), external=True)
    cmd = st.get("command")
    if isinstance(cmd, str) and cmd.strip():
        command = tuple(shlex.split(cmd))
    elif isinstance(cmd, list) and cmd and all(isinstance(c, str) for c in cmd):
        command = tuple(cmd)
    else:
        raise bad("start.command", cmd, "a non-empty string or list of strings (argv)")
    for arg in command:
        _check_placeholders("start.command", arg)
    cwd = spec_dir / text(st, "start", "cwd", default=".", expected="a folder, relative to the spec file")
    if not cwd.is_dir():
        raise bad("start.cwd", st.get("cwd"), f"an existing folder (resolved to {cwd})")
    env = _env(st)
    for k, v in env.items():
        _check_placeholders(f"start.env.{k}", v)
    return Start(command, cwd.resolve(), env, number(st, "start", "ready_timeout_s", 30, 1, 600))


def _env(st: dict[str, Any]) -> dict[str, str]:
    env = st.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, (str, int)) for k, v in env.items()):
        raise bad("start.env", env, 'a table of NAME = "value" strings')
    return {k: str(v) for k, v in env.items()}


def _http(h: dict[str, Any]) -> Http:
    port = h.get("port")
    if isinstance(port, bool) or not isinstance(port, int) or not 1024 <= port <= 65535:
        raise bad("http.port", port, "the port the target listens on, an integer in [1024, 65535]")
    from lab.common.config import CHROMIUM_UNSAFE_PORTS

    if port in CHROMIUM_UNSAFE_PORTS:
        raise bad("http.port", port, "a port Chromium accepts (this one is ERR_UNSAFE_PORT)")
    base = text(
        h,
        "http",
        "base_url",
        default="http://127.0.0.1:{port}",
        pattern=re.compile(r"^https?://[^/\s]+/?$"),
        expected="http://HOST:PORT (no path)",
    )
    ready_path = text(h, "http", "ready_path", pattern=URL_PATH, expected="a path starting with /")
    cookie = text(
        h, "http", "cookie", pattern=re.compile(r"^[!#-+\-.0-9A-Z^-z|~]+$"), expected="the session cookie's name"
    )
    name = re.compile(r"^[!#-+\-.0-9A-Z^-z|~]+$")
    csrf_cookie = text(h, "http", "csrf_cookie", pattern=name, expected="the CSRF token's cookie name, e.g. csrftoken")
    csrf_header = text(
        h,
        "http",
        "csrf_header",
        default="X-CSRFToken",
        pattern=name,
        expected="the header it goes in, e.g. X-CSRFToken",
    )
    csrf_meta = text(
        h, "http", "csrf_meta", pattern=name, expected="the <meta name> holding the token, e.g. csrf-token"
    )
    return Http(str(base).replace("{port}", str(port)), port, ready_path, cookie, csrf_cookie, csrf_header, csrf_meta)


def _polled_fits(data: dict[str, Any], chat: Chat) -> None:
    """A reply polled for is read over HTTP: a stream or a socket carries its reply itself. (The
    app's own page, [page], polls by itself: the lab reads what it renders.)"""
    if chat.reply_from == "history" and {"transport", "stream"} & set(data):
        raise bad(
            "chat.reply_from",
            chat.reply_from,
            "answer where the reply streams ([stream], [transport]); history only where the page polls over HTTP",
        )


def _chat(c: dict[str, Any], transport_path: str | None = None) -> Chat:
    return Chat(
        text(
            c,
            "chat",
            "path",
            default=transport_path,
            required=transport_path is None,
            pattern=URL_PATH,
            expected="a path starting with /",
        ),
        text(c, "chat", "message_field", default="message", expected="a field name"),
        text(c, "chat", "id_field", expected="a JSON field name (omit it if the API has no message id)"),
        text(c, "chat", "reply_path", pattern=JSON_PATH, expected="a JSON path like $.reply"),
        number(c, "chat", "timeout_s", 30, 1, 300),
        text(c, "chat", "body", default="json", pattern=re.compile(r"^(json|form)$"), expected="json or form"),
        text(c, "chat", "hidden_from", pattern=URL_PATH, expected="the path of the page whose form posts the message"),
        headers(c, "chat", "headers"),
        text(
            c,
            "chat",
            "reply_from",
            default="answer",
            pattern=re.compile(r"^(answer|history)$"),
            expected="answer (the chat's answer carries the reply) or history (the page polls the history for it)",
        ),
    )


def _history(hi: dict[str, Any]) -> History:
    fmt = text(hi, "history", "format", default="objects", expected=f"one of {', '.join(HISTORY_FORMATS)}")
    if fmt not in HISTORY_FORMATS:
        raise bad("history.format", fmt, f"one of {', '.join(HISTORY_FORMATS)}")
    order = text(hi, "history", "order", default="oldest_first", expected=f"one of {', '.join(ORDERS)}")
    if order not in ORDERS:
        raise bad("history.order", order, f"one of {', '.join(ORDERS)}")
    sep = text(hi, "history", "separator", default=":", expected="a non-empty string")
    if not sep:
        raise bad("history.separator", sep, 'a non-empty string, e.g. ":"')
    page = fmt == "html"  # a server-rendered page: selectors and attributes, not JSON paths and fields
    history = History(
        text(hi, "history", "path", required=True, pattern=URL_PATH, expected="a path starting with /"),
        fmt,
        _selector(hi, "items", required=True)
        if page
        else text(hi, "history", "items", default="$", pattern=JSON_PATH, expected="a JSON path like $ or $.messages"),
        text(hi, "history", "role_field", default="class" if page else "role", expected="a field name"),
        _selector(hi, "content_field") if page else text(hi, "history", "content_field", default="content"),
        sep,
        order,
        text(hi, "history", "user_role", default="user", expected="a string"),
        text(hi, "history", "assistant_role", default="assistant", expected="a string"),
        text(hi, "history", "id_field", expected="a JSON field name (omit it if the rows carry no id)"),
        text(hi, "history", "reply_field", default="reply", expected="a JSON field name"),
    )
    if history.id_field and fmt in ("strings", "html"):
        raise bad("history.id_field", history.id_field, f'no id_field with format = "{fmt}" (ids need objects)')
    return history


def _selector(hi: dict[str, Any], key: str, required: bool = False) -> str:
    """A CSS selector of the subset lab.common.html_select reads ("" where it may be left out)."""
    expected = "a CSS selector like .message or #log > li (element, .class, #id, [attr], [attr=value], >)"
    value = text(hi, "history", key, default="", required=required, expected=expected)
    if value:
        try:
            html_select.selector(value)
        except ValueError as exc:
            raise bad(f"history.{key}", value, f"{expected}: {exc}") from None
    return str(value)


def _page(data: dict[str, Any]) -> PageSpec | None:
    if "page" not in data:
        return None
    pg = table(data, "page")
    sel = "a CSS selector"
    order = text(pg, "page", "order", default="oldest_first", expected=f"one of {', '.join(ORDERS)}")
    if order not in ORDERS:
        raise bad("page.order", order, f"one of {', '.join(ORDERS)}")
    page = PageSpec(
        text(pg, "page", "path", default="/", pattern=URL_PATH, expected="a path starting with /"),
        text(pg, "page", "input", required=True, expected=sel + " for the message box"),
        text(pg, "page", "send", expected=sel + " for the send button (omit: Enter sends)"),
        text(pg, "page", "message", required=True, expected=sel + " matching each rendered message"),
        text(
            pg,
            "page",
            "role_attribute",
            default="data-role",
            expected="the attribute of a message element holding its role",
        ),
        order,
        text(pg, "page", "ready", expected=sel + " present once the history is rendered"),
        text(pg, "page", "idle", expected=sel + " present once a send is finished"),
    )
    for k in ("input", "send", "message", "ready", "idle"):
        v = getattr(page, k)
        if v is not None and not v.strip():
            raise bad(f"page.{k}", v, sel)
    return page


def _source(data: dict[str, Any], cwd: Path) -> tuple[Path, ...]:
    """[source] paths = ["app/", "wsgi.py"]: each must exist (relative to start.cwd)."""
    if "source" not in data:
        return ()
    paths = table(data, "source").get("paths")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) and p.strip() for p in paths):
        raise bad(
            "source.paths",
            paths,
            "a non-empty list of files or folders of the app's Python source, relative to start.cwd",
        )
    out = []
    for p in paths:
        full = (cwd / p).resolve()
        if not full.exists():
            raise bad("source.paths", p, f"an existing file or folder (resolved to {full})")
        out.append(full)
    return tuple(out)


def fill(text: str, values: dict[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)
