"""The target spec's model: what `lab investigate` knows of a foreign chat backend (frozen
dataclasses; parsed and validated by lab.investigate.spec.parse)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lab.stack.compose.override import AppCompose

# A fixed session value's placeholders for an id the page mints, fresh per browser, as pages that
# make their own do: a UUID (crypto.randomUUID(), what a UUID-checking route takes), or 32 hex
# digits (a route that takes no dashes) -- in the order lab init tries them.
MINTED = ("{uuid}", "{random}")


@dataclass(frozen=True)
class Start:
    command: tuple[str, ...]
    cwd: Path
    env: dict[str, str]
    ready_timeout_s: float
    external: bool = False  # the app already runs, its Redis behind `lab proxy up`: nothing started
    compose: "AppCompose | None" = None  # the app in its own compose file (lab.investigate.spec.compose)


@dataclass(frozen=True)
class Http:
    base_url: str
    port: int
    ready_path: str | None
    cookie: str | None  # the session cookie ([session] with carrier cookie says the same)
    # A CSRF token the app's page echoes from a cookie into a header on every POST, as Django
    # (csrftoken -> X-CSRFToken), Laravel and Angular (XSRF-TOKEN -> X-XSRF-TOKEN) pages do.
    csrf_cookie: str | None = None
    csrf_header: str = "X-CSRFToken"
    # Or a token the page reads from a <meta name=...> tag into that header (Rails, Laravel,
    # Phoenix, Flask-WTF pages), read before each send from [chat] hidden_from's page, else /.
    csrf_meta: str | None = None


@dataclass(frozen=True)
class Chat:
    path: str
    message_field: str
    id_field: str | None
    reply_path: str | None
    timeout_s: float
    # How the message is sent: "json" (a JSON object), or "form" (urlencoded, as an HTML form or
    # `new URLSearchParams({...})` posts it: aiohttp's request.post(), Flask's request.form).
    body: str = "json"
    # A server-rendered form's hidden fields (a CSRF token: Flask-WTF's csrf_token, Express's
    # _csrf, Rails' authenticity_token; a conversation's id) go with each message, as the browser
    # posts them: read from the form holding the message field on this page (GET, before each send).
    hidden_from: str | None = None
    # Headers the app's own page sends with a message (htmx's HX-Request, a script's
    # X-Requested-With): an app may answer a fragment to them and a redirect without.
    headers: dict[str, str] = field(default_factory=dict)
    # Where the user gets the reply: "answer" (the chat's answer carries it: a field, a stream, a
    # page) or "history" (the answer only takes the message -- 202 {"turn": ...} -- and the app's
    # page polls the history until the reply shows: a send is answered by the read that shows it).
    reply_from: str = "answer"


@dataclass(frozen=True)
class History:
    path: str
    format: str
    items: str
    role_field: str
    content_field: str
    separator: str
    order: str
    user_role: str
    assistant_role: str
    id_field: str | None = None  # objects only: the message id the chat request took ([chat] id_field)
    # pairs only: the item's field holding the turn's reply (null or "" until it is stored);
    # content_field then holds its question.
    reply_field: str = "reply"


@dataclass(frozen=True)
class Stream:
    """The chat answer can stream (any chunked body: NDJSON, SSE, plain text). A streamed send
    counts as acknowledged at its first chunk, as the user sees the reply begin."""

    request: dict[str, Any]  # fields merged into the chat body to ask for a stream ({}: always streams)
    # The text of the app's own last event of a reply it completed ("event: done", "data: [DONE]",
    # '"kind":"done"'): a send then counts as answered when it arrives, as the app's page takes
    # it, and one whose stream never carried it (an error event instead) as not answered.
    end: str | None = None
    # A reply that streams on a second request (POST answered 202 {"turn": ...}, then an
    # EventSource on /api/turns/{turn}/events): its path, {turn} filled from the answer's JSON at
    # follow_id. The send is answered when that stream's end event comes, as its page takes it.
    follow: str | None = None
    follow_id: str = "$.id"


@dataclass(frozen=True)
class PageSpec:
    """The app's own page, driven by selectors: the lab types and clicks as a user does, reads
    the statuses of the page's own requests from the network, and the history from the DOM."""

    path: str
    input: str  # the message box
    send: str | None  # the send button; None: Enter in the message box
    message: str  # one element per rendered message
    role_attribute: str  # the attribute on a message element that holds its role
    order: str  # oldest_first | newest_first, as rendered
    ready: str | None  # present once the page rendered its history (else: its GET + 2 frames)
    idle: str | None  # present once a send is finished (else: the answer's body read)


