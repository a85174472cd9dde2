"""The moments a black-box trial places by a send: after_ack (send_then_reload: the page reloads
itself the moment the answer arrives), in_flight, the incident's own move, drop at=write's
reset (send_reset_at_write) and write_refused's one refused write (send_write_refused), at the
end. For in_flight, the last message is sent and, while its request is still in flight, the page
is reloaded the moment the store's record shows that send's first change to the conversation's
key -- inside its write chain, before its answer. Acknowledged turns missing from the reloaded
page then were missing from what the app served while it wrote (a rewrite window: DEL, then the
rows pushed back one at a time), and a handler the reload cancels can leave them lost.

Evidence only where the window was hit: a send answered before any change of it reached Redis
(an app that writes after its answer, or one too fast under the trial's latency), a target whose
Redis refuses MONITOR, or one with no key known to the lab leaves the trial unknown -- never a
pass. The reloaded send itself is unacknowledged ("info": it may or may not have landed)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from playwright.async_api import BrowserContext, Page

from lab.faults.drop import Drop
from lab.faults.write_refused import MOMENT, WriteRefused
from lab.investigate.evidence.answers import Answer, HistoryRead
from lab.common.errors import NotReady
from lab.common.wait import dropped, wait_until_async
from lab.investigate.browser import cut, settle
from lab.investigate.browser.pages import Pages, Read
from lab.investigate.evidence.rows import answer
from lab.investigate.evidence.store import CHANGES, StoreMonitor
from lab.investigate.run.experiments import probe_message
from lab.investigate.spec.parse import Spec
from lab.model.attribution import NOT_REFUSED
from lab.model.history import Send, Trial
from lab.plan.lockstep import Lockstep
from lab.stack.model_link import ModelLink


class Prober(Protocol):
    """What of the black box's prober (lab.investigate.run.blackbox) a reload mid-write uses."""

    spec: Spec
    pages: Pages
    store: StoreMonitor | None
    model: ModelLink | None

    async def _send(self, page: Page, trial_id: str, turn: int, nonce: str, *, streamed: bool = False) -> Send: ...
    async def _send_raw(
        self, page: Page, trial_id: str, turn: int, nonce: str, streamed: bool = False
    ) -> tuple[Send, Answer]: ...
    def _page_after(self, read: Read, t: Trial) -> Read: ...
    async def _reload(self, page: Page, t: Trial) -> Read: ...
    def _as_rows(self, raw: HistoryRead, t: Trial) -> Read: ...


# An app that stores after answering, or one faster than the latency: never mid-write here.
ANSWERED_FIRST = (
    "in_flight window missed: the answer came before any change of the key reached Redis "
    "(an app that writes after answering, or one faster than the injected latency)"
)
POLL_S = 0.005  # the record is in memory: a tight poll puts the reload a few ms after the change
GRACE_S = 0.5  # after the reload: the aborted request's failure reaching the send's task


def first_change(store: StoreMonitor, key: str, since: float) -> float | None:
    """When the app first changed ``key`` since ``since`` (Redis's clock), by the store's record."""
    commands, _ = store.on(key, since, float("inf"))
    for c in commands or []:
        if c.client not in store.lab_clients and c.args[0].decode(errors="replace").upper() in CHANGES:
            return c.t
    return None


def not_testable(store: StoreMonitor | None, key: str | None) -> str | None:
    """Why this trial cannot place a reload inside the send's writes (None: it can)."""
    if key is None:
        return "in_flight: no conversation key known to the lab ([redis] key): no write chain to reload inside"
    if store is None or store.error is not None:
        why = store.error if store is not None else "no record in this run"
        return f"in_flight: no store's record ({why}): the reload cannot be placed inside the send's writes"
    return None


