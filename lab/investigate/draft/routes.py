"""Where `lab init` looks for an app's routes, where no OpenAPI document names them: the calls
the app's own page makes first, then common names. A route's name is the app's (POST
/api/threads/{id}/turns, /api/rooms/{id}/say): the common names alone drafted one of three apps
written independently (2026-12-05); the page is the one place an app says how it is talked to.

Read, never run: the first argument of each ``fetch(...)`` (``axios.get/post``, ``new
EventSource``) as written -- a string, a template literal, strings joined by ``+``, or a name
(``url`` / ``url()``) the script defines as one of those -- with every part that is not a
literal taken for the conversation's id ({session}), in the path or as a query parameter's
value (``"/api/chat?s=" + id``); its method from a ``method:`` beside it, whether it sends a
``body:``, and the fields of the ``JSON.stringify({...})`` it sends. A page that mints ids
(``crypto.randomUUID()``) is noted: a conversation it names itself. What this cannot read (a
bundle's minified client) adds nothing, and the common names are tried as before."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar
from urllib.parse import urljoin, urlsplit

from lab.investigate.draft.client import Client
from lab.investigate.draft.openapi import MESSAGE_FIELDS

CHAT_PATHS = ("/chat", "/api/chat", "/api/send", "/send", "/api/messages", "/messages", "/api/message")
HISTORY_PATHS = ("/history", "/api/history", "/api/messages", "/messages", "/api/chat/history", "/api/chat")
# The history's query parameter for a conversation's id, where it is not the answer's own name.
QUERY_NAMES = ("conversation_id", "id", "session_id", "thread_id", "chat_id", "conversation", "session", "thread", "c")
# Where a conversation's history lives when its id is a path segment ({session}: the id).
CONVERSATION_PATHS = (
    "/api/conversations/{session}/messages",
    "/api/conversations/{session}",
    "/conversations/{session}/messages",
    "/api/chats/{session}/messages",
    "/api/chats/{session}",
    "/api/threads/{session}/messages",
    "/api/history/{session}",
    "/history/{session}",
    "/api/chat/{session}",
)
# A create call no OpenAPI names: POST <collection> answers its id, its messages below it.
CREATE_PATHS = ("/api/conversations", "/conversations", "/api/chats", "/chats", "/api/threads", "/threads")
CREATED_CHAT = ("/messages", "/chat", "")  # below <collection>/{session}: the send's route

SCRIPTS_MAX = 5  # same-origin <script src> files read besides the page itself
# fetch, an HTTP client's get/post (axios, an instance of it, ky, $), EventSource.
_CALL = re.compile(r"(?<![\w$.])(fetch|(?:[A-Za-z_$][\w$]*\.)+(get|post)|new\s+EventSource)\s*\(")
# A function's head, its name and parameters: function f(a, b) {, f = (a, b) =>, f(a, b) { ...
_HEAD = re.compile(
    r"(?:\bfunction\s+([A-Za-z_$][\w$]*)\s*|\b([A-Za-z_$][\w$]*)\s*[=:]\s*(?:async\s+)?(?:function\b\s*)?"
    r"|^[ \t]*(?:async\s+)?([A-Za-z_$][\w$]*)\s*)\(([^()]*)\)\s*(?:=>|\{)",
    re.M,
)
_NOT_NAMES = {"if", "for", "while", "switch", "catch", "function", "return"}
_METHOD = re.compile(r"(?i)get|post|put|patch|delete")
_SRC = re.compile(r"<script[^>]*\bsrc\s*=\s*[\"']([^\"']+)[\"']", re.I)
STRING = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|`(?:[^`\\]|\\.)*`", re.S)
_FIELDS = re.compile(r"(?:JSON\.stringify|new URLSearchParams)\(\s*\{([^{}]*)\}")
_QUERY_ID = re.compile(r"[?&]([A-Za-z_][A-Za-z0-9_]*)=\{session\}")
_MINTS = re.compile(r"\b(randomUUID|uuidv4|uuid\.v4|v4 as uuid|nanoid)\b")
_KEY = re.compile(r"(?:^|,)\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?\s*(?=[:,]|$)")
ID = "{session}"
T = TypeVar("T")


@dataclass(frozen=True)
class Call:
    method: str  # GET | POST
    path: str  # /api/threads/{session}/turns; no query
    query: str | None = None  # the query parameter carrying the id (/api/chat?s=...: "s")
    body: bool = True  # a POST that sends a body (none: a create call's shape)
    header: str | None = None  # the request header carrying the id (X-Chat-Token: token)


@dataclass
class Routes:
    calls: list[Call] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)  # the sent bodies' fields, in the page's order
    mints: bool = False  # the page makes ids itself (crypto.randomUUID() ...)
    texts: list[str] = field(default_factory=list)  # the page and its scripts, as read
    forms: list[str] = field(default_factory=list)  # POST paths of the page's own forms (sent as forms)
    page_url: str | None = None  # the page's own path where it holds an id (/ redirected to /c/{session})
    at: str = "/"  # the page's path, after redirects
    again: str | None = None  # a second conversation's page path (where its id differs from at's)
    hidden_from: str | None = None  # the page whose message form has hidden inputs (a CSRF token)
    starts: list[str] = field(default_factory=list)  # POST forms with no text field ("New chat")
    headers: dict[str, str] = field(default_factory=dict)  # literal headers the page's requests set
    start: tuple[str, str] = ("GET", "/")  # how a browser gets to a conversation's page
    # OpenAPI's routes named like a chat's (POST, GET), tried after the page's and the common ones
    listed: tuple[list[str], list[str]] = field(default_factory=lambda: ([], []))

    def posts(self, placeholders: int, body: bool = True) -> list[str]:
        return _unique(
            c.path for c in self.calls if c.method == "POST" and c.path.count(ID) == placeholders and c.body == body
        )

    def queried(self, method: str = "POST") -> list[tuple[str, str]]:
        """(path, parameter) of the page's calls carrying the id in their query."""
        return _unique((c.path, c.query) for c in self.calls if c.method == method and c.query)

    def headered(self) -> list[tuple[str, str]]:
        """(path, header) of the page's POSTs with a body carrying the id in a header of its own."""
        return _unique((c.path, c.header) for c in self.calls if c.method == "POST" and c.body and c.header)

    def gets(self, placeholders: int) -> list[str]:
        return _unique(c.path for c in self.calls if c.method == "GET" and c.path.count(ID) == placeholders)

    def created(self) -> list[tuple[str, str]]:
        """(collection, the chat's route with {session}) for a create call the page makes: a
        POST with no body beside a POST below the id it answers (/api/rooms and
        /api/rooms/{session}/say) or carrying it in its query (/api/sessions and /api/chat?s=)."""
        made = self.posts(0, body=False) + [
            p for p in self.posts(0) if any(c.startswith(p + "/" + ID) for c in self.posts(1))
        ]
        return [(m, chat) for m in made for chat in self.posts(1) if chat.startswith(m + "/" + ID)] + [
            (m, f"{chat}?{name}={ID}") for m in made for chat, name in self.queried()
        ]

    def chats(self) -> list[str]:
        # A POST the page sends no body with is a create call's shape: tried after the names.
        return _unique([*self.posts(0), *CHAT_PATHS, *self.listed[0], *self.posts(0, body=False)])

    def histories(self) -> list[str]:
        return _unique([*self.gets(0), *HISTORY_PATHS, *self.listed[1]])

    def conversations(self) -> list[str]:
        return _unique([*self.gets(1), *CONVERSATION_PATHS])

    def creates(self) -> list[tuple[str, str]]:
        return _unique(
            [*self.created(), *((made, f"{made}/{ID}{below}") for made in CREATE_PATHS for below in CREATED_CHAT)]
        )

    def message_fields(self) -> list[str]:
        # "body": a REST design's name for a message's text (a comment's, an issue's, a note's).
        return _unique([*self.fields, *MESSAGE_FIELDS[:4], "body"])


