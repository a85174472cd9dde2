"""The context oracle: what each model call was told (Trial.model_calls, the stand-in's record)
against what the user had been acknowledged. Pure functions.

A call serves the send whose text its last user message carries (an app may wrap it in a
template). Before that send left, the turns acknowledged so far are the conversation the model
must be given: each once, in the order they were acknowledged. A turn counts as given where a
user or system message of the call carries its user text."""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from lab.model.history import Send, Trial


@dataclass
class Told:
    """One model call against the conversation it should have carried."""

    call: int  # its index in Trial.model_calls
    send: str  # the send it served
    expected: list[int] = field(default_factory=list)  # turns acknowledged before that send left
    missing: list[int] = field(default_factory=list)
    missing_sends: list[str] = field(default_factory=list)  # their ids: two tabs' sends share a turn
    repeated: list[int] = field(default_factory=list)  # given more than once
    out_of_order: bool = False

    @property
    def told_less(self) -> bool:
        return bool(self.missing)


def _last_user(call: dict[str, Any]) -> str:
    return next((m["text"] for m in reversed(call.get("messages", [])) if m.get("role") == "user"), "")


def served(t: Trial, call: dict[str, Any]) -> Send | None:
    """The send a call served: the one whose (unique) text its last user message carries."""
    last = _last_user(call)
    return next((s for s in t.sends if s.text and s.text in last), None)


def said_as_is(body: str, calls: list[dict[str, Any]]) -> bool:
    """A streamed body that is a call's whole reply to the letter (spaces at its ends aside): the
    app added nothing of its own to what the model said -- no error of its own in the text."""
    text = body.strip()
    return bool(text) and any(r.strip() == text for r in _whole_replies(calls))


def carries_a_reply(text: str, calls: list[dict[str, Any]]) -> bool:
    """An answer's reply text that holds a call's whole reply (entities and runs of spaces aside:
    an app may render it as HTML, trim it, or wrap it in words of its own)."""
    return any(r and r in _plain(text) for r in map(_plain, _whole_replies(calls)))


def _whole_replies(calls: list[dict[str, Any]]) -> list[str]:
    return [c.get("reply") or "" for c in calls if c.get("outcome") == "whole"]


def _plain(text: str) -> str:
    return " ".join(html.unescape(text).split())


def calls_since(t: Trial) -> float:
    """Where the trial's calls begin in the stand-in's record (it holds the whole run's): its
    first send, less a second of clock grain."""
    return max(min((s.t_invoke for s in t.sends if s.t_invoke), default=0.0) - 1.0, 0.0)


def unserved(t: Trial) -> list[Send]:
    """Acknowledged sends no recorded call served: where the app was to be on the stand-in, the
    evidence that it was not (its replies came from elsewhere, and nothing it was told is known)."""
    # By text, not by the send ``served`` names: a double submit sends one message twice, and
    # both sends are carried by a call with its text.
    carried = [_last_user(c) for c in t.model_calls or []]
    return [s for s in t.sends if s.outcome == "ok" and not any(s.text and s.text in last for last in carried)]


def judge(t: Trial) -> list[Told]:
    """Every call that served a send of the trial, judged against the turns acknowledged before
    that send left (its own turn excluded: it is the question, the call's last message)."""
    out = []
    for i, call in enumerate(t.model_calls or []):
        send = served(t, call)
        if send is None:
            continue
        before = sorted(
            (s for s in t.sends if s.outcome == "ok" and s.t_complete is not None and s.t_complete < send.t_invoke),
            key=lambda s: s.t_complete or 0.0,
        )
        # Earlier messages only: the call's last user message is the question itself. A turn is
        # given by a user or system message (a transcript in the system prompt counts); an
        # assistant message quoting the user (as the stand-in's replies do) does not.
        msgs = call.get("messages", [])
        last = max((j for j, m in enumerate(msgs) if m.get("role") == "user"), default=-1)
        texts = [m["text"] if m.get("role") in ("user", "system") else "" for m in msgs]
        told = Told(i, send.id, expected=[s.turn for s in before])
        first_at: list[int] = []
        for s in before:
            at = [j for j, text in enumerate(texts[:last]) if s.text in text]
            if not at:
                told.missing.append(s.turn)
                told.missing_sends.append(s.id)
            elif len(at) > 1:
                told.repeated.append(s.turn)
            if at:
                first_at.append(at[0])
        told.out_of_order = first_at != sorted(first_at)
        out.append(told)
    return out


def window(judged: list[Told]) -> int | None:
    """A context window: every call that was told less kept exactly the newest N turns it
    should have had, the same N in each, and every call told everything had at most N to
    tell. None where the calls do not fit one N (or none was told less)."""
    short = [j for j in judged if j.missing]
    if not short:
        return None
    kept = {len(j.expected) - len(j.missing) for j in short}
    if len(kept) != 1:
        return None
    n = kept.pop()
    if any(j.missing != j.expected[: len(j.missing)] for j in short):
        return None  # not the oldest turns that were left out
    if any(len(j.expected) > n for j in judged if not j.missing):
        return None  # a call kept more than N: no fixed window
    return n