async def send_mid_write(
    prober: Prober, ctx: BrowserContext, page: Page, t: Trial, turn: int, nonce: str, streamed: bool
) -> Send:
    """The last send, reloaded inside its write chain -- or, with no store's record or no key to
    follow, while it is in flight (half the injected latency after it left). Sets
    ``t.page_after_refresh`` (the reloaded page's read) and the refresh mark; the trial unknown
    where the window was missed."""
    key = await prober.pages.session_key(ctx, t.texts)
    text, mid = probe_message(prober.spec, t.trial_id, turn, nonce)
    t_invoke = time.time()
    task = asyncio.create_task(prober._send(page, t.trial_id, turn, nonce, streamed=streamed))
    blind = not_testable(prober.store, key)
    if blind is None:
        assert prober.store is not None and key is not None
        why = await _until_first_change(prober, prober.store, key, task, t_invoke)
    else:
        # No record to follow: reloaded while the send is in flight, half the injected latency
        # after it left -- before its answer, not placed inside its writes (said in the trial).
        why = await _until_half_latency(task, t)
        t.errors.append(f"{blind}; reloaded {t.latency_floor_ms // 2} ms after the send left instead")
    if why is not None:
        t.unknown = t.unknown or why
        return await task  # nothing reloaded: the send as it ended
    reload_at = time.time()
    t.mark("refresh", reload_at)
    try:
        prober._page_after(await prober._reload(page, t), t)
    except BaseException:
        await dropped(task)  # the send's task goes with the trial, never left to fail unwatched
        raise
    send = await _ended(task, prober, mid or f"t{turn}", text, turn, t_invoke, reload_at, streamed)
    if send.status is not None and send.t_invoke + (send.ms or 0.0) / 1000 <= reload_at:
        t.unknown = t.unknown or (
            f"in_flight window missed: the answer (HTTP {send.status}) reached the page before the reload left"
        )
    return send


async def _until_first_change(
    prober: Prober, store: StoreMonitor, key: str, task: "asyncio.Task[Send]", t_invoke: float
) -> str | None:
    """Until the send's first change of the key reaches Redis; why not (None: it did, first)."""

    def changed_or_answered() -> str | None:
        if task.done():
            return "answered"
        return "changed" if first_change(store, key, t_invoke) is not None else None

    try:
        seen = await wait_until_async(
            changed_or_answered, what="the send's first write", timeout_s=prober.spec.chat.timeout_s, interval_s=POLL_S
        )
    except NotReady:
        return f"in_flight: neither an answer nor a write within {prober.spec.chat.timeout_s:g} s"
    return None if seen == "changed" else ANSWERED_FIRST


async def _until_half_latency(task: "asyncio.Task[Send]", t: Trial) -> str | None:
    """Half the injected latency after the send left, if it is still in flight by then."""
    try:
        await wait_until_async(
            task.done, what="the send's answer", timeout_s=t.latency_floor_ms / 2000, interval_s=POLL_S
        )
    except NotReady:
        return None  # still in flight: reload now
    return "in_flight window missed: the answer came within half the injected latency"


async def _ended(
    task: "asyncio.Task[Send]",
    prober: Prober,
    mid: str,
    text: str,
    turn: int,
    t_invoke: float,
    reload_at: float,
    streamed: bool,
) -> Send:
    """The reloaded send: as it ended if it did (the lab's page: its script's context went with
    the reload), else -- the app's own page waits for an answer the reload took away -- cancelled
    and recorded as an unacknowledged send (info) that ended when the reload aborted it."""
    await asyncio.wait({task}, timeout=GRACE_S)
    if task.done() and task.exception() is None:
        return task.result()
    await dropped(task)
    raw: Answer = {
        "status": None, "error": "reloaded while in flight", "ms": (reload_at - t_invoke) * 1000,
        "type": "", "body": "", "cut": None, "start": t_invoke, "end": reload_at,
    }  # fmt: skip
    return answer(prober.spec, raw, mid, text, turn, streamed, False, t_invoke)


