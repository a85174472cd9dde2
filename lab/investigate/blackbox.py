"""Black-box trials: fault x refresh point x turns against a target the lab did not write.

Each trial is a real conversation in Chromium through the lab's page on the target's origin.
Sends are recorded ok / fail / info from the answers; after the refresh point the lab records
what the page shows; then every fault is healed and the history is read until it stops changing
(quiescence without backend events), else the trial is unknown.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import redis
from playwright.async_api import Browser, BrowserContext, Page, Route

from lab.faults import base as faults
from lab.history import Outcome, Row, Send, Trial, TtlObs
from lab.investigate import app_page
from lab.investigate.page import PAGE_PATH, html
from lab.investigate.spec import Spec, json_path, parse_rows
from lab.runner import Lockstep
from lab import concurrency
from lab.schedule import CONCURRENT_POINTS, Cell

QUIET_S = 0.5          # the history must stay the same this long to count as settled
# The last turns sent from two tabs at once (two_tabs), or twice from one (double_submit). Two
# rounds of two tabs: an app with a connection pool may open its second connection in the first
# round, and that handshake (round trips under the injected latency) can hold one request back
# until the other has finished -- measured on examples/foreign_app.py: the second request's
# first read came 0.4 s late, after the other's write. The second round meets a warm pool.
TWO_TAB_ROUNDS = {"two_tabs": 2, "double_submit": 1}
QUIESCENCE_DEADLINE_S = 15.0
TTL_SETTLE_S = 0.05    # a TTL read counts once the key stayed as read this long after it
TTL_SETTLE_DEADLINE_S = 1.0


@dataclass
class Read:
    """One GET of the history: status, and the rows if the body was of the spec's form."""

    status: int | None
    rows: list[Row] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300 and self.rows is not None


@dataclass(frozen=True)
class Experiment:
    fault: str
    params: tuple[tuple[str, Any], ...]
    refresh: str
    turns: int
    why: str

    def cell(self, target: str) -> Cell:
        """The experiment as a cell of the results (the same schema as `lab chaos`'s)."""
        return Cell((), self.fault, self.refresh, self.turns, self.params, user_retry=False, target=target)

    @property
    def label(self) -> str:
        return self.cell("?").label


def optional_plan(turns: int) -> list[Experiment]:
    """Opt-in (--only): these test the environment as much as the app."""
    return [
        Experiment("redis_restart", (("durable", False),), "settled", turns,
                   "Redis killed and restarted before one send: loss when Redis has no persistence "
                   "(the lab's Redis has none: this checks what the app does about it)"),
    ]


def default_plan(turns: int, streams: bool = False, ids: bool = False) -> list[Experiment]:
    """Each experiment is there for the causes it can expose (the `why`). ``streams``: the
    spec has a [stream] section, so a reply can be cut mid-stream. ``ids``: the API takes a
    message id and the lab's page drives it, so a double submit is one message sent twice (an
    app with no ids cannot tell a double click from two equal messages: not judged there)."""
    double_submit = [Experiment("none", (), "double_submit", turns,
                                "a double click: the last message sent twice at once under its id; "
                                "an append not idempotent by id stores it twice")] if ids else []
    mid_stream = [Experiment("none", (), "mid_stream", turns,
                             "every reply streamed, the last one cut after its first chunk (the "
                             "connection closed as by a refresh or a closed tab): a turn stored only "
                             "when its stream completes")] if streams else []
    return [
        Experiment("none", (), "settled", turns,
                   "control: replies not stored, 5xx with writes applied, failing history reads, TTL"),
        Experiment("latency", (("latency_ms", 300),), "after_ack", turns,
                   "acknowledged before the write could complete; stale reads right after the ack"),
        Experiment("drop", (("one_shot", True), ("stream", "downstream")), "settled", turns,
                   "a Redis reply lost after the write: duplicates from a blind retry"),
        Experiment("down", (), "settled", turns,
                   "Redis unreachable for one send: acknowledged but never stored (swallowed errors)"),
        Experiment("none", (), "browser_restart", turns,
                   "a session cookie that does not survive a browser restart"),
    ] + mid_stream + [
        Experiment("none", (), "settled", long_turns(turns),
                   "a long conversation, no fault: loss only beyond a length (a capped history)"),
        Experiment("latency", (("latency_ms", 100),), "two_tabs", turns,
                   "two tabs of one conversation send at once while Redis is slow: a history read, "
                   "appended to and written back whole loses one tab's turn (a lost update)"),
    ] + double_submit


