"""Black-box trials: fault x refresh point x turns against a target the lab did not write.

Each trial is a real conversation in Chromium through the lab's page on the target's origin. Sends
are recorded ok / fail / info from the answers; after the refresh point, what the page shows; then
every fault is healed and the history read until it stops changing (else the trial is unknown).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict, Unpack

from playwright.async_api import Browser, BrowserContext, Page

from lab.investigate.evidence.answers import Answer, HistoryRead
from lab.faults import base as faults
from lab.model.history import Send, Trial, TtlObs
from lab.investigate.browser import app_frames, app_page, cut, settle
from lab.investigate.evidence.rows import answer, replies_from
from lab.investigate.spec.parse import Spec
from lab.plan.lockstep import Lockstep
from lab.model import concurrency, context
from lab.investigate.run import mid_write
from lab.investigate.run.experiments import TWO_TAB_ROUNDS, Experiment, probe_message
from lab.investigate.evidence.keys import KeyReader, read_final
from lab.investigate.evidence.store import NO_KEY, StoreMonitor
from lab.stack.model_link import ModelLink
from lab.investigate.browser.pages import Pages, Read, mark_dropped
from lab.driver.slots import Slot
from lab.plan.schedule import CONCURRENT_POINTS


class SendOptions(TypedDict, total=False):
    """A send's options (Prober._send_raw's)."""

    streamed: bool
    cut: bool
    tab: str
    in_page: bool


@dataclass
class Prober:
    """Trials of one target in one browser, concurrently (a browser context each); a fault acts
    on the whole link (``fault_targets``): a group's trials share it through one ``Lockstep``."""

    spec: Spec
    browser: Browser
    fault_targets: faults.Targets
    redis_url: str  # the lab's Redis, direct (not through Toxiproxy)
    keys: KeyReader = field(init=False)
    pages: Pages = field(init=False)
    store: StoreMonitor | None = None  # the store's record, where the run follows one
    model: ModelLink | None = None  # the stand-in model ([model]): its record of the calls

    def __post_init__(self) -> None:
        self.keys = KeyReader(self.redis_url)
        self._final_values: list[bytes] = []  # the last _redis_final's raw values
        self.pages = Pages(self.spec, self.browser, find=self.keys.find)

    async def close_pool(self) -> None:
        await self.pages.close()

    async def _reload(self, page: Page, t: Trial) -> Read:
        return self._as_rows(await self.pages.reload(page), t)

    # ------------------------------------------------------------------ one trial
    async def trial(
        self,
        exp: Experiment,
        trial_id: str,
        seed: int,
        step: Lockstep | None = None,
        *,
        into: Trial | None = None,
        slot: Slot | None = None,
        reloaded: Callable[[], None] = lambda: None,
    ) -> Trial:
        """One trial (``into`` a Trial the caller made, else a new one); a broken browser makes it
        unknown, never a pass. ``step`` arms the experiment's fault (built once for the trial's
        group; None: none). ``slot``: the runner's context (marked broken if it failed), else one
        of the pool's. ``reloaded``: called once the refresh is done (the rest waits on the app)."""
        t = into or Trial(trial_id)
        t.trial_id, t.fault, t.fault_params, t.refresh, t.turns, t.seed = (
            trial_id, exp.fault, dict(exp.params), exp.refresh, exp.turns, seed
        )  # fmt: skip
        if slot is not None:
            return await self._trial(exp, t, step, slot, reloaded)
        slot = await self.pages.pool.take()
        try:
            return await self._trial(exp, t, step, slot, reloaded)
        finally:
            await self.pages.pool.put(slot)

    async def _trial(
        self, exp: Experiment, t: Trial, step: Lockstep | None, slot: Slot, reloaded: Callable[[], None]
    ) -> Trial:
        one_shot = step is not None and step.fault.window == "send"
        windowed = step is not None and not one_shot
        t.fault_turn = min(2, exp.turns) if one_shot else None
        nonce = f"{random.Random(t.seed).randrange(16**6):06x}"
        t0 = time.monotonic()
        t.mark("phase", phase="start")
        await self.pages.ready(slot)
        ctx, page = slot.ctx, slot.page
        in_window = False
        broken = False
        try:
            t.mark("phase", phase="context")
            loaded = await self.pages.load(ctx, page)
            self._as_rows(loaded, t)
            t.mark("phase", phase="open")
            if windowed:
                assert step is not None
                in_window = True
                if not await step.arm():
                    t.unknown = f"fault not confirmed: {step.error}"
                t.fault_evidence = step.evidence
            for turn in range(1, exp.turns + 1):
                if t.unknown or not await self._turn(ctx, page, exp, t, turn, nonce, step):
                    break
            missed, before_cut = (
                await self._cut_reload(ctx, page, t) if exp.refresh == "mid_stream" and not t.unknown else (None, None)
            )
            if in_window:
                assert step is not None
                in_window = False
                await step.heal()
            # Healed from here on.
            if not t.unknown:
                await self._after(ctx, page, t, reloaded)
                if before_cut is not None and t.sends and t.sends[-1].cut:
                    missed = missed or cut.stored_before(before_cut, self._final_values, t)
            # Judged as far as it goes (its reads are evidence), but it claims no cut.
            t.unknown = t.unknown or missed
        except Exception as exc:  # the browser or the target broke: unknown, with the reason
            broken = True
            t.unknown = t.unknown or f"driver: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
            if step is not None:
                step.abandon()  # the group must not wait at a barrier for this trial
        finally:
            if in_window and step is not None:
                await step.heal()
            mark_dropped(t.sends, self.pages.dropped)  # the events have long arrived by now
            slot.broken = slot.broken or broken
            t.mark("phase", phase="close")
            t.seconds = round(time.monotonic() - t0, 3)
        return t

    async def _turn(
        self, ctx: BrowserContext, page: Page, exp: Experiment, t: Trial, turn: int, nonce: str, step: Lockstep | None
    ) -> bool:
        """One turn (``step``: the trial's fault; a one-send one is armed around the fault turn).
        False: stop here."""
        armed = step is not None and step.fault.window == "send" and turn == t.fault_turn
        if armed:
            assert step is not None
            if not await step.arm():
                t.unknown = f"fault not confirmed: {step.error}"
                await step.heal()
                return False
            t.fault_evidence = step.evidence
        # The app's own page streams if the app does; the lab's page asks only where it cuts one.
        streamed = (
            exp.refresh == "mid_stream"
            or self.spec.transport is not None  # frames: every reply streams
            or (self.spec.page is not None and self.spec.stream is not None)
        )
        cut = exp.refresh == "mid_stream" and turn == exp.turns
        together = exp.refresh in CONCURRENT_POINTS and turn >= exp.turns - TWO_TAB_ROUNDS[exp.refresh] + 1
        try:
            if together:
                sent = await self._send_together(ctx, page, exp.refresh, t.trial_id, turn, nonce, exp.gap_ms or 0)
            elif exp.refresh == "in_flight" and turn == exp.turns:  # reloaded inside its writes
                sent = [await mid_write.send_mid_write(self, ctx, page, t, turn, nonce, streamed)]
            elif armed and step is not None and getattr(step.fault, "at", "send") != "send":  # its moment
                moment = mid_write.AT_WRITE[step.fault.name]
                sent = [await moment(self, ctx, page, t, turn, nonce, streamed, step)]
            elif exp.refresh == "after_ack" and turn == exp.turns:  # reloaded the moment its answer arrives
                sent = [await mid_write.send_then_reload(self, page, t, turn, nonce, streamed, exp.delay_ms)]
            else:
                send, raw = await self._send_raw(page, t.trial_id, turn, nonce, streamed, cut)
                if armed and (why := await settle.not_answered(self.model, self.spec, send, raw)):
                    send.outcome, send.reason = "info", why  # the app told its user its own way
                sent = [send]
        finally:
            if armed:
                assert step is not None
                await step.heal()
        for send in sent:
            send.under_fault = armed
        t.sends.extend(sent)
        if lost := next((s for s in sent if s.reason.startswith(app_page.NOT_SENT)), None):
            # The lab's own step failed: this turn tested nothing of the app.
            t.unknown = t.unknown or f"driver: turn {lost.turn}: {lost.reason}"
            return False
        if together:
            # A black box has no backend events: both requests in flight together as the
            # browser saw them (an app that serializes them rightly passes).
            t.concurrent = concurrency.at_browser(sent)
            gap = concurrency.window_problem(t.concurrent, exp.gap_ms)
            t.unknown = t.unknown or gap
        t.mark("phase", phase="send")
        await self._observe_ttl(ctx, t, turn, step)
        t.mark("phase", phase="ttl")
        return True

    async def _after(self, ctx: BrowserContext, page: Page, t: Trial, done: Callable[[], None]) -> None:
        """The refresh point (if not inside the fault window), then (``done``: the page's part is
        over) the settled read and the key."""
        t.cookie_persistent = await self.pages.cookie_persistent(ctx)
        t.cookie_scope = await self.pages.identity.cookie_scope(ctx)
        # The lab's page only reads as it reloads: the settled read polls beside it (settled only on
        # reads begun after it; no model call to wait out first). Measured: 0.11 s of a 1.5 s trial.
        reloaded, final = asyncio.Event(), None
        if t.refresh in ("settled", *CONCURRENT_POINTS) and self.spec.page is None and self.model is None:
            final = asyncio.ensure_future(settle.final_read(self.pages, ctx, t, self._as_rows, reloaded))
        try:
            if t.refresh in ("settled", *CONCURRENT_POINTS):
                t.mark("refresh")
                self._page_after(await self._reload(page, t), t)
            elif t.refresh == "browser_restart":
                t.mark("refresh")
                self._page_after(self._as_rows(await self.pages.browser_restart(ctx), t), t)
        except BaseException:
            if final is not None:
                final.cancel()
            raise
        reloaded.set()
        t.mark("phase", phase="refresh")
        done()
        if final is None:
            await settle.model_ended(self.model, t)
        t.final_rows = await (final or settle.final_read(self.pages, ctx, t, self._as_rows))
        replies_from(t.final_rows or [], t.sends)  # before the store's record places the replies' writes
        t.mark("phase", phase="settle")
        if self.model is not None:
            # Every call has ended (model_ended); read before the store's record, which finds their
            # replies in the app's writes.
            t.model_calls = await asyncio.to_thread(self.model.calls, [s.text for s in t.sends], context.calls_since(t))
            t.unknown = t.unknown or context.fault_missed(t)
        await self._redis_final(ctx, t)
        t.mark("phase", phase="key")
        # A trial with no acknowledged send is the checker's to call unknown (lab.model.checker).
        if t.refresh == "mid_stream" and any(s.outcome == "ok" for s in t.sends):
            t.unknown = cut.not_cut(t, self.spec.page is None) or t.unknown

    def _page_after(self, read: Read, t: Trial) -> Read:
        t.page_after_refresh = read.rows if read.rows is not None else []
        t.page_error = self.pages.error_of(read, max((e["t"] for e in t.events if e["kind"] == "refresh"), default=0))
        return read

    # ------------------------------------------------------------------ steps
    def _as_rows(self, raw: HistoryRead, t: Trial) -> Read:
        read = self.pages.rows(raw)
        t.history_read(raw["status"], before_sends=not t.sends)
        if read.error and read.error not in t.errors and read.error.startswith(("page: ", "history outside the spec")):
            t.errors.append(read.error)  # the spec's contract, not the app's behaviour: preflight reads it
        return read

    async def _send_together(
        self, ctx: BrowserContext, page: Page, pattern: str, trial_id: str, turn: int, nonce: str, gap_ms: int = 0
    ) -> list[Send]:
        """The last turn sent twice at nearly the same moment: from a second tab of the same
        context (two_tabs: another message), or the same message under the same id twice from
        the lab's page (double_submit: a double click; the plan has it only where the API takes
        an id and the lab's page drives it)."""
        if pattern == "double_submit":
            return list(await asyncio.gather(*(self._send(page, trial_id, turn, nonce) for _ in range(2))))
        tab, _ = await self.pages.open(ctx)

        async def second() -> Send:
            if gap_ms:  # lab window: the user's pause between the two tabs, the variable swept
                await asyncio.sleep(gap_ms / 1000)
            return await self._send(tab, trial_id, turn, nonce, tab="b", in_page=True)

        try:
            return list(await asyncio.gather(self._send(page, trial_id, turn, nonce, in_page=True), second()))
        finally:
            await tab.close()

    async def _send(self, page: Page, trial_id: str, turn: int, nonce: str, **kw: Unpack[SendOptions]) -> Send:
        """The send, as the lab judges it."""
        return (await self._send_raw(page, trial_id, turn, nonce, **kw))[0]

    async def _send_raw(
        self,
        page: Page,
        trial_id: str,
        turn: int,
        nonce: str,
        streamed: bool = False,
        cut: bool = False,
        tab: str = "",
        in_page: bool = False,
    ) -> tuple[Send, Answer]:
        """The send, and its answer as the page had it (a stream's body in the app's own format)."""
        text, mid = probe_message(self.spec, trial_id, turn, nonce, tab)
        t_invoke = time.time()
        if self.spec.page is not None:
            driver = app_frames if self.spec.transport is not None else app_page
            raw = await driver.send(page, self.spec, text, cut, in_page)
        else:
            raw = await page.evaluate(
                "([t, i, s, m]) => labSend(t, i, s, m)", [text, mid, streamed, "cut" if cut else "read"]
            )
        return answer(self.spec, raw, mid or f"t{turn}{tab}", text, turn, streamed, cut, t_invoke), raw

    async def _observe_ttl(self, ctx: BrowserContext, t: Trial, turn: int, step: Lockstep | None) -> None:
        """The key's PTTL once the turn's writes have settled (lab.investigate.evidence.keys: the
        quiet window outlasts one step of the app's writes under the trial's fault)."""
        if (key := await self.pages.session_key(ctx, t.texts)) is not None:
            # A one-send fault is healed before this (drop at=write's hold: 1.3 s of a 2.4 s trial).
            delay_ms = step.fault.step_delay_ms() if step and step.fault.window == "trial" else 0.0
            t.ttl.append(await self.keys.settled_ttl(key, turn, delay_ms, self.store))

    async def _redis_final(self, ctx: BrowserContext, t: Trial) -> None:
        """The key after the history settled: its dump, and the trial's last (settled) TTL read."""
        if (key := await self.pages.session_key(ctx, t.texts)) is None:
            t.store_note = NO_KEY  # what no record can say, the checker does not claim (lab.model.refusal)
            return
        since = t.events[0]["t"] if t.events else time.time()
        pttl, self._final_values, t0, t1 = read_final(self.keys, t, key, self.store, since, self.spec.redis)
        if t.sends and pttl != -2:
            turn, rtt_ms = max(s.turn for s in t.sends), round((t1 - t0) * 1000, 2)
            t.ttl.append(TtlObs(turn, (t0 + t1) / 2, pttl, len(self._final_values), rtt_ms))

    async def _cut_reload(self, ctx: BrowserContext, page: Page, t: Trial) -> tuple[str | None, list[bytes] | None]:
        """mid_stream's reload, in the fault window right after the cut of the last reply's stream:
        why the network says the cut missed its window (cut.missed), and the key as the reload
        began where it is the cut -- what the store held before it (cut.stored_before)."""
        # Only where this reload is the cut: the app's own page over HTTP (over its own socket the
        # page closed it at the first fragment: app_frames.cut_hook; a key read now comes later).
        at_the_cut = self.spec.page is not None and self.spec.transport is None
        key = await self.pages.session_key(ctx, t.texts) if at_the_cut else None
        before_cut = self.keys.read(key)[2] if key is not None else None
        t.mark("refresh")
        self._page_after(await self._reload(page, t), t)
        last = t.sends[-1] if t.sends else None
        if last is None or not last.cut:
            return None, before_cut
        whole = [s.text for s in t.sends[:-1] if s.streamed and s.outcome == "ok" and not s.cut]
        return await cut.missed(page, self.spec, last.text, whole), before_cut

    def close(self) -> None:
        self.keys.close()