async def send_then_reload(
    prober: Prober, page: Page, t: Trial, turn: int, nonce: str, streamed: bool, delay_ms: int = 0
) -> Send:
    """after_ack's last send: the page reloads itself as the answer arrives (or ``delay_ms``
    after: lab window). The refresh is marked at the reload's history request."""
    text, mid = probe_message(prober.spec, t.trial_id, turn, nonce)
    t_invoke = time.time()
    raw, loaded = await prober.pages.send_then_reload(page, text, mid, streamed, delay_ms)
    send = answer(prober.spec, raw, mid or f"t{turn}", text, turn, streamed, False, t_invoke)
    reload_at, answered, ended = loaded.get("start"), send.t_complete or time.time(), raw.get("end")
    if reload_at is not None and ended is not None:
        t.refresh_delay_ms = round((reload_at - ended) * 1000, 1)
    if delay_ms:
        t.unknown = t.unknown or t.reload_delay_problem(delay_ms)
    elif t.reload_window_missed():
        t.errors.append(
            f"the reload left {t.refresh_delay_ms} ms after the answer, not within the injected "
            f"{t.latency_floor_ms} ms: a write made after the answer may have landed first (stale reads not tested)"
        )
    t.mark("refresh", max(answered, reload_at or time.time()))
    prober._page_after(prober._as_rows(loaded, t), t)
    return send


# ---- drop at=write (lab.faults.drop): one send's reply lost after Redis applied its write -- the
# moment a blind retry stores a message twice. The reset is raised the moment the store's record
# shows the send's first change of the key, while the reply is held by the fault's latency, and
# lowered once that reply has met it: the client's retry (a new connection, its replies held in
# turn) gets through, as after one lost packet. Where the lab cannot see the write (no key, no
# record), the reset is raised as the send leaves, and the trial says so. A send whose key
# changed only after the reset could no longer catch its reply, or not at all, tested nothing.

# An app that writes after answering: its write is still looked for this long after the answer.
LATE_S = 1.0
# The reset is lowered this long after the held reply left (a retry's replies are held too: it
# comes after the reset, its replies at least hold_ms after that).
AFTER_S = 0.05
# The reset must be up this long before the held reply leaves, or the trial cannot say it met it.
MARGIN_MS = 50
NO_WRITE = "drop at=write: no write of the conversation's key reached Redis during the send: no reply to reset"


async def send_reset_at_write(
    prober: Prober, ctx: BrowserContext, page: Page, t: Trial, turn: int, nonce: str, streamed: bool, step: Lockstep
) -> Send:
    """The fault turn's send, its first write's reply reset (``step``: its armed Drop)."""
    fault = step.fault
    assert isinstance(fault, Drop)
    key = await prober.pages.session_key(ctx, t.texts)
    blind = not_testable(prober.store, key)
    if blind is not None:
        t.errors.append(f"drop at=write: {blind.split(': ', 1)[1]}; the reset raised as the send left instead")
        fault.trigger(step.targets, 1.0)
        try:
            return await prober._send(page, t.trial_id, turn, nonce, streamed=streamed)
        finally:
            fault.trigger(step.targets, 0.0)
    assert prober.store is not None and key is not None
    t_invoke = time.time()
    task = asyncio.create_task(prober._send(page, t.trial_id, turn, nonce, streamed=streamed))
    try:
        at = await _first_write(prober.store, key, task, t_invoke, prober.spec.chat.timeout_s)
        if at is None:
            t.unknown = t.unknown or NO_WRITE
            return await task
        fault.trigger(step.targets, 1.0)
        raised_ms = (time.time() - at) * 1000
        try:
            await asyncio.sleep(max(0.0, at + fault.hold_ms / 1000 + AFTER_S - time.time()))
        finally:
            fault.trigger(step.targets, 0.0)
            fault.release_hold(step.targets)  # the rest of the send at full speed (the retry's replies)
        if raised_ms > fault.hold_ms - MARGIN_MS:
            t.unknown = t.unknown or (
                f"drop at=write: the reset was raised {raised_ms:.0f} ms after the write reached Redis, "
                f"too late for a reply held {fault.hold_ms} ms (a busy machine)"
            )
        t.fault_evidence = (t.fault_evidence or "") + (
            f"; the reset raised {raised_ms:.0f} ms after the send's first write of the key reached Redis "
            f"(its reply held {fault.hold_ms} ms), lowered {fault.hold_ms + AFTER_S * 1000:.0f} ms after it, the hold with it"
        )
        return await task
    finally:
        await dropped(task)


