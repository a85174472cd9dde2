"""A user's own pytest-playwright test as a lab trial (`pytest --lab-target SPEC`): recorded from
the browser's own network events on the spec's chat and history routes -- nothing in the test
changes. Each chat POST is a send (ok / fail / info, with its reply where the answer carries
it); a navigation after a send is the refresh, and the first history read after it is what the
page showed. At the end the history is read until it settles, and the conversation's Redis key
is read directly. The trial is judged by the one checker (lab.model.checker).

Sync Playwright (pytest-playwright's API); the app's own page, as the user's test drives it."""

from __future__ import annotations

import json
import time
from urllib.parse import urlsplit
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Any

from playwright.sync_api import BrowserContext, Error as PlaywrightError, Page, Request, Response

from lab.common import redact
from lab.investigate.browser.app_page import request_to
from lab.common.errors import NotReady
from lab.common.wait import wait_until
from lab.investigate.browser import identity as who
from lab.investigate.evidence.key_home import follow
from lab.investigate.browser.app_frames import Frame
from lab.investigate.plugin import frames
from lab.investigate.plugin.exchanges import await_read, followed_answer, is_refresh, numbered, polled_answers
from lab.investigate.plugin.exchanges import read_times, send_of, session_of
from lab.investigate.evidence.keys import KeyReader, key_for, read_final
from lab.investigate.evidence.store import NO_KEY, StoreMonitor
from lab.investigate.evidence.rows import json_path, parse_rows, replies_from
from lab.investigate.browser.settle import MODEL_END_DEADLINE_S, POLL_S, QUIESCENCE_DEADLINE_S, Settling, model_unended
from lab.investigate.spec.parse import Spec
from lab.investigate.spec.shapes import follow_pattern
from lab.model.history import Row, Send, Trial
from lab.model.store import CLOCK_GRAIN_S
from lab.stack.model_link import ModelLink