@dataclass(frozen=True)
class Session:
    """Where the conversation's identity lives (``carrier``) and where it comes from
    (``source``). The lab's page keeps an id it was given where a browser keeps an app's state
    (localStorage), so a refresh keeps it and a new user's browser has none."""

    carrier: str  # cookie | header | query | path ({session} in the paths)
    name: str  # the cookie's, header's or query parameter's name ("" for path)
    source: str  # cookie (the app sets it) | create (a POST returns it) | answer (the first answer) | fixed
    create_path: str | None = None  # source = create: POST here, no body
    id_path: str | None = None  # create / answer: where the id is in that JSON ($.id)
    value: str | None = None  # source = fixed; {random} / {uuid}: a fresh id per browser, made by the page
    field: str | None = None  # the chat body's / message frame's field that carries it (null before it is known)
    # The app's own page ([page]) keeps the id itself: under this localStorage key, or in its URL
    # (a path pattern with {session}, e.g. /c/{session}).
    page_storage: str | None = None
    page_url: str | None = None
    # from = redirect: GET (a link, / -> /c/<id>) or POST (a "New chat" form's button) at `create`
    create_method: str = "GET"

    @property
    def is_cookie(self) -> bool:
        return self.carrier == "cookie"


@dataclass(frozen=True)
class Auth:
    """A login before the chat: a request whose body values come from environment variables
    (the token comes back in its JSON, or a cookie is set), or a static header from one."""

    login_path: str | None  # None: a static header (header_env)
    body: dict[str, str]  # JSON fields, values with {env:NAME}
    token_path: str | None  # where the token is in the login's JSON; None: the login sets a cookie
    header: str  # the header the token goes in (Authorization)
    scheme: str  # its prefix ("Bearer"; "" for none)
    header_env: str | None  # static: the header's value is this environment variable's
    secret_envs: tuple[str, ...]  # every variable named: their values are redacted everywhere


@dataclass(frozen=True)
class Transport:
    """Replies over a WebSocket or Socket.IO instead of an HTTP answer: the message goes out as
    a frame (an event), the reply comes back in frames told apart by their kind (the field
    ``type_field`` of a JSON frame; a Socket.IO event's name). Acknowledged at the app's ack
    frame where it sends one, else at the first reply frame (the user sees the reply begin)."""

    kind: str  # websocket | socketio
    path: str  # websocket: the URL path ({session} {token}); socketio: the Engine.IO path
    event: str  # socketio: the event the message is emitted as
    message: dict[str, Any]  # fields merged into the message frame beside chat.message_field
    type_field: str  # websocket: the field naming a frame's kind
    ack: str | None  # the app's acknowledgement frame, if it sends one
    chunk: str  # a reply fragment
    chunk_text: str  # its text ($.text)
    end: str  # the frame that ends a reply
    end_text: str | None  # the whole reply in the end frame, if it carries it ($.reply)
    error: str | None  # the app's error frame (the send failed: may have landed)
    client_script: str  # socketio: the client library's path on the app (/socket.io/socket.io.js)


@dataclass(frozen=True)
class RedisKey:
    key: str | None  # e.g. "chat:{session}": the conversation's key, {session} = the cookie value
    # [start] external: the variable holding the app's own Redis URL, read at run time for its
    # user, password and db (the lab's reads and its record log in as the app does; never written).
    url_env: str | None = None
    # Are the conversations meant to expire? None: the spec does not say -- a key with no TTL is
    # then a defect only where the app set one on it in some trial (lab.diagnoses.no_ttl): an app
    # that keeps its conversations on purpose leaves the same PTTL -1 as one that forgot EXPIRE.
    expires: bool | None = None


@dataclass(frozen=True)
class ModelSpec:
    """The app calls a model ([model], lab.investigate.spec.model): the lab serves the stand-in
    behind its own Toxiproxy link and sets ``env`` on the app's process ({model_url} filled)."""

    protocols: tuple[str, ...]
    env: dict[str, str]


@dataclass(frozen=True)
class Spec:
    name: str
    file: Path
    start: Start
    http: Http
    chat: Chat
    history: History
    redis: RedisKey = field(default_factory=lambda: RedisKey(None))
    stream: Stream | None = None
    page: PageSpec | None = None
    session: Session = field(default_factory=lambda: Session("cookie", "session", "cookie"))
    auth: Auth | None = None
    transport: Transport | None = None
    # [source] paths: the app's code, relative to start.cwd, for `lab suspects` beside the
    # diagnoses (proven / not proven / not exercised lines).
    source: tuple[Path, ...] = ()
    model: ModelSpec | None = None

    @property
    def streams(self) -> bool:
        """A reply can be cut mid-stream: a chunked HTTP answer, or frames of a transport."""
        return self.stream is not None or self.transport is not None

    def url(self, path: str) -> str:
        return self.http.base_url.rstrip("/") + path