async def _first_write(
    store: StoreMonitor, key: str, task: "asyncio.Task[Send]", t_invoke: float, timeout_s: float
) -> float | None:
    """When the send first changed the key (Redis's clock), looked for until LATE_S after its
    answer; None: no change by then."""

    async def changed() -> float | None:
        return first_change(store, key, t_invoke)

    return await _while_sending(changed, task, timeout_s, POLL_S)


async def _while_sending(
    found: Callable[[], Awaitable[float | None]], task: "asyncio.Task[Any]", timeout_s: float, interval_s: float
) -> float | None:
    """The moment ``found`` gives, polled (a record in memory, a count Redis keeps: no event to
    wait on) until LATE_S after the send's answer -- an app that writes after answering; None:
    none by then."""
    deadline, answered_at = time.time() + timeout_s + LATE_S, None
    while time.time() < deadline:
        if (at := await found()) is not None:
            return at
        if task.done():
            answered_at = answered_at or time.time()
            if time.time() - answered_at > LATE_S:
                return None
        await asyncio.sleep(interval_s)
    return None


# ---- write_refused at=write / answer / later (lab.faults.write_refused): one refused write of the
# send, then writes served again: its first; the first once the answer has begun (a reply stored
# as or after it streams); the first after the send's first change of the key (the reply's).
# Redis counts the refusal (INFO errorstats); the lab serves writes again the moment it sees it (a
# poll of a few ms), so a write chained right behind (a pipeline's EXPIRE) may meet it too: the
# commands refused are in the trial's evidence.
REFUSE_POLL_S = 0.002


async def send_write_refused(
    prober: Prober, ctx: BrowserContext, page: Page, t: Trial, turn: int, nonce: str, streamed: bool, step: Lockstep
) -> Send:
    """The fault turn's send, one of its writes refused (``step``: its armed WriteRefused)."""
    fault, targets = step.fault, step.targets
    assert isinstance(fault, WriteRefused)
    begun = cut.answer_begun(page, prober.spec) if fault.at == "answer" else None
    key = await prober.pages.session_key(ctx, t.texts) if fault.at == "later" else None
    if fault.at == "later" and (blind := not_testable(prober.store, key)) is not None:
        t.unknown = t.unknown or f"write_refused at=later: {blind.split(': ', 1)[1]}"
        return await prober._send(page, t.trial_id, turn, nonce, streamed=streamed)
    t_invoke = time.time()

    async def refused() -> float | None:
        if begun is not None and not begun():
            return None
        if key is not None and prober.store is not None and first_change(prober.store, key, t_invoke) is None:
            return None  # at=later: the send has not changed the key yet
        if not fault.refusing:
            await asyncio.to_thread(fault.refuse, targets, True)
        return time.time() if await asyncio.to_thread(fault.refused, targets) > 0 else None

    # at=answer: where the app can stream, the lab's page asks it to (the reply written as it streams)
    streamed = streamed or (fault.at == "answer" and prober.spec.stream is not None)
    task = asyncio.create_task(prober._send_raw(page, t.trial_id, turn, nonce, streamed))
    try:
        at = await _while_sending(refused, task, prober.spec.chat.timeout_s, REFUSE_POLL_S)
        await asyncio.to_thread(fault.refuse, targets, False)
        send, raw = await task
    finally:
        await dropped(task)
    if at is None:
        t.unknown = t.unknown or NOT_REFUSED + MOMENT.get(fault.at, "")
        return send
    if why := await settle.not_answered(prober.model, prober.spec, send, raw):
        send.outcome, send.reason = "info", why
    commands = await asyncio.to_thread(fault.refused_commands, targets)
    t.fault_evidence = (t.fault_evidence or "") + (
        f"; Redis refused {', '.join(f'{c} x{n}' for c, n in commands.items()) or 'a write'} "
        f"{(at - t_invoke) * 1000:.0f} ms after the send left, and served writes again from then"
    )
    return send


# The faults acting at the fault turn's write, by name: each its own send.
AT_WRITE = {"drop": send_reset_at_write, "write_refused": send_write_refused}  # at=write, answer, later