@dataclass
class Recorder:
    spec: Spec
    ctx: BrowserContext
    redis_url: str
    trial_id: str
    seed: int
    fault: str = "none"
    fault_params: dict[str, Any] = field(default_factory=dict)
    _answers: list[tuple[float, Response]] = field(default_factory=list)
    _failed: list[tuple[float, Request]] = field(default_factory=list)
    _reads: list[tuple[float, Response]] = field(default_factory=list)
    _bodies: dict[int, str] = field(default_factory=dict)  # id(answer) -> its body, read as it came
    _follows: list[Request] = field(default_factory=list)  # the page's GETs of the reply's stream ([stream] follow)
    _read_requests: list[tuple[float, Request]] = field(default_factory=list)  # the page's history GETs
    _navigations: list[float] = field(default_factory=list)
    _restarted: list[BrowserContext] = field(default_factory=list)
    _ids_sent: bool = False  # every send carried the app's message id ([chat] id_field)
    _logins: list[Response] = field(default_factory=list)
    store: StoreMonitor | None = None  # the store's record, where the session follows one
    model: ModelLink | None = None  # the stand-in model ([model]): its record of the test's calls
    _t0: float = field(default_factory=time.time)
    # When each fault the test applied was in force ([on, off]; off None: until the test's end) and
    # the evidence it took effect: the sends made inside are under the fault, as a trial's of
    # lab investigate (acked_while_unreachable, stored_twice_after_retry... read them).
    _fault_windows: list[list[float | None]] = field(default_factory=list)
    _fault_evidence: str | None = None

    def fault_applied(self, evidence: str) -> Callable[[], None]:
        """A fault is in force from now; call the returned function once it is removed."""
        window: list[float | None] = [time.time(), None]
        self._fault_windows.append(window)
        self._fault_evidence = self._fault_evidence or evidence

        def removed() -> None:
            window[1] = time.time()

        return removed

    def __post_init__(self) -> None:
        self._to_chat = request_to(self.spec.chat.path, "POST")
        self._to_history = request_to(self.spec.history.path, "GET")
        self._chat = lambda r: self._to_chat(r.request)
        self._history = lambda r: self._to_history(r.request)
        follow = follow_pattern(self.spec.stream.follow if self.spec.stream is not None else None)
        self._to_follow = lambda r: (
            follow is not None and r.method == "GET" and bool(follow.match(urlsplit(r.url).path))
        )
        a = self.spec.auth
        login = request_to(a.login_path, "POST") if a is not None and a.login_path and a.token_path else None
        self._login = lambda r: login is not None and login(r.request)
        self._frames: list[Frame] = []  # the page's socket's, where the chat goes over one ([transport])
        if frames.watched(self.spec):
            frames.record(self.ctx, self._frames, self.spec)
        self.ctx.on("response", self._response)
        self.ctx.on("requestfailed", self._request_failed)
        self.ctx.on("page", self._watch)
        for page in self.ctx.pages:
            self._watch(page)

    def _watch(self, page: Page) -> None:
        def loading(req: Request) -> None:
            if is_refresh(req, page.main_frame, self._to_chat):
                self._navigations.append(time.time())
            if self._to_history(req):
                self._read_requests.append((time.time(), req))
            if self._to_follow(req):
                self._follows.append(req)

        page.on("request", loading)

    def _response(self, resp: Response) -> None:
        if self._chat(resp):
            self._answers.append((time.time(), resp))
            if self.spec.stream is not None and self.spec.stream.follow:
                self._keep_body(resp)  # it names the reply's stream
        elif self._history(resp):
            self._reads.append((time.time(), resp))
            if self.spec.chat.reply_from == "history":
                self._keep_body(resp)  # it may show the reply
        elif self._login(resp):
            self._logins.append(resp)

    def _keep_body(self, resp: Response) -> None:
        """Read now: by the test's end the page may have reloaded, and the browser drops a page's
        bodies with it."""
        try:
            self._bodies[id(resp)] = resp.text()
        except PlaywrightError:
            pass

    def _keep_tokens_secret(self) -> None:
        """The tokens the test's own logins got ([auth] token) are secrets, as a run's are: the
        session's redaction scope scrubs them from the target's log (lab.investigate.target.redaction)."""
        assert self.spec.auth is not None and self.spec.auth.token_path is not None
        for resp in self._logins:
            try:
                redact.add(str(json_path(json.loads(resp.text()), self.spec.auth.token_path)))
            except (PlaywrightError, ValueError, KeyError):
                continue  # a failed login's answer has no token
        self._logins.clear()

    def _request_failed(self, req: Request) -> None:
        if self._to_chat(req):
            self._failed.append((time.time(), req))

    # ------------------------------------------------------------------ the trial
    def trial(self) -> Trial:
        """The test so far as a judged-ready trial (sends, the page after the refresh, the
        settled history, the key)."""
        if self._logins:
            self._keep_tokens_secret()
        t = Trial(
            self.trial_id, fault=self.fault, fault_params=dict(self.fault_params), refresh="settled", seed=self.seed
        )
        t.sends = self._sends()
        t.turns = len(t.sends)
        if self.spec.transport is not None and not t.sends:
            # Read: the page's WebSockets and Socket.IO's XHR long-polling (frames.py); not a client polling by fetch.
            t.unknown = f"no {self.spec.transport.kind} message frame on the page's sockets ([transport])"
        for s in t.sends:
            s.under_fault = any(_inside(s.t_invoke, on, off) for on, off in self._fault_windows)
        t.fault_turn = next((s.turn for s in t.sends if s.under_fault), None)
        t.fault_evidence = self._fault_evidence
        first_send = min((s.t_invoke for s in t.sends), default=None)
        for at, r in self._reads:
            t.history_read(r.status, before_sends=first_send is None or at < first_send)
        refresh = next((n for n in self._navigations if first_send is not None and n > first_send), None)
        if refresh is not None:
            self._await_read(refresh)
            t.mark("refresh", refresh)
            shown = next((r for at, r in self._reads if at >= refresh), None)
            t.page_after_refresh = self._rows(shown) if shown is not None else None
            t.refresh_reached = shown is not None
        texts = [s.text for s in t.sends]
        if self.model is not None:  # a call still streaming is a write still to come (settle.model_ended)
            model = self.model
            try:
                wait_until(
                    lambda: not model.still_streaming(texts, self._calls_from),
                    what="the calls ended",
                    timeout_s=MODEL_END_DEADLINE_S,
                )
            except NotReady:
                t.unknown = model_unended(len(model.still_streaming(texts, self._calls_from)))
        t.final_rows = self._settled(t)
        replies_from(t.final_rows or [], t.sends)
        self._key(t)
        if self.model is not None:
            t.model_calls = self.model.calls(texts, self._calls_from)
        if self.spec.session.is_cookie:
            c = who.session_cookie(self.spec, [dict(x) for x in self.ctx.cookies()])
            t.cookie_scope = None if c is None else who.cookie_scope(self.spec, c)
        return t

    def _await_read(self, refresh: float) -> None:
        pages = [p for c in (self.ctx, *self._restarted) for p in c.pages if not p.is_closed()]
        await_read(pages, self._reads, self._read_requests, refresh, self.spec.chat.timeout_s)

    @property
    def _calls_from(self) -> float:
        """Where this test's model calls begin in the stand-in's record: the test's own start, to
        the clock's grain. Not a second before it, as lab investigate allows: a user's tests may
        send the same texts test after test (lab investigate's are unique to their trial), and the
        last test's calls end within a second of this one's start: with a second's slack, tests 2-4
        of a 4-test run each held 12 calls, 6 of them the test before's (2026-12-04)."""
        return max(self._t0 - CLOCK_GRAIN_S, 0.0)

    def _sends(self) -> list[Send]:
        if self.spec.transport is not None:  # the chat goes over the page's socket, not a POST
            out = [(s.t_invoke, s) for s in frames.sends(self.spec, self._frames)]
        else:
            # A body cut after its answer came fails too: the answer counts -- and a stream so
            # cut is cut (a reload mid-reply), whatever its timing says of the body's end.
            failed = {id(req) for _, req in self._failed}
            out = [(at, self._send(resp.request, resp, id(resp.request) in failed)) for at, resp in self._answers]
            answered = {id(resp.request) for _, resp in self._answers}
            for at, req in self._failed:
                if id(req) not in answered:
                    out.append((at, self._send(req, None)))
        sends = [s for _, s in sorted(out, key=lambda x: x[1].t_invoke)]
        self._ids_sent = numbered(sends)
        if self.spec.chat.reply_from == "history":  # the reply is the first read's that shows it
            reads = [
                (*ts, self._bodies[id(r)]) for _, r in self._reads if id(r) in self._bodies and (ts := read_times(r))
            ]
            polled_answers(self.spec, sends, reads)
        return sends

    def _send(self, req: Request, resp: Response | None, failed: bool = False) -> Send:
        started = req.timing.get("startTime", -1) / 1000
        s = send_of(self.spec, req, resp, frames.stream_end(self._frames, req.post_data, started), failed)
        if resp is not None and self.spec.stream is not None and self.spec.stream.follow:
            ended = lambda url, after: frames.stream_end(self._frames, url, after)  # noqa: E731
            followed_answer(self.spec, s, self._bodies.get(id(resp)), self._follows, ended)
        return s

    def _rows(self, resp: Response) -> list[Row]:
        try:
            return self._parsed(resp.text()) if 200 <= resp.status < 300 else []
        except (PlaywrightError, ValueError):
            return []

    def _parsed(self, body: str) -> list[Row]:
        """The history's rows -- by text where the sends' ids are not the app's (the test sent
        none): an id the lab cannot match to a send is no message it never sent."""
        rows = parse_rows(self.spec.history, body)
        return rows if self._ids_sent else [Row("", r.role, r.text) for r in rows]

    # ------------------------------------------------------------------ the lab's refresh points
    def reload_after_answer(self, page: Page, send: Any) -> None:
        """``send()`` (the test's click or Enter), then the reload the moment its answer is in."""
        with page.expect_response(self._chat, timeout=self.spec.chat.timeout_s * 1000) as info:
            send()
        info.value.finished()
        page.reload()

    def reload_mid_stream(self, page: Page, send: Any) -> None:
        """``send()``, then the reload as soon as the answer starts: a streamed reply is cut,
        its connection closed as a refresh closes it."""
        with page.expect_response(self._chat, timeout=self.spec.chat.timeout_s * 1000):
            send()
        page.reload()

    def restart_browser(self, page: Page) -> Page:
        """A new browser context keeping what a browser keeps across a restart (persistent
        cookies, localStorage), at the same URL; recorded as the refresh. The settled read stays
        with the old session: whether the conversation is still stored under it is the point."""
        assert self.ctx.browser is not None
        state = self.ctx.storage_state()
        state["cookies"] = [c for c in state["cookies"] if c.get("expires", -1) != -1]
        fresh = self.ctx.browser.new_context(storage_state=state, base_url=self.spec.http.base_url)
        fresh.on("response", self._response)
        if frames.watched(self.spec):
            frames.record(fresh, self._frames, self.spec)
        fresh.on("page", self._watch)
        self._restarted.append(fresh)
        new = fresh.new_page()
        new.goto(page.url)
        return new

    def verdict(self) -> Any:
        """The checker's result for the test so far (reads the settled history and the key)."""
        from lab.model.checker import check_safe

        return check_safe(self.trial())

    def close(self) -> None:
        for c in self._restarted:
            c.close()

    # ------------------------------------------------------------------ after the test
    def session_id(self) -> str | None:
        return session_of(self.spec, self.ctx, [resp.request for _, resp in reversed(self._answers)], self._frames)

    def _settled(self, t: Trial) -> list[Row] | None:
        """The history read until it stays the same for settle.QUIET_S (lab investigate's rule)."""
        target = who.history_target(self.spec, self.session_id())
        if target is None:  # no id was ever given: nothing stored to read
            return [] if not t.sends else None
        url, headers = target
        rule = Settling(time.monotonic())  # lab investigate's settle rule, flapping included

        def quiet() -> tuple[list[Row]] | None:  # a tuple: an empty history is an answer too
            resp = self.ctx.request.get(url, headers=headers, fail_on_status_code=False, max_retries=who.RESET_RETRIES)
            rows = self._parsed(resp.text()) if 200 <= resp.status < 300 else None
            settled = rule.read(rows, time.monotonic())
            return None if settled is None else (settled,)

        try:
            return wait_until(quiet, what="the settled history", timeout_s=QUIESCENCE_DEADLINE_S, interval_s=POLL_S)[0]
        except NotReady:
            rule.never(t)
            return None

    def _key(self, t: Trial) -> None:
        sid, t.store_note = self.session_id(), NO_KEY  # until a key is read
        if not self.spec.redis.key or sid is None:
            return
        keys = KeyReader(self.redis_url)
        try:
            if (key := key_for(self.spec.redis.key, sid, t.texts, keys.find)) is not None:
                t.store_note = None if self.store is not None else "no store record: Redis refused MONITOR"
                read_final(keys, t, key, self.store, self._t0, self.spec.redis, dump=True)
                if self._found_elsewhere(keys, t):
                    read_final(keys, t, key, self.store, self._t0, self.spec.redis, dump=True)
        finally:
            keys.close()

    def _found_elsewhere(self, keys: KeyReader, t: Trial) -> bool:
        """Where the key read holds no message the settled history shows: searched for, as lab
        investigate's contract check does (lab.investigate.evidence.key_home) -- the key in another
        db is read there, for this test and the session's next (True: read it again); a spec whose
        key names nothing the app wrote makes the trial unknown, saying which key holds it."""
        shown = [r.text for r in t.final_rows or []]
        s = next((s for s in t.sends if s.outcome == "ok" and s.text and any(s.text in r for r in shown)), None)
        if s is None or t.redis_final is None or self.spec.redis.key is None:
            return False  # a history that shows nothing: a loss, not a misnamed key
        v = follow(keys, self.store, self.spec.redis.key, t.redis_final, s.turn, s.text)
        if v.error:
            t.unknown = t.unknown or f"{v.error}: fix [redis] key in the spec"
        self.redis_url = keys.redis_url
        return v.use_db is not None


def _inside(t: float, on: float | None, off: float | None) -> bool:
    return on is not None and on <= t and (off is None or t < off)
