"""Black-box trials: fault x refresh point x turns against a target the lab did not write.

Each trial is a real conversation in Chromium through the lab's page on the target's origin.
Sends are recorded ok / fail / info from the answers; after the refresh point the lab records
what the page shows; then every fault is healed and the history is read until it stops changing
(quiescence without backend events), else the trial is unknown.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

import redis
from playwright.sync_api import Browser, BrowserContext, Page, Route

from lab.faults import base as faults
from lab.investigate import app_page
from lab.investigate.page import PAGE_PATH, html
from lab.investigate.records import Read, SendRec, TrialRec, TtlObs
from lab.investigate.spec import Spec, json_path, parse_history

QUIET_S = 0.5          # the history must stay the same this long to count as settled
QUIESCENCE_DEADLINE_S = 15.0


@dataclass(frozen=True)
class Experiment:
    fault: str
    params: tuple[tuple[str, Any], ...]
    refresh: str
    turns: int
    why: str

    @property
    def cell_id(self) -> str:
        p = ",".join(f"{k}={v}" for k, v in self.params)
        return f"{self.fault}{'(' + p + ')' if p else ''}/{self.refresh}/t{self.turns}"


def optional_plan(turns: int) -> list[Experiment]:
    """Opt-in (--only): these test the environment as much as the app."""
    return [
        Experiment("redis_restart", (("durable", False),), "settled", turns,
                   "Redis killed and restarted before one send: loss when Redis has no persistence "
                   "(the lab's Redis has none: this checks what the app does about it)"),
    ]


def default_plan(turns: int, streams: bool = False) -> list[Experiment]:
    """Each experiment is there for the causes it can expose (the `why`). ``streams``: the
    spec has a [stream] section, so a reply can be cut mid-stream."""
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
    ]


def long_turns(turns: int) -> int:
    """The long conversation's length: long enough for the caps apps commonly set on a history
    (10-20 messages), short enough to stay a few seconds per trial."""
    return min(100, max(12, 4 * turns))


@dataclass
class Prober:
    """Runs trials of one target in one browser. ``fault_targets`` is the lab's Redis link."""

    spec: Spec
    browser: Browser
    fault_targets: faults.Targets
    redis_url: str                         # the lab's Redis, direct (not through Toxiproxy)
    _r: "redis.Redis[bytes] | None" = field(default=None, init=False)

    # ------------------------------------------------------------------ one trial
    def trial(self, exp: Experiment, trial_id: str) -> TrialRec:
        rec = TrialRec(trial_id, exp.fault, dict(exp.params), exp.refresh, exp.turns)
        fault = faults.make(exp.fault, **dict(exp.params))
        one_shot = fault.window == "send"
        rec.fault_turn = min(2, exp.turns) if one_shot else None
        nonce = secrets.token_hex(3)
        t0 = time.monotonic()
        ctx = self.browser.new_context()
        try:
            page, _ = self._open(ctx)
            with ExitStack() as whole:
                if not one_shot and exp.fault != "none":
                    rec.fault_evidence = whole.enter_context(fault.on(self.fault_targets))
                for turn in range(1, exp.turns + 1):
                    armed = one_shot and turn == rec.fault_turn
                    with fault.on(self.fault_targets) if armed else nullcontext() as evidence:
                        if armed:
                            rec.fault_evidence = evidence
                        # The app's own page streams if the app does; the lab's page asks for a
                        # stream only where it cuts one.
                        streamed = exp.refresh == "mid_stream" or (
                            self.spec.page is not None and self.spec.stream is not None)
                        cut = exp.refresh == "mid_stream" and turn == exp.turns
                        send = self._send(page, trial_id, turn, nonce, streamed, cut)
                        send.under_fault = armed
                    rec.sends.append(send)
                    self._observe_ttl(ctx, rec, turn)
                if exp.refresh in ("after_ack", "mid_stream"):
                    # Inside the fault window, right after the last acknowledgement (for
                    # mid_stream: right after the cut of the last reply's stream).
                    rec.page_after = self._reload(page, rec)
            # Healed from here on.
            rec.cookie_persistent = self._cookie_persistent(ctx)
            if exp.refresh == "settled":
                rec.page_after = self._reload(page, rec)
            elif exp.refresh == "browser_restart":
                rec.page_after = self._browser_restart(ctx, rec)
            rec.final = self._final_read(ctx, rec)
            self._redis_final(ctx, rec)
            if not any(s.outcome == "ok" for s in rec.sends):
                rec.unknown = "no send was acknowledged: the trial exercised nothing"
            elif exp.refresh == "mid_stream":
                last = rec.sends[-1]
                if last.outcome != "ok":
                    rec.unknown = f"the last send, to be cut mid-stream, failed ({last.status}): nothing cut"
                elif not last.cut:
                    rec.unknown = (f"the last reply came whole in its first chunk ({last.ms:.0f} ms): "
                                   "nothing was cut mid-stream")
        except faults.FaultNotConfirmed as exc:
            rec.unknown = f"fault not confirmed: {exc}"
        finally:
            ctx.close()
            rec.seconds = round(time.monotonic() - t0, 3)
        return rec

    # ------------------------------------------------------------------ steps
    def _open(self, ctx: BrowserContext) -> tuple[Page, dict[str, Any]]:
        """A new page showing the conversation, and its first history read (raw)."""
        page = ctx.new_page()
        if self.spec.page is not None:
            return page, app_page.load(page, self.spec, lambda: page.goto(self.spec.url(self.spec.page.path)))  # type: ignore[union-attr]
        body = html(self.spec)

        def serve(route: Route) -> None:
            route.fulfill(status=200, content_type="text/html; charset=utf-8", body=body)

        # The page lives on the target's own origin, served by the browser: cookies are real.
        ctx.route(self.spec.url(PAGE_PATH), serve)
        page.goto(self.spec.url(PAGE_PATH))
        # A user types once the page shows its history. Sending earlier races the page's own
        # GET of the history: both go out without a cookie, each may start a session, and the
        # later Set-Cookie wins -- the first message then lands in another conversation.
        return page, page.evaluate("window.labLoaded")

    def _as_read(self, raw: dict[str, Any], rec: TrialRec) -> Read:
        rec.history_reads.append(raw["status"])
        if raw["status"] is None or not 200 <= raw["status"] < 300:
            return Read(raw["status"], None, raw["error"] or f"HTTP {raw['status']}: {raw['body'][:120]!r}")
        if "rows" in raw:  # the app's own page: what it rendered
            return Read(raw["status"], raw["rows"], raw["error"])
        try:
            return Read(raw["status"], parse_history(self.spec.history, raw["body"]))
        except ValueError as exc:
            return Read(raw["status"], None, f"history outside the spec: {exc}")

    def _send(self, page: Page, trial_id: str, turn: int, nonce: str, streamed: bool = False,
              cut: bool = False) -> SendRec:
        # Unique text per message: without message ids the lab matches rows by their text.
        text = f"chaoslab probe {trial_id} turn {turn} {nonce}"
        if self.spec.page is not None:
            raw = app_page.send(page, self.spec, text, cut)
        else:
            mid = f"{trial_id}-t{turn}-{nonce}" if self.spec.chat.id_field else None
            raw = page.evaluate("([t, i, s, m]) => labSend(t, i, s, m)",
                                [text, mid, streamed, "cut" if cut else "read"])
        status = raw["status"]
        is_html = "text/html" in raw["type"]
        error = raw["error"]
        if status is None:
            outcome = "info"  # timeout / connection reset: it may have landed
        elif 200 <= status < 300:
            outcome = "ok"
            if self.spec.chat.reply_path and not streamed:  # a stream's body is the app's own format
                try:
                    json_path(json.loads(raw["body"]), self.spec.chat.reply_path)
                except (ValueError, KeyError) as exc:
                    outcome, error = "info", f"2xx outside the spec ({self.spec.chat.reply_path}): {exc}"
        elif 400 <= status < 500:
            outcome = "fail"
        else:
            outcome = "info"  # 5xx: the write may or may not have been applied
        if status is not None and status >= 400 and error is None:
            error = raw["body"][:160]
        return SendRec(turn, text, outcome, status, round(raw["ms"], 1), time.time(), is_html, error,
                       streamed=streamed, cut=raw["cut"] if cut else None)

    def _reload(self, page: Page, rec: TrialRec) -> Read:
        if self.spec.page is not None:
            return self._as_read(app_page.load(page, self.spec, page.reload), rec)
        page.reload()
        return self._as_read(page.evaluate("window.labLoaded"), rec)

    def _browser_restart(self, ctx: BrowserContext, rec: TrialRec) -> Read:
        # A browser restart keeps only persistent cookies (expires != -1).
        kept = [c for c in ctx.cookies() if c.get("expires", -1) != -1]
        fresh = self.browser.new_context()
        try:
            if kept:
                fresh.add_cookies(kept)  # type: ignore[arg-type]
            return self._as_read(self._open(fresh)[1], rec)
        finally:
            fresh.close()

    def _cookie(self, ctx: BrowserContext) -> dict[str, Any] | None:
        return next((dict(c) for c in ctx.cookies(self.spec.http.base_url)
                     if c["name"] == self.spec.http.cookie), None)

    def _cookie_persistent(self, ctx: BrowserContext) -> bool | None:
        c = self._cookie(ctx)
        return None if c is None else c.get("expires", -1) != -1

    def _session_key(self, ctx: BrowserContext) -> str | None:
        """The conversation's Redis key for this context's session ([redis] key), if known."""
        c = self._cookie(ctx)
        if not self.spec.redis.key or c is None:
            return None
        return self.spec.redis.key.replace("{session}", str(c["value"]))

    def _observe_ttl(self, ctx: BrowserContext, rec: TrialRec, turn: int) -> None:
        key = self._session_key(ctx)
        if key is None:
            return
        t0 = time.time()
        pttl = int(self._redis_call(lambda r: r.pttl(key)))
        t1 = time.time()
        _pttl, _kind, values = self._key(key)
        # The PTTL's moment is known to within its round trip: the midpoint, and the spread.
        rec.ttl.append(TtlObs(turn, (t0 + t1) / 2, pttl, len(values), round((t1 - t0) * 1000, 2)))

    def _redis_call(self, fn: Callable[["redis.Redis[bytes]"], Any]) -> Any:
        try:
            return fn(self._redis())
        except redis.RedisError:
            self.close()
            self._r = None  # a restarted Redis breaks the old connection: one new try
            return fn(self._redis())

    def _key(self, key: str) -> tuple[int, str, list[bytes]]:
        """(PTTL, type, raw values) of a key, read directly from the lab's Redis. The storage
        format is the app's business: the lab only counts values and searches them for text."""
        for attempt in (1, 2):
            try:
                r = self._redis()
                pttl = int(r.pttl(key))
                kind = r.type(key)
                kind = kind.decode() if isinstance(kind, bytes) else str(kind)
                values: list[bytes] = []
                if kind == "list":
                    values = list(r.lrange(key, 0, -1))
                elif kind == "string":
                    values = [r.get(key) or b""]
                elif kind == "hash":
                    values = list(r.hvals(key))
                elif kind == "zset":
                    values = list(r.zrange(key, 0, -1))
                elif kind == "set":
                    values = list(r.smembers(key))
                elif kind == "stream":
                    values = [repr(e).encode() for e in r.xrange(key)]
                return pttl, kind, values
            except redis.RedisError:
                # A restarted Redis (the redis_restart experiment) breaks the old connection.
                self.close()
                self._r = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _redis_final(self, ctx: BrowserContext, rec: TrialRec) -> None:
        key = self._session_key(ctx)
        if key is None:
            return
        pttl, kind, values = self._key(key)
        raw = b"\n".join(values)
        rec.redis_final = {"key": key, "type": kind, "pttl_ms": pttl, "values": len(values),
                           "stored_turns": [s.turn for s in rec.sends if s.text.encode() in raw]}

    def _redis(self) -> "redis.Redis[bytes]":
        if self._r is None:
            self._r = redis.Redis.from_url(self.redis_url, socket_timeout=5, retry=None)
        return self._r

    def _final_read(self, ctx: BrowserContext, rec: TrialRec) -> Read | None:
        """Read the history (same cookies) until it stays the same for QUIET_S; None if it never
        does before the deadline, or never answers in the spec's form."""
        deadline = time.monotonic() + QUIESCENCE_DEADLINE_S
        last: Read | None = None
        since = time.monotonic()
        seen: list[list[tuple[str, str]]] = []     # distinct contents, in order of first sight
        ok_reads = changes = returns = 0
        while time.monotonic() < deadline:
            resp = ctx.request.get(self.spec.url(self.spec.history.path), timeout=self.spec.chat.timeout_s * 1000,
                                   fail_on_status_code=False)
            raw = {"status": resp.status, "body": resp.text(), "error": None}
            read = self._as_read(raw, rec)
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
                return last
            else:
                ok_reads += 1
            # A polling interval bounded by the deadline, not a guess at how long a write takes.
            time.sleep(0.05)
        if returns >= 2:
            rec.flapping = {"reads": ok_reads, "changes": changes, "returns": returns,
                            "rows": [len(x) for x in seen[:6]]}
        rec.unknown = rec.unknown or ("the history never settled (no 2xx read of the spec's form "
                                      f"stable for {QUIET_S} s within {QUIESCENCE_DEADLINE_S:g} s)"
                                      + (f"; {returns} reads went back to earlier contents" if returns >= 2 else ""))
        return None

    def close(self) -> None:
        if self._r is not None:
            self._r.close()


