"""The settled history: read until it stays the same for QUIET_S (no backend events to wait on
for a black box), else the trial is unknown; reads that keep going back to earlier contents are
recorded as flapping."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from playwright.async_api import BrowserContext

from lab.investigate.evidence.answers import HistoryRead
from lab.investigate.browser.pages import Pages, Read
from lab.model.history import Row, Trial
from lab.stack.model_link import ModelLink, wait_ended
from lab.model.context import calls_since

QUIET_S = 0.5  # the history must stay the same this long to count as settled
POLL_S = 0.05
QUIESCENCE_DEADLINE_S = 15.0
MODEL_END_DEADLINE_S = 15.0  # a paced reply streams in about a second; a stuck one is unknown


async def model_ended(model: ModelLink | None, t: Trial) -> None:
    """Wait until the stand-in has ended every call the trial's sends made. A page gone
    mid-answer does not end the app's call: an app that reads the model's stream to its end
    stores the reply only then, seconds after the history last changed, and a settled read
    taken before that would call a kept reply lost."""
    if model is None:
        return
    still, _ = await wait_ended(model, [s.text for s in t.sends], calls_since(t), MODEL_END_DEADLINE_S)
    if still:
        t.unknown = t.unknown or model_unended(still)


def model_unended(n: int) -> str:
    return (
        f"{n} model call(s) of this trial still streaming {MODEL_END_DEADLINE_S:g} s after the "
        "refresh: what the app stores when they end was not read"
    )


async def final_read(
    pages: Pages,
    ctx: BrowserContext,
    t: Trial,
    as_rows: Callable[[HistoryRead, Trial], Read],
    reloaded: asyncio.Event | None = None,
) -> list[Row] | None:
    """Read the history (same cookies) until it stays the same for QUIET_S; None if it never
    does before the deadline, or never answers in the spec's form. ``reloaded``: begun beside the
    page's reload -- settled only on a read that began once the reload was done."""
    deadline = time.monotonic() + QUIESCENCE_DEADLINE_S
    last: Read | None = None
    since = time.monotonic()
    seen: list[list[Row]] = []  # distinct contents, in order of first sight
    ok_reads = changes = returns = 0
    request = await pages.identity.history_request(ctx)
    if request is None and reloaded is not None:
        await reloaded.wait()  # (the reload's read may be where the conversation gets its id)
        request = await pages.identity.history_request(ctx)
    if request is None:  # no conversation was ever given an id: nothing stored to read
        return []
    url, headers = request
    while time.monotonic() < deadline:
        after_reload = reloaded is None or reloaded.is_set()  # this read began after the reload
        resp = await ctx.request.get(
            url, headers=headers, timeout=pages.spec.chat.timeout_s * 1000, fail_on_status_code=False
        )
        raw: HistoryRead = {"status": resp.status, "body": await resp.text(), "error": None}
        read = as_rows(raw, t)
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
        elif time.monotonic() - since >= QUIET_S and after_reload:
            return last.rows
        else:
            ok_reads += 1
        # A polling interval bounded by the deadline, not a guess at how long a write takes; the
        # last sleep ends with the quiet stretch (a read then, not up to a poll later).
        await asyncio.sleep(min(POLL_S, max(0.001, since + QUIET_S - time.monotonic())))
    if returns >= 2:
        t.flapping = {"reads": ok_reads, "changes": changes, "returns": returns, "rows": [len(x) for x in seen[:6]]}
    t.unknown = t.unknown or (
        "the history never settled (no 2xx read of the spec's form "
        f"stable for {QUIET_S} s within {QUIESCENCE_DEADLINE_S:g} s)"
        + (f"; {returns} reads went back to earlier contents" if returns >= 2 else "")
    )
    return None
