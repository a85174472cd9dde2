"""The settled history: read until it stays the same for QUIET_S (no backend events to wait on
for a black box), else the trial is unknown; reads that keep going back to earlier contents are
recorded as flapping."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import BrowserContext

from lab.common.wait import quiet_poll_s
from lab.investigate.evidence.answers import Answer, HistoryRead
from lab.investigate.evidence.rows import end_read, http_stream, says_failure, shows_no_message
from lab.investigate.spec.parse import Spec
from lab.model.attribution import ANSWER_NOT_THE_MODELS, ANSWER_SAYS_FAILED, REPLY_UNENDED, STREAM_END_UNKNOWN
from lab.investigate.browser.identity import RESET_RETRIES
from lab.investigate.browser.pages import Pages, Read
from lab.model.history import Row, Send, Trial
from lab.stack.model_link import ModelLink, wait_ended
from lab.model.context import calls_since, carries_a_reply, said_as_is

QUIET_S = 0.5  # the history must stay the same this long to count as settled
POLL_S = 0.05
QUIESCENCE_DEADLINE_S = 15.0
MODEL_END_DEADLINE_S = 15.0  # a paced reply streams in about a second; a stuck one is unknown
# A faulted send's body is read against the stand-in's record: its call begun at most this long
# before (the send's own timeout is shorter), and ended within a few seconds of its answer.
CALL_LOOKBACK_S = 60.0
CALL_END_WAIT_S = 5.0


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


async def not_answered(model: ModelLink | None, spec: Spec, send: Send, raw: Answer) -> str | None:
    """Why a send answered under a fault armed for it (a one-send fault: its store down, a write
    refused) is not taken as answered (None: it is). Frames acknowledge at the reply's first
    frame: one that never reached its end (the app closed its socket at the refused write) told
    the failure its own way, as does a whole answer whose JSON says it (a warning, "saved":
    false: rows.says_failure) or, with the stand-in model, a reply ([chat] reply_path) that
    carries none of the model's (a correct Flask app written unseen answered 200 with an apology
    in the reply's place, 2026-12-06). A stream whose end event the spec does not name may carry
    the app's error in its text (a correct Koa app written unseen ended it
    "[[error:store_unavailable]]", 4 of 4 trials, 2026-12-06) -- unless it is the stand-in
    model's whole reply to the letter."""
    if send.outcome != "ok":
        return None
    if spec.transport is not None and raw.get("error"):
        return f"{REPLY_UNENDED} ({raw['error']})"
    if spec.transport is None and not http_stream(spec, send.streamed) and (field := says_failure(raw["body"])):
        return f"{ANSWER_SAYS_FAILED} ({field})"  # a whole answer that says it in its JSON
    if spec.transport is None and (shown := shows_no_message(spec, raw["body"])):
        return f"{ANSWER_SAYS_FAILED} ({shown})"  # an HTML fragment with no message in it
    if model and send.reply is not None and not carries_a_reply(send.reply, await _calls(model, send)):
        return ANSWER_NOT_THE_MODELS
    unread = not end_read(spec, send.streamed) and http_stream(spec, send.streamed)
    return STREAM_END_UNKNOWN if unread and not (model and said_as_is(raw["body"], await _calls(model, send))) else None


async def _calls(model: ModelLink, send: Send) -> list[dict[str, Any]]:
    """The stand-in's finished calls carrying the send's text (begun within CALL_LOOKBACK_S,
    waited for CALL_END_WAIT_S at most)."""
    return (await wait_ended(model, [send.text], time.time() - CALL_LOOKBACK_S, CALL_END_WAIT_S))[1]


def model_unended(n: int) -> str:
    return (
        f"{n} model call(s) of this trial still streaming {MODEL_END_DEADLINE_S:g} s after the "
        "refresh: what the app stores when they end was not read"
    )


# A settled read none of whose reads answered 2xx in the spec's form: the app served no history
# in the whole wait (lab.investigate.run.groups does not try such an experiment again).
NEVER_READ = "the history never settled: not one read of it answered 2xx in the spec's form"


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
    rule = Settling(time.monotonic())
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
            url,
            headers=headers,
            timeout=pages.spec.chat.timeout_s * 1000,
            fail_on_status_code=False,
            max_retries=RESET_RETRIES,
        )
        raw: HistoryRead = {"status": resp.status, "body": await resp.text(), "error": None}
        read = as_rows(raw, t)
        settled = rule.read(read.rows if read.ok else None, time.monotonic(), counts=after_reload)
        if settled is not None:
            return settled
        await asyncio.sleep(rule.poll_s(time.monotonic()))
    rule.never(t)
    return None


@dataclass
class Settling:
    """The settle rule, fed one history read at a time -- pure, so that lab investigate's reader
    and the pytest plugin's (lab.investigate.plugin.recorder) judge alike: settled once the rows
    stayed the same for QUIET_S; reads that keep going back to earlier contents are flapping."""

    since: float  # when the rows last changed (or the reading began)
    last: list[Row] | None = None
    seen: list[list[Row]] = field(default_factory=list)  # distinct contents, in order of first sight
    ok_reads: int = 0
    changes: int = 0
    returns: int = 0

    def read(self, rows: list[Row] | None, now: float, counts: bool = True) -> list[Row] | None:
        """One read's rows (None: a failed read, which says nothing about the stored history);
        the rows once they have stayed the same QUIET_S, on a read that ``counts``."""
        if rows is None:
            return None
        if self.last is None or rows != self.last:
            self.ok_reads += 1
            if self.last is not None:
                self.changes += 1
                # Going back to contents read before is not a write landing late: the reads
                # disagree with each other.
                self.returns += rows in self.seen
            if rows not in self.seen:
                self.seen.append(rows)
            self.last, self.since = rows, now
            return None
        if now - self.since >= QUIET_S and counts:
            return rows
        self.ok_reads += 1
        return None

    def poll_s(self, now: float) -> float:
        """A polling interval, not a guess at how long a write takes; the last one ends with the
        quiet stretch (a read then, not up to a poll later)."""
        return quiet_poll_s(POLL_S, self.since, QUIET_S, now)

    def never(self, t: Trial) -> None:
        """The history never settled: the trial is unknown (and flapping, where it was)."""
        if self.returns >= 2:
            t.flapping = {
                "reads": self.ok_reads,
                "changes": self.changes,
                "returns": self.returns,
                "rows": [len(x) for x in self.seen[:6]],
            }
        if not self.ok_reads:  # not one read answered: nothing to settle, not a history that moved
            t.unknown = t.unknown or f"{NEVER_READ} within {QUIESCENCE_DEADLINE_S:g} s"
            return
        t.unknown = t.unknown or (
            "the history never settled (no 2xx read of the spec's form "
            f"stable for {QUIET_S} s within {QUIESCENCE_DEADLINE_S:g} s)"
            + (f"; {self.returns} reads went back to earlier contents" if self.returns >= 2 else "")
        )