def preflight(prober: Prober, attempts: int = 3) -> str:
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
        rec = prober.trial(Experiment("none", (), "settled", 1, "contract check"), f"preflight{attempt}")
        s = rec.sends[0]
        hard: list[str] = []
        if s.status is not None and 400 <= s.status < 500 or s.outcome == "info" and s.status is not None \
                and 200 <= s.status < 300:
            hard.append(f"POST {spec.chat.path} {{{spec.chat.message_field!r}: ...}} answered {s.status}"
                        f"{' as an HTML page' if s.html else ''}: {(s.error or '').strip()[:160]}; "
                        f"expected 2xx" + (f" with JSON at {spec.chat.reply_path}" if spec.chat.reply_path else ""))
        reads = [x for x in (rec.page_after, rec.final) if x is not None]
        bad_form = next((x for x in reads if x.status is not None and 200 <= x.status < 300 and x.rows is None), None)
        if bad_form is not None:
            hard.append(f"GET {spec.history.path} answered {bad_form.status} but {bad_form.error}; expected "
                        f"a JSON list of {spec.history.format} at {spec.history.items}")
        rows = rec.final.rows or [] if rec.final is not None else []
        roles = sorted({role for role, c in rows if s.text in c})
        if roles and spec.history.user_role not in roles:
            hard.append(f"GET {spec.history.path} shows the message just sent under role {roles[0]!r}; "
                        f"expected history.user_role = {spec.history.user_role!r}")
        # The app's page did not behave as its selectors say: the spec's [page] is wrong.
        hard += [f"{x.error[len('page: '):]}; fix [page] in the spec" for x in
                 [s, *(y for y in (rec.page_after, rec.final) if y is not None)]
                 if x.error and x.error.startswith("page: ")]
        if hard:
            raise TargetError("the target answers outside its spec:\n  - " + "\n  - ".join(hard),
                              "fix the spec's [chat]/[history] sections (or the app); nothing was left running")
        if s.outcome == "ok" and roles:
            return f"contract ok: send {s.status} in {s.ms:.0f} ms, history shows it" + (
                f" (after {attempt - 1} attempt(s) that did not: {'; '.join(notes)})" if notes else "")
        if s.outcome != "ok":
            notes.append(f"send answered {s.status or s.error}{' (HTML)' if s.html else ''}")
        elif rec.final is None:
            notes.append(rec.unknown or "the history never settled")
        else:
            notes.append(f"the message acknowledged ({s.status}) is not in the settled history "
                         f"({len(rows)} rows)")
    return (f"warning: the contract could not be confirmed in {attempts} attempts ({'; '.join(notes)}); "
            "the answers were in the spec's form, so this may be the app itself: the experiments go on "
            "(if every trial comes out unknown, check the spec)")


@contextmanager
def chromium() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    from lab.runner import CHROMIUM
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM)
        try:
            yield browser
        finally:
            browser.close()
