"""What a page answers, typed: the records the browser side hands to the evidence.

Three drivers make them -- the lab's page (its script returns them as JSON), the app's own page
over HTTP (browser/app_page.py) and over its own socket (browser/app_frames.py) -- and the
evidence reads them (rows.answer, Pages.rows, the settled read). A key one driver leaves out or
misspells is a mypy error here, not a KeyError in the middle of someone's investigation."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NotRequired, TypedDict
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from lab.investigate.spec.parse import Spec


class Answer(TypedDict):
    """One send's answer as the page got it."""

    status: int | None  # None: no answer (a timeout, a reset, a reload first)
    type: str  # its content type ("frames": over the page's own socket)
    body: str
    ms: float  # from the send to its answer (the whole of it, or its first chunk when cut)
    error: str | None
    cut: bool | None  # a reply cut mid-stream: was it still streaming (None: not cut)
    reply: NotRequired[str | None]  # frames: the reply as they carried it whole
    start: NotRequired[float | None]  # when the request left and its answer ended (epoch s)
    end: NotRequired[float | None]
    marked: NotRequired[float | None]  # when the stream's end event ([stream] end) came (epoch s)
    frames: NotRequired[int]
    empty: NotRequired[bool]
    redirected: NotRequired[bool]  # the answer came after a redirect the browser followed
    url: NotRequired[str]  # ... to this URL


class HistoryRead(TypedDict):
    """One read of the history: a GET of its route, or what the app's own page rendered."""

    status: int | None
    body: str
    error: str | None
    type: NotRequired[str]
    rows: NotRequired[list[tuple[str, str]] | None]  # the app's own page: (role, text) as rendered
    empty: NotRequired[bool]  # no conversation yet (its id comes with the first answer)
    start: NotRequired[float | None]  # when the read left (epoch s)


def path_pattern(path: str) -> re.Pattern[str]:
    """A spec's path as a pattern of URL paths: {session} is any one path segment (the page's own id)."""
    return re.compile("^" + "[^/]+".join(re.escape(p) for p in path.split("{session}")) + "$")


def led_elsewhere(spec: "Spec", url: str) -> str | None:
    """Where a send's redirect led, if not to the conversation as the spec knows it (its history,
    its page, its page's URL): a login page, an error page -- no answer to the send, whatever
    its status (post/redirect/get leads back to the conversation). None: it did."""
    path = urlsplit(url).path
    known = [spec.history.path, spec.page.path if spec.page else None, spec.session.page_url]
    return None if any(path_pattern(p).match(path) for p in known if p) else path