def long_turns(turns: int) -> int:
    """The long conversation's length: long enough for the caps apps commonly set on a history
    (10-20 messages), short enough to stay a few seconds per trial."""
    return min(100, max(12, 4 * turns))


@dataclass
class Prober:
    """Runs trials of one target in one browser. ``fault_targets`` is the lab's Redis link.
    Trials run concurrently (each in its own browser context); a fault acts on the whole link,
    so the trials of a group share it through one ``Lockstep`` (the chaos runner's)."""

    spec: Spec
    browser: Browser
    fault_targets: faults.Targets
    redis_url: str                         # the lab's Redis, direct (not through Toxiproxy)
    _r: "redis.Redis | None" = field(default=None, init=False)
    # Browser contexts reused trial after trial, as the chaos runner's slots: a new context and
    # page cost Chromium a renderer process each (measured: 1.8 s of a 4.5 s trial to open).
    _pool: list[tuple[BrowserContext, Page]] = field(default_factory=list, init=False)

    # ------------------------------------------------------------------ one trial
    async def trial(self, exp: Experiment, trial_id: str, seed: int, step: Lockstep | None = None) -> Trial:
        """One trial. ``step`` arms the experiment's fault for the group this trial belongs to
        (None: no fault). A failure of the browser makes the trial unknown, never a pass."""
        t = Trial(trial_id, fault=exp.fault, fault_params=dict(exp.params), refresh=exp.refresh,
                  turns=exp.turns, seed=seed)
        one_shot = exp.fault != "none" and faults.make(exp.fault, **dict(exp.params)).window == "send"
        windowed = exp.fault != "none" and not one_shot
        t.fault_turn = min(2, exp.turns) if one_shot else None
        nonce = f"{random.Random(seed).randrange(16 ** 6):06x}"
        t0 = time.monotonic()
        self._phase(t, "start")
        ctx, page = await self._slot()
        in_window = False
        broken = False
        try:
            self._phase(t, "context")
            loaded = await self._load(ctx, page)
            self._as_rows(loaded, t)
            self._phase(t, "open")
            if windowed:
                assert step is not None
                in_window = True
                if not await step.arm():
                    t.unknown = f"fault not confirmed: {step.error}"
                t.fault_evidence = step.evidence
            for turn in range(1, exp.turns + 1):
                if t.unknown:
                    break
                armed = one_shot and turn == t.fault_turn
                if armed:
                    assert step is not None
                    if not await step.arm():
                        t.unknown = f"fault not confirmed: {step.error}"
                        await step.heal()
                        break
                    t.fault_evidence = step.evidence
                # The app's own page streams if the app does; the lab's page asks for a stream
                # only where it cuts one.
                streamed = exp.refresh == "mid_stream" or (self.spec.page is not None and self.spec.stream is not None)
                cut = exp.refresh == "mid_stream" and turn == exp.turns
                together = exp.refresh in CONCURRENT_POINTS and turn >= exp.turns - TWO_TAB_ROUNDS[exp.refresh] + 1
                try:
                    sent = (await self._send_together(ctx, page, exp.refresh, trial_id, turn, nonce)
                            if together else [await self._send(page, trial_id, turn, nonce, streamed, cut)])
                finally:
                    if armed:
                        assert step is not None
                        await step.heal()
                for send in sent:
                    send.under_fault = armed
                t.sends.extend(sent)
                if together:
                    # A black box has no backend events: both requests in flight together as
                    # the browser saw them (an app that serializes them rightly passes).
                    t.concurrent = concurrency.at_browser(sent)
                    why = concurrency.problem(t.concurrent)
                    if why:
                        t.unknown = why
                self._phase(t, "send")
                await self._observe_ttl(ctx, t, turn)
                self._phase(t, "ttl")
            if exp.refresh in ("after_ack", "mid_stream") and not t.unknown:
                # Inside the fault window, right after the last acknowledgement (for mid_stream:
                # right after the cut of the last reply's stream).
                self._refresh_mark(t)
                self._page_after(await self._reload(page, t), t)
            if in_window:
                assert step is not None
                in_window = False
                await step.heal()
            # Healed from here on.
            if not t.unknown:
                await self._after(ctx, page, t)
        except Exception as exc:  # the browser or the target broke: unknown, with the reason
            broken = True
            t.unknown = t.unknown or f"driver: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            if step is not None:
                step.abandon()  # the group must not wait at a barrier for this trial
        finally:
            if in_window and step is not None:
                await step.heal()
            await self._release(ctx, page, broken)
            self._phase(t, "close")
            t.seconds = round(time.monotonic() - t0, 3)
        return t

    async def _after(self, ctx: BrowserContext, page: Page, t: Trial) -> None:
        """The refresh point (if not inside the fault window), the settled read, the key."""
        t.cookie_persistent = await self._cookie_persistent(ctx)
        if t.refresh in ("settled", *CONCURRENT_POINTS):
            self._refresh_mark(t)
            self._page_after(await self._reload(page, t), t)
        elif t.refresh == "browser_restart":
            self._refresh_mark(t)
            self._page_after(await self._browser_restart(ctx, t), t)
        self._phase(t, "refresh")
        t.final_rows = await self._final_read(ctx, t)
        self._phase(t, "settle")
        await self._redis_final(ctx, t)
        self._phase(t, "key")
        # A trial with no acknowledged send is the checker's to call unknown (lab.checker).
        if t.refresh == "mid_stream" and any(s.outcome == "ok" for s in t.sends):
            last = t.sends[-1]
            if last.outcome != "ok":
                t.unknown = f"the last send, to be cut mid-stream, failed ({last.status}): nothing cut"
            elif not last.cut:
                t.unknown = (f"the last reply came whole in its first chunk ({last.ms or 0:.0f} ms): "
                             "nothing was cut mid-stream")

    @staticmethod
    def _phase(t: Trial, name: str) -> None:
        """Where a trial's wall time goes: a phase ends here (the report sums them per phase)."""
        t.events.append({"t": time.time(), "kind": "phase", "phase": name})

    @staticmethod
    def _refresh_mark(t: Trial) -> None:
        t.events.append({"t": time.time(), "kind": "refresh"})

    @staticmethod
    def _page_after(read: Read, t: Trial) -> None:
        t.page_after_refresh = read.rows if read.rows is not None else []
        t.page_error = None if read.ok else (read.error or f"HTTP {read.status}")

    # ------------------------------------------------------------------ steps
    async def _slot(self) -> tuple[BrowserContext, Page]:
        if self._pool:
            return self._pool.pop()
        ctx = await self.browser.new_context()
        await self._serve_page(ctx)
        return ctx, await ctx.new_page()

    async def _serve_page(self, ctx: BrowserContext) -> None:
        """The lab's page (when the app's own is not driven), on the target's own origin, served
        by the browser: its cookies are real."""
        if self.spec.page is None:
            body = html(self.spec)

            async def serve(route: Route) -> None:
                await route.fulfill(status=200, content_type="text/html; charset=utf-8", body=body)

            await ctx.route(self.spec.url(PAGE_PATH), serve)

    async def _release(self, ctx: BrowserContext, page: Page, broken: bool) -> None:
        """Back to the pool as a new user's browser: no cookie, no storage of the target's
        origin; a context that failed is not trusted again."""
        try:
            if not broken:
                await page.evaluate("() => { try { localStorage.clear(); sessionStorage.clear(); } catch (e) {} }")
                await ctx.clear_cookies()
                self._pool.append((ctx, page))
                return
        except Exception:  # a page that cannot even be cleared is broken
            pass
        await ctx.close()

    async def close_pool(self) -> None:
        while self._pool:
            await self._pool.pop()[0].close()

    async def _open(self, ctx: BrowserContext) -> tuple[Page, dict[str, Any]]:
        """A new page in ``ctx`` showing the conversation, and its first history read (raw)."""
        await self._serve_page(ctx)
        page = await ctx.new_page()
        return page, await self._load(ctx, page)

    async def _load(self, ctx: BrowserContext, page: Page) -> dict[str, Any]:
        """Navigate ``page`` to the conversation; its first history read (raw)."""
        if self.spec.page is not None:
            url = self.spec.url(self.spec.page.path)
            return await app_page.load(page, self.spec, lambda: page.goto(url))
        await page.goto(self.spec.url(PAGE_PATH))
        # A user types once the page shows its history. Sending earlier races the page's own
        # GET of the history: both go out without a cookie, each may start a session, and the
        # later Set-Cookie wins -- the first message then lands in another conversation.
        return dict(await page.evaluate("window.labLoaded"))

    def _as_rows(self, raw: dict[str, Any], t: Trial) -> Read:
        read = self._read(raw)
        t.history_reads.append(raw["status"])
        if read.error and read.error not in t.errors and (
                read.error.startswith("page: ") or read.error.startswith("history outside the spec")):
            t.errors.append(read.error)  # the spec's contract, not the app's behaviour: preflight reads it
        return read

    def _read(self, raw: dict[str, Any]) -> Read:
        if raw["status"] is None or not 200 <= raw["status"] < 300:
            return Read(raw["status"], None, raw["error"] or f"HTTP {raw['status']}: {raw['body'][:120]!r}")
        if "rows" in raw:  # the app's own page: what it rendered
            if raw["rows"] is None:
                return Read(raw["status"], None, raw["error"])
            h = self.spec.history
            names = {h.user_role: "user", h.assistant_role: "assistant"}
            return Read(raw["status"], [Row("", names.get(r, r), c) for r, c in raw["rows"]], raw["error"])
        try:
            return Read(raw["status"], parse_rows(self.spec.history, raw["body"]))
        except ValueError as exc:
            return Read(raw["status"], None, f"history outside the spec: {exc}")

    async def _send_together(self, ctx: BrowserContext, page: Page, pattern: str, trial_id: str,
                             turn: int, nonce: str) -> list[Send]:
        """The last turn sent twice at nearly the same moment: from a second tab of the same
        context (two_tabs: another message), or the same message under the same id twice from
        the lab's page (double_submit: a double click; the plan has it only where the API takes
        an id and the lab's page drives it)."""
        if pattern == "double_submit":
            return list(await asyncio.gather(*(self._send(page, trial_id, turn, nonce) for _ in range(2))))
        tab, _ = await self._open(ctx)
        try:
            return list(await asyncio.gather(self._send(page, trial_id, turn, nonce, in_page=True),
                                             self._send(tab, trial_id, turn, nonce, tab="b", in_page=True)))
        finally:
            await tab.close()

    async def _send(self, page: Page, trial_id: str, turn: int, nonce: str, streamed: bool = False,
                    cut: bool = False, tab: str = "", in_page: bool = False) -> Send:
        # Unique text per message: where rows carry no ids the lab matches them by text. A
        # second tab's message is another message (its own text and id).
        text = f"chaoslab probe {trial_id} turn {turn}{tab} {nonce}"
        mid = f"{trial_id}-t{turn}{tab}-{nonce}" if self.spec.chat.id_field and self.spec.page is None else None
        t_invoke = time.time()
        if self.spec.page is not None:
            raw = await app_page.send(page, self.spec, text, cut, in_page)
        else:
            raw = await page.evaluate("([t, i, s, m]) => labSend(t, i, s, m)",
                                      [text, mid, streamed, "cut" if cut else "read"])
        status = raw["status"]
        error = raw["error"]
        reply: str | None = None
        outcome: Outcome
        if status is None:
            outcome = "info"  # timeout / connection reset: it may have landed
        elif 200 <= status < 300:
            outcome = "ok"
            if self.spec.chat.reply_path and not streamed:  # a stream's body is the app's own format
                try:
                    reply = str(json_path(json.loads(raw["body"]), self.spec.chat.reply_path))
                except (ValueError, KeyError) as exc:
                    outcome, error = "info", f"2xx outside the spec ({self.spec.chat.reply_path}): {exc}"
        elif 400 <= status < 500:
            outcome = "fail"
        else:
            outcome = "info"  # 5xx: the write may or may not have been applied
        if status is not None and status >= 400 and error is None:
            error = raw["body"][:160]
        s = Send(mid or f"t{turn}{tab}", text, turn, reply=reply, ms=round(raw["ms"], 1),
                 html="text/html" in raw["type"], streamed=streamed, cut=raw["cut"] if cut else None,
                 t_invoke=t_invoke)
        # The request's own times where the page knows them (two sends "at once" are judged by
        # when they really left and ended), else as this side saw them.
        s.t_invoke = raw.get("start") or t_invoke
        s.complete(outcome, status, error or (f"HTTP {status}" if status else ""),
                   raw.get("end") or time.time())
        return s

    async def _reload(self, page: Page, t: Trial) -> Read:
        if self.spec.page is not None:
            return self._as_rows(await app_page.load(page, self.spec, page.reload), t)
        await page.reload()
        return self._as_rows(await page.evaluate("window.labLoaded"), t)

    async def _browser_restart(self, ctx: BrowserContext, t: Trial) -> Read:
        # A browser restart keeps only persistent cookies (expires != -1).
        kept = [c for c in await ctx.cookies() if c.get("expires", -1) != -1]
        fresh = await self.browser.new_context()
        try:
            if kept:
                # Cookie dicts from cookies(), as add_cookies() takes them (two Playwright TypedDicts).
                await fresh.add_cookies(kept)  # type: ignore[arg-type]
            return self._as_rows((await self._open(fresh))[1], t)
        finally:
            await fresh.close()

    async def _cookie(self, ctx: BrowserContext) -> dict[str, Any] | None:
        return next((dict(c) for c in await ctx.cookies(self.spec.http.base_url)
                     if c["name"] == self.spec.http.cookie), None)

    async def _cookie_persistent(self, ctx: BrowserContext) -> bool | None:
        c = await self._cookie(ctx)
        return None if c is None else c.get("expires", -1) != -1

    async def _session_key(self, ctx: BrowserContext) -> str | None:
        """The conversation's Redis key for this context's session ([redis] key), if known."""
        c = await self._cookie(ctx)
        if not self.spec.redis.key or c is None:
            return None
        return self.spec.redis.key.replace("{session}", str(c["value"]))

    def _snapshot(self, key: str) -> tuple[float, float, int, int, int]:
        """(midpoint time, round trip ms, PTTL, value count, content digest) of the key."""
        t0 = time.time()
        pttl, _kind, values = self._key(key)
        t1 = time.time()
        return (t0 + t1) / 2, (t1 - t0) * 1000, pttl, len(values), hash(tuple(values))

    async def _observe_ttl(self, ctx: BrowserContext, t: Trial, turn: int) -> None:
        """The key's PTTL once the turn's writes have settled: a read counts only if the key's
        contents stay the same and its TTL only decays over the settle window after it. A write
        still in flight (an un-awaited task, an append waiting for its EXPIRE) makes the read
        unsettled, and an unsettled read is never evidence of a TTL rule."""
        key = await self._session_key(ctx)
        if key is None:
            return
        deadline = time.monotonic() + TTL_SETTLE_DEADLINE_S
        prev = self._snapshot(key)
        while True:
            # The settle window: how long the key must stay as read (bounded by the deadline).
            await asyncio.sleep(TTL_SETTLE_S)
            cur = self._snapshot(key)
            tol_ms = 5 + (prev[1] + cur[1]) / 2
            same = cur[3:] == prev[3:] and (cur[2] == prev[2] == -1 or cur[2] == prev[2] == -2 or (
                cur[2] >= 0 and prev[2] >= 0 and cur[2] <= prev[2] + tol_ms))
            if same or time.monotonic() > deadline:
                t.ttl.append(TtlObs(turn, prev[0], prev[2], prev[3], round(prev[1], 2), settled=same))
                return
            prev = cur

    def _redis_call(self, fn: Callable[["redis.Redis"], Any]) -> Any:
        try:
            return fn(self._redis())
        except redis.RedisError:
            self.close()
            self._r = None  # a restarted Redis breaks the old connection: one new try
            return fn(self._redis())

    def _key(self, key: str) -> tuple[int, str, list[bytes]]:
        """(PTTL, type, raw values) of a key, read directly from the lab's Redis. The storage
        format is the app's business: the lab only counts values and searches them for text."""
        def read(r: "redis.Redis") -> tuple[int, str, list[bytes]]:
            pttl = int(r.pttl(key))
            kind = r.type(key)
            kind = kind.decode() if isinstance(kind, bytes) else str(kind)
            got: list[Any] = []
            if kind == "list":
                got = list(r.lrange(key, 0, -1))
            elif kind == "string":
                got = [r.get(key) or b""]
            elif kind == "hash":
                got = list(r.hvals(key))
            elif kind == "zset":
                got = list(r.zrange(key, 0, -1))
            elif kind == "set":
                got = sorted(r.smembers(key))
            elif kind == "stream":
                got = [repr(e) for e in r.xrange(key) or []]
            # The client answers bytes (no decode_responses): text is encoded alike for the search.
            return pttl, kind, [v if isinstance(v, bytes) else str(v).encode() for v in got]
        # A restarted Redis (the redis_restart experiment) breaks the old connection: one retry.
        result: tuple[int, str, list[bytes]] = self._redis_call(read)
        return result

    async def _redis_final(self, ctx: BrowserContext, t: Trial) -> None:
        """The key after the history settled: its dump, and the trial's last (settled) TTL read."""
        key = await self._session_key(ctx)
        if key is None:
            return
        t0 = time.time()
        pttl, kind, values = self._key(key)
        t1 = time.time()
        raw = b"\n".join(values)
        t.redis_final = {"key": key, "type": kind, "pttl_ms": pttl, "values": len(values),
                         "stored_turns": [s.turn for s in t.sends if s.text.encode() in raw]}
        if t.sends and pttl != -2:
            t.ttl.append(TtlObs(max(s.turn for s in t.sends), (t0 + t1) / 2, pttl, len(values),
                                round((t1 - t0) * 1000, 2)))

    def _redis(self) -> "redis.Redis":
        if self._r is None:
            self._r = redis.Redis.from_url(self.redis_url, socket_timeout=5, retry=None)
        return self._r

    async def _final_read(self, ctx: BrowserContext, t: Trial) -> list[Row] | None:
        """Read the history (same cookies) until it stays the same for QUIET_S; None if it never
        does before the deadline, or never answers in the spec's form."""
        deadline = time.monotonic() + QUIESCENCE_DEADLINE_S
        last: Read | None = None
        since = time.monotonic()
        seen: list[list[Row]] = []     # distinct contents, in order of first sight
        ok_reads = changes = returns = 0
        while time.monotonic() < deadline:
            resp = await ctx.request.get(self.spec.url(self.spec.history.path),
                                         timeout=self.spec.chat.timeout_s * 1000, fail_on_status_code=False)
            raw = {"status": resp.status, "body": await resp.text(), "error": None}
            read = self._as_rows(raw, t)
            if not read.ok:
                pass  # a failed read says nothing about the stored history: keep waiting
            elif last is None or read.rows != last.rows:
                ok_reads += 1
                if last is not None:
                    changes += 1
                    # Going back to contents read before is not a write landing late: the
                    # reads disagree with each other.
                    returns += read.rows in seen
                if read.rows not in seen:
                    seen.append(read.rows or [])
                last, since = read, time.monotonic()
            elif time.monotonic() - since >= QUIET_S:
                return last.rows
            else:
                ok_reads += 1
            # A polling interval bounded by the deadline, not a guess at how long a write takes.
            await asyncio.sleep(0.05)
        if returns >= 2:
            t.flapping = {"reads": ok_reads, "changes": changes, "returns": returns,
                          "rows": [len(x) for x in seen[:6]]}
        t.unknown = t.unknown or ("the history never settled (no 2xx read of the spec's form "
                                  f"stable for {QUIET_S} s within {QUIESCENCE_DEADLINE_S:g} s)"
                                  + (f"; {returns} reads went back to earlier contents" if returns >= 2 else ""))
        return None

    def close(self) -> None:
        if self._r is not None:
            self._r.close()