def lagging(told: Told, peers: list[Told]) -> bool:
    """Told less the way a copy that lags the store tells it: the conversation as it stood at an
    earlier moment -- its oldest turns, up to one, and none after (a cache, a worker's own
    memory, a read that raced a write); or nothing given where another call (``peers``) with as
    many turns to carry was given all of them (a design is a function of the conversation: the
    same length of it gets the same context). Anything else is not claimed: the newest turns
    kept is a window or a token budget, and a subset that is neither end is what a memory that
    picks turns by relevance gives."""
    if not told.missing:
        return False
    given = [x for x in told.expected if x not in told.missing]
    if given:
        return given == told.expected[: len(given)]
    return any(len(p.expected) == len(told.expected) and not p.missing for p in peers)


def fixed_size(judged: list[Told]) -> int | None:
    """A selection of fixed size: every call told less kept the same number K of the turns it
    should have had, and no call carried more than K -- what a design gives (a window, the first
    N turns, the K most relevant), whichever turns it picks. None where the calls do not fit one
    K (or none was told less)."""
    short = [j for j in judged if j.missing]
    kept = {len(j.expected) - len(j.missing) for j in short}
    if len(kept) != 1:
        return None
    k = kept.pop()
    if k == 0 or any(len(j.expected) > k for j in judged if not j.missing):
        return None
    return k


def carries_other(call: dict[str, Any], t: Trial, fixed: set[str]) -> bool:
    """The call carried a user or system message that is no send's text and not one of the
    ``fixed`` texts every call carried (a system prompt): a summary of the turns left out, or
    a memory of the app's own -- what it was told cannot be read turn by turn."""
    msgs = call.get("messages", [])
    last = max((j for j, m in enumerate(msgs) if m.get("role") == "user"), default=-1)
    for m in msgs[:last]:
        if m.get("role") not in ("user", "system") or m["text"] in fixed:
            continue
        if not any(s.text and s.text in m["text"] for s in t.sends):
            return True
    return False


def fixed_texts(calls: list[dict[str, Any]]) -> set[str]:
    """The user and system texts every one of ``calls`` carried (an app's fixed instructions)."""
    sets = [{m["text"] for m in c.get("messages", []) if m.get("role") in ("user", "system")} for c in calls]
    return set.intersection(*sets) if sets else set()


# How the stand-in's record ends the faulted send's call under each model fault (lab.faults): a
# stalled call is "held" where the stand-in hung up first, "client_gone" where the app did.
FAULT_OUTCOMES = {"model_error": ("error",), "model_cut": ("cut",), "model_stall": ("held", "client_gone")}
# The outcomes of a call the model failed (the app got no answer from it).
FAILED = ("error", "held", "client_gone")


def _faulted_calls(t: Trial) -> list[dict[str, Any]]:
    faulted = [s for s in t.sends if s.under_fault]
    return [c for c in t.model_calls or [] if any(served(t, c) is s for s in faulted)]


def streams_model(t: Trial) -> bool | None:
    """Whether the app streamed the model's answer to the faulted send: True if any of its
    calls asked for a stream, False if it made calls and none did, None if no call shows it.
    Read from the stand-in's record, so it holds also for a trial unknown for another reason."""
    calls = _faulted_calls(t)
    return any(bool(c.get("stream")) for c in calls) if calls else None


def never_streamed(trials: list[Trial]) -> bool:
    """A model cut cannot apply to this app (its code, not the machine's speed): some trial's
    calls show it asks for whole answers, and none shows a stream."""
    seen = [x for x in (streams_model(t) for t in trials) if x is not None]
    return bool(seen) and not any(seen)


def fault_missed(t: Trial) -> str | None:
    """Why a model fault's trial tested nothing (None: it did, or it is no model fault's): no
    call served the faulted send, or none was answered as the fault answers -- a model called
    without streaming gets its answer whole, and there was nothing to cut."""
    want = FAULT_OUTCOMES.get(t.fault)
    faulted = [s for s in t.sends if s.under_fault]
    if want is None or t.model_calls is None or not faulted:
        return None
    calls = _faulted_calls(t)
    if not calls:
        return f"no model call served the faulted send (turn {faulted[0].turn}): {t.fault} was not exercised"
    if any(c.get("outcome") in want for c in calls):
        return None
    got = ", ".join(sorted({str(c.get("outcome")) for c in calls}))
    why = f" ({NOT_STREAMED})" if t.fault == "model_cut" and not any(c.get("stream") for c in calls) else ""
    return (
        f"the faulted send's model call was answered {got}, not {' or '.join(want)}{why}: {t.fault} was not exercised"
    )


# Why a model_cut trial is unknown in an app that calls the model without streaming: its code,
# not the machine's speed -- another trial would be unknown for the same reason (no top-up).
NOT_STREAMED = "the app did not stream the model's answer: nothing to cut"