def _unique(items: Iterable[T]) -> list[T]:
    return list(dict.fromkeys(items))


def _top(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``text``'s characters outside strings and brackets, from ``start``, with their index; a
    closing bracket that closes nothing opened here is yielded last (the call's own ``)``)."""
    depth, i = 0, start
    while i < len(text):
        m = STRING.match(text, i)
        if m:
            i = m.end()
            continue
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}" and depth:
            depth -= 1
        elif ch in ")]}" or depth == 0:
            yield i, ch
            if ch in ")]}":
                return
        i += 1


def first_argument(text: str, start: int) -> tuple[str, str]:
    """The call's first argument and the rest of its argument list, from just after ``(``."""
    first = None
    for i, ch in _top(text, start):
        if ch in ")]}":
            return (text[start:i], "") if first is None else (text[start:first], text[first + 1 : i])
        if ch == "," and first is None:
            first = i
    return text[start:], ""


def plus_parts(expr: str) -> list[str]:
    """``expr`` split at its top-level ``+`` (strings and brackets kept whole)."""
    bounds = [-1, *(i for i, ch in _top(expr) if ch == "+"), len(expr)]
    return [expr[a + 1 : b].strip() for a, b in zip(bounds, bounds[1:])]


def literal_text(part: str) -> str:
    """A string's text (a template's ${...} the id); anything that is not a string, the id."""
    if not STRING.fullmatch(part):
        return ID
    return re.sub(r"\$\{[^}]*\}", ID, part[1:-1]) if part[0] == "`" else part[1:-1]


def defined_as(script: str, expr: str) -> str:
    """A name (``url``, ``url()``, ``api.history(id)``'s last name) the script defines as a
    string expression -- ``const url = () => "..." + id``, ``function url(){ return ...; }``,
    ``let url = ...`` -- as that expression; anything else as it is."""
    m = re.fullmatch(r"(?:[A-Za-z_$][\w$]*\.)*([A-Za-z_$][\w$]*)\s*(\(\s*[^()]*\))?", expr)
    if m is None:
        return expr
    name = re.escape(m.group(1))
    arrow = rf"\b{name}\s*[=:]\s*(?:async\s+)?(?:\([^()]*\)|[A-Za-z_$][\w$]*)\s*=>\s*"
    for head in (
        arrow,
        rf"\bfunction\s+{name}\s*\([^()]*\)\s*\{{\s*return\s+",
        rf"\b(?:const|let|var)\s+{name}\s*=\s*",
    ):
        d = re.search(head, script)
        if d:
            stop = next((i for i, ch in _top(script, d.end()) if ch in ";,)]}" or _ends_line(script, i)), None)
            return script[d.end() : stop].strip()
    return expr


def _ends_line(script: str, i: int) -> bool:
    """A newline at ``i`` that ends the statement (no ``+`` carrying it on, before or after)."""
    return script[i] == "\n" and not script[:i].rstrip().endswith("+") and not script[i:].lstrip().startswith("+")


def _url(expr: str) -> str | None:
    """A URL expression as a path and query: literals kept, anything else the id; None: not a
    path."""
    out = "".join(literal_text(p) for p in plus_parts(expr.strip()))
    if out.startswith(("http://", "https://")):
        split = urlsplit(out)
        out = split.path + (f"?{split.query}" if split.query else "")
    out = re.sub(r"(\{session\})+", ID, out.split("#")[0])
    path = out.split("?")[0]
    return out if path.startswith("/") and len(path) > 1 and not path.startswith("/" + ID) else None


def calls_in(script: str) -> Routes:
    """The routes a page's script calls (pure: the script's text), directly or through a helper
    of its own that takes the URL as a parameter (``api("POST", "/api/x/" + id, {prompt})``)."""
    found = Routes(mints=bool(_MINTS.search(script)))
    for m in _CALL.finditer(script):
        arg, rest = first_argument(script, m.end())
        # A conditional URL (id ? "/talk?c=" + id : "/talk"): each branch a call of its own.
        urls = [u for b in _branches(defined_as(script, arg.strip())) if (u := _url(b)) is not None]
        if not urls and (w := _wrapper(script, m.start(), arg.strip())) is not None:
            _through(script, w, rest, found)
        post = m.group(2) == "post" or re.search(r"method\s*:\s*[\"'`]POST", rest, re.I)
        body = m.group(2) == "post" or bool(re.search(r"\bbody\s*[:,}]", rest))
        for url in urls:
            _add(found, "POST" if post else "GET", url, body or not post, _FIELDS.findall(rest), _header(rest))
    return found


def _branches(expr: str) -> list[str]:
    """A conditional expression's two branches (its condition dropped); else the expression."""
    marks = [(i, ch) for i, ch in _top(expr) if ch in "?:"]
    if len(marks) == 2 and marks[0][1] == "?" and marks[1][1] == ":":
        return [expr[marks[0][0] + 1 : marks[1][0]].strip(), expr[marks[1][0] + 1 :].strip()]
    return [expr]


def _header(rest: str) -> str | None:
    """A request header the call sets from a name, not a literal (``"X-Chat-Token": token``):
    the conversation's id, where it is no header every request has."""
    m = re.search(r"\bheaders\s*:\s*\{([^{}]*)\}", rest)
    for name, value in re.findall(r"[\"']?([A-Za-z][\w-]*)[\"']?\s*:\s*([^,}]+)", m.group(1) if m else ""):
        if name.lower() not in _COMMON_HEADERS and not STRING.fullmatch(value.strip()):
            return str(name)
    return None


_COMMON_HEADERS = {"content-type", "accept", "authorization", "cache-control", "x-requested-with", "x-csrf-token"}


def _add(found: Routes, method: str, url: str, body: bool, sent: list[str], header: str | None = None) -> None:
    query = _QUERY_ID.search(url)
    found.calls.append(Call(method, url.split("?")[0], query and query.group(1), body, header))
    for fields in sent:
        found.fields += [k for k in _KEY.findall(fields) if k not in found.fields]


@dataclass(frozen=True)
class _Wrapper:
    """A function of the page's own whose fetch takes its URL from a parameter."""

    name: str
    url: int  # that parameter's place
    method: int | None  # the place of a parameter named method (None: none)
    fetch_rest: str  # the fetch call's other arguments, as written in it


def _wrapper(script: str, at: int, arg: str) -> _Wrapper | None:
    """The function a fetch at ``at`` whose URL is the bare name ``arg`` stands in, where ``arg``
    is its parameter (the nearest such head before it)."""
    if not re.fullmatch(r"[A-Za-z_$][\w$]*", arg):
        return None
    for h in reversed(list(_HEAD.finditer(script, 0, at))):
        params = [p.split("=")[0].strip().lstrip(".") for p in h.group(4).split(",")]
        name = h.group(1) or h.group(2) or h.group(3)
        if arg in params and name not in _NOT_NAMES:
            method = next((i for i, p in enumerate(params) if re.fullmatch(r"(?i)method|verb", p)), None)
            return _Wrapper(name, params.index(arg), method, first_argument(script, script.index("(", at) + 1)[1])
    return None


def _through(script: str, w: _Wrapper, rest: str, found: Routes) -> None:
    """Each call of the helper ``w`` as the call it makes: its URL argument, its method (a method
    argument, else the fetch's own, else POST where it is given a payload), its payload's fields."""
    for m in re.finditer(rf"(?<![\w$.]){re.escape(w.name)}\s*\(", script):
        args, end = _args(script, m.end())
        if re.match(r"\s*(?:\{|=>)", script[end:]) or len(args) <= w.url:
            continue  # the helper's own head, or a call without the URL
        if (url := _url(defined_as(script, args[w.url]))) is None:
            continue
        said = [a[1:-1].upper() for i, a in enumerate(args) if i != w.url and STRING.fullmatch(a)]
        verb = next((v for v in said if _METHOD.fullmatch(v)), None)
        payload = [a for i, a in enumerate(args) if i not in (w.url, w.method) and not STRING.fullmatch(a)]
        if verb is None:
            own = re.search(r"method\s*:\s*[\"'`](\w+)", w.fetch_rest or rest)
            verb = own.group(1).upper() if own else "POST" if payload else "GET"
        if verb in ("GET", "POST"):
            _add(found, verb, url, verb == "GET" or bool(payload), [a[1:-1] for a in payload if a.startswith("{")])


def _args(text: str, start: int) -> tuple[list[str], int]:
    """A call's arguments, from just after its ``(``, and where its ``)`` ends."""
    out, last = [], start
    for i, ch in _top(text, start):
        if ch == "," or ch in ")]}":
            out.append(text[last:i].strip())
            last = i + 1
            if ch != ",":
                return [a for a in out if a], i + 1
    return [a for a in out if a], len(text)


def scripts(c: Client, page: str) -> list[str]:
    """The same-origin scripts ``page`` loads (the first SCRIPTS_MAX), as read."""
    urls = [urljoin(c.base + "/", src) for src in _SRC.findall(page)[:SCRIPTS_MAX]]
    return [c.text(urlsplit(u).path)[2] for u in urls if urlsplit(u).netloc == urlsplit(c.base).netloc]


def read(c: Client) -> Routes:
    """The routes of the page at / and of the same-origin scripts it loads."""
    status, _, page = c.text("/")
    if not 200 <= status < 300 or not page:
        return Routes()
    at = c.path
    routes = Routes(texts=[page, *scripts(c, page)], at=at)
    if at != "/":  # / led elsewhere (/c/8f3a): where a browser of its own is led tells the id's place
        fresh = Client(c.base)
        routes.again = fresh.path if 200 <= fresh.text("/")[0] < 300 else None
    for text in routes.texts:
        got = calls_in(text)
        routes.calls += got.calls
        routes.fields += [f for f in got.fields if f not in routes.fields]
        routes.mints = routes.mints or got.mints
    return routes