async def preflight(prober: Prober, attempts: int = 3) -> str:
    """One send and one history read, no fault: the target must answer in its spec's form, or
    the investigation would measure the spec, not the app. A contract error stops the run at
    once: a 4xx to the send, a 2xx whose body is not of the spec's form, the message shown under
    another role. What an app may do by itself -- 5xx, a history that never settles, the message
    missing (lost) -- is for the experiments to find: retried, then reported as a warning.
    Returns a line of evidence."""
    from lab.investigate.target import TargetError

    spec = prober.spec
    notes: list[str] = []
    for attempt in range(1, attempts + 1):
        t = await prober.trial(Experiment("none", (), "settled", 1, "contract check"), f"preflight{attempt}",
                               attempt)
        if not t.sends:
            raise TargetError(f"the contract check could not send: {t.unknown}",
                              "check the spec's [page] selectors or the target's log")
        s = t.sends[0]
        hard: list[str] = []
        if s.status is not None and 400 <= s.status < 500 or s.outcome == "info" and s.status is not None \
                and 200 <= s.status < 300:
            hard.append(f"POST {spec.chat.path} {{{spec.chat.message_field!r}: ...}} answered {s.status}"
                        f"{' as an HTML page' if s.html else ''}: {s.reason.strip()[:160]}; "
                        f"expected 2xx" + (f" with JSON at {spec.chat.reply_path}" if spec.chat.reply_path else ""))
        outside = [e for e in t.errors if e.startswith("history outside the spec: ")]
        if outside:
            hard.append(f"GET {spec.history.path} answered 2xx but {outside[0]}; expected "
                        f"a JSON list of {spec.history.format} at {spec.history.items}")
        rows = t.final_rows or []
        roles = sorted({r.role for r in rows if s.text in r.text})
        if roles and "user" not in roles:
            shown = {"assistant": spec.history.assistant_role}.get(roles[0], roles[0])
            hard.append(f"GET {spec.history.path} shows the message just sent under role {shown!r}; "
                        f"expected history.user_role = {spec.history.user_role!r}")
        # The app's page did not behave as its selectors say: the spec's [page] is wrong.
        hard += [f"{e[len('page: '):]}; fix [page] in the spec" for e in
                 [s.reason, *t.errors] if e and e.startswith("page: ")]
        if hard:
            raise TargetError("the target answers outside its spec:\n  - " + "\n  - ".join(hard),
                              "fix the spec's [chat]/[history] sections (or the app); nothing was left running")
        if s.outcome == "ok" and roles:
            return f"contract ok: send {s.status} in {s.ms or 0:.0f} ms, history shows it" + (
                f" (after {attempt - 1} attempt(s) that did not: {'; '.join(notes)})" if notes else "")
        if s.outcome != "ok":
            notes.append(f"send answered {s.status or s.reason}{' (HTML)' if s.html else ''}")
        elif t.final_rows is None:
            notes.append(t.unknown or "the history never settled")
        else:
            notes.append(f"the message acknowledged ({s.status}) is not in the settled history "
                         f"({len(rows)} rows)")
    return (f"warning: the contract could not be confirmed in {attempts} attempts ({'; '.join(notes)}); "
            "the answers were in the spec's form, so this may be the app itself: the experiments go on "
            "(if every trial comes out unknown, check the spec)")


def phases(t: Trial) -> dict[str, float]:
    """Seconds per phase of one trial (context, open, send, ttl, refresh, settle, key, close)."""
    marks = [(e["phase"], float(e["t"])) for e in t.events if e.get("kind") == "phase"]
    out: dict[str, float] = {}
    for (_, a), (name, b) in zip(marks, marks[1:]):
        out[name] = out.get(name, 0.0) + (b - a)
    return out


@asynccontextmanager
async def chromium() -> AsyncIterator[Browser]:
    from playwright.async_api import async_playwright

    from lab.browser import executable
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=executable())
        try:
            yield browser
        finally:
            await browser.close()
