"""Diagnoses: pure functions from trial records to causes, each with its evidence (numbers and
trial ids). A diagnosis is raised only with evidence; trials that exercised nothing are unknown
and never count as "no anomaly"."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.investigate.records import Check, TrialRec, check
from lab.stats import wilson

TTL_SLACK_MS = 5   # PTTL is read over a separate connection: a few ms of jitter are not evidence


@dataclass
class Diagnosis:
    code: str
    cause: str                     # what points at the cause, in words
    evidence: str                  # numbers and trial ids
    k: int                         # trials showing it
    n: int                         # trials that could show it
    trials: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        lo, hi = wilson(self.k, self.n)
        return {"code": self.code, "cause": self.cause, "evidence": self.evidence, "k": self.k,
                "n": self.n, "ci95": [round(lo, 4), round(hi, 4)], "trials": self.trials}

    def sentence(self) -> str:
        lo, hi = wilson(self.k, self.n)
        return f"{self.cause} -- {self.k}/{self.n} trials [{lo:.2f}, {hi:.2f}]: {self.evidence}"


Judged = list[tuple[TrialRec, Check]]


def judged(records: list[TrialRec], user_role: str = "user", assistant_role: str = "assistant") -> Judged:
    out = []
    for r in records:
        c = check(r, user_role, assistant_role)
        if c is not None:
            out.append((r, c))
    return out


def _ids(items: list[TrialRec]) -> list[str]:
    return [r.trial_id for r in items]


def _few(ids: list[str]) -> str:
    return ", ".join(ids[:4]) + (f" (+{len(ids) - 4})" if len(ids) > 4 else "")


def _cut(r: TrialRec) -> set[int]:
    """Turns whose streamed reply the lab cut: their loss is saved_at_stream_end's to explain."""
    return {s.turn for s in r.sends if s.cut}


def replies_not_stored(j: Judged) -> Diagnosis | None:
    def missing_replies(r: TrialRec, c: Check) -> list[int]:
        return [t for t in c.reply_missing if t not in _cut(r)]

    hit = [(r, c) for r, c in j if missing_replies(r, c) and not set(c.lost_user) - _cut(r)]
    if not hit:
        return None
    missing = sum(len(missing_replies(r, c)) for r, c in hit)
    acked = sum(len(set(c.acked) - _cut(r)) for r, c in hit)
    return Diagnosis(
        "replies_not_stored",
        "the bot's replies are never stored while the user messages are: the reply's write is not "
        "awaited (scheduled and dropped, e.g. an un-awaited create_task) or fails silently",
        f"{missing} of {acked} acknowledged replies missing from the healed, settled history while "
        f"their user messages are there (trials {_few(_ids([r for r, _ in hit]))})",
        len(hit), len(j), _ids([r for r, _ in hit]))


def acked_while_unreachable(j: Judged) -> Diagnosis | None:
    """A 2xx for a send made while Redis was unreachable, and the message is not stored."""
    pool = [(r, c) for r, c in j if r.fault == "down" or (r.fault == "drop" and r.fault_params.get("stream") == "upstream")]
    hit = []
    for r, c in pool:
        s = next((s for s in r.sends if s.under_fault), None)
        if s is not None and s.outcome == "ok" and s.turn in c.lost_user:
            hit.append((r, s))
    if not hit:
        return None
    r0, s0 = hit[0]
    return Diagnosis(
        "acked_while_unreachable",
        "acknowledged while Redis was unreachable and never stored: the write's error is swallowed "
        "(logged or ignored) and a success returned",
        f"with the Redis link {r0.fault} for one send, it answered {s0.status} in {s0.ms:.0f} ms and the "
        f"message is absent from the final history (trials {_few([r.trial_id for r, _ in hit])})",
        len(hit), len(pool), [r.trial_id for r, _ in hit])


def acked_too_fast(j: Judged) -> Diagnosis | None:
    """Under injected latency L, a reply in under L ms cannot have waited for any Redis write."""
    pool = [(r, c) for r, c in j if r.fault == "latency"]
    hit = []
    for r, c in pool:
        lat = int(r.fault_params.get("latency_ms", 0)) - int(r.fault_params.get("jitter_ms", 0))
        fast = [s for s in r.sends if s.outcome == "ok" and s.ms < lat]
        if fast:
            hit.append((r, fast[0], lat))
    if not hit:
        return None
    r0, s0, lat = hit[0]
    return Diagnosis(
        "acked_too_fast",
        "acknowledged before the Redis write could have completed: the reply does not wait for the write",
        f"under {lat} ms of injected Redis latency a send was acknowledged in {s0.ms:.0f} ms "
        f"(trial {r0.trial_id}, turn {s0.turn}); in {len(hit)}/{len(pool)} latency trials",
        len(hit), len(pool), [r.trial_id for r, _, _ in hit])


def duplicates(j: Judged) -> list[Diagnosis]:
    out = []
    drop = [(r, c) for r, c in j if r.fault == "drop"]
    other = [(r, c) for r, c in j if r.fault != "drop"]
    hit = [(r, c) for r, c in drop if c.duplicated]
    if hit:
        turns = [(r.trial_id, c.duplicated) for r, c in hit]
        out.append(Diagnosis(
            "duplicates_after_drop",
            "messages stored twice after a connection drop: a non-idempotent append is retried "
            "(blindly) when the reply to an applied write is lost",
            f"turns stored more than once in {len(hit)}/{len(drop)} trials with a one-shot connection "
            f"reset on the Redis link, e.g. trial {turns[0][0]} turns {turns[0][1]}",
            len(hit), len(drop), _ids([r for r, _ in hit])))
    hit = [(r, c) for r, c in other if c.duplicated]
    if hit:
        out.append(Diagnosis(
            "duplicates", "messages stored more than once without a connection drop",
            f"duplicated turns in {len(hit)}/{len(other)} trials (trials {_few(_ids([r for r, _ in hit]))})",
            len(hit), len(other), _ids([r for r, _ in hit])))
    return out


def phantom_failures(j: Judged) -> Diagnosis | None:
    # Only where nothing excuses the error: under a dropped or refused Redis link an error whose
    # write was applied is the honest "unknown outcome", not a defect.
    def phantom(r: TrialRec, c: Check) -> list[int]:
        if r.fault not in ("none", "latency"):
            return []
        return [t for t in c.phantom if not any(s.under_fault for s in r.sends if s.turn == t)]

    pool = [(r, c) for r, c in j if r.fault in ("none", "latency")]
    hit = [(r, c) for r, c in pool if phantom(r, c)]
    if not hit:
        return None
    sends = [s for r, c in hit for s in r.sends if s.turn in phantom(r, c)]
    statuses = sorted({str(s.status or s.error) for s in sends})
    html = sum(s.html for s in sends)
    return Diagnosis(
        "phantom_failures",
        "requests answered with an error although their write was applied (the user sees "
        "\"failed\", a retry would store it twice)",
        f"{len(sends)} sends answered {', '.join(statuses)}" + (f" ({html} as HTML error pages)" if html else "")
        + f" and their message is in the final history (trials {_few(_ids([r for r, _ in hit]))})",
        len(hit), len(pool), _ids([r for r, _ in hit]))


def errors_without_fault(records: list[TrialRec]) -> Diagnosis | None:
    """5xx / failed requests with no fault injected: the app breaks by itself, intermittently
    (e.g. a Redis client shared across event loops)."""
    pool = [r for r in records if r.fault == "none" and r.sends]
    hit = [r for r in pool if any(s.status is None or s.status >= 500 for s in r.sends)]
    if not hit:
        return None
    bad = sum(1 for r in pool for s in r.sends if s.status is None or s.status >= 500)
    total = sum(len(r.sends) for r in pool)
    return Diagnosis(
        "errors_without_fault",
        "requests fail intermittently with no fault injected: the app breaks by itself "
        "(e.g. a Redis client bound to another event loop)",
        f"{bad} of {total} sends answered 5xx or nothing with the Redis link healthy "
        f"(trials {_few(_ids(hit))})", len(hit), len(pool), _ids(hit))


def history_reads_failing(j: Judged, records: list[TrialRec]) -> Diagnosis | None:
    pool = [r for r in records if r.fault == "none" and r.history_reads]
    reads = [s for r in pool for s in r.history_reads]
    bad = [s for s in reads if s is None or not 200 <= s < 300]
    if not bad:
        return None
    hit = [r for r in pool if any(s is None or not 200 <= s < 300 for s in r.history_reads)]
    amnesia = [r for r, c in j if c.page_failed and r.fault == "none"]
    return Diagnosis(
        "history_reads_failing",
        "history reads fail intermittently with no fault injected; the page then shows an empty "
        "history (amnesia) although the conversation is stored",
        f"{len(bad)} of {len(reads)} GETs of the history failed ({', '.join(sorted({str(s) for s in bad}))}); "
        f"the page after a refresh showed nothing in {len(amnesia)} trials whose history was intact "
        f"(trials {_few(_ids(hit))})", len(hit), len(pool), _ids(hit))


def _stale(r: TrialRec, c: Check) -> list[int]:
    """Turns missing from the page after the refresh that the settled history has. All of them
    (the check calls that amnesia) count too when nothing else explains it: the page's read
    succeeded, in the same browser context (a browser restart is the cookie's business) and
    every acknowledged turn is there at the end -- e.g. a cache filled before the first send."""
    if c.stale:
        return c.stale
    if c.amnesia and not c.page_failed and r.refresh != "browser_restart" and not c.lost_user:
        return list(c.acked)
    return []


def history_flapping(records: list[TrialRec]) -> Diagnosis | None:
    """The history never settled because successive reads, with nothing sent, kept going back to
    contents read before: the reads disagree with each other, which no late write explains."""
    pool = [r for r in records if r.sends]
    hit = [r for r in pool if r.flapping]
    if not hit:
        return None
    f = hit[0].flapping or {}
    return Diagnosis(
        "history_flapping",
        "successive history reads disagree with nothing being written: replies mixed up on a "
        "connection shared between event loops or threads, or reads spread over copies that differ",
        f"e.g. trial {hit[0].trial_id}: after the last send, {f.get('reads')} 2xx reads switched contents "
        f"{f.get('changes')} times, {f.get('returns')} times back to contents read before (row counts "
        f"seen: {f.get('rows')}); in {len(hit)}/{len(pool)} trials (those trials are unknown for loss: "
        f"there is no settled history to judge)", len(hit), len(pool), _ids(hit))


def stale_reads(j: Judged) -> Diagnosis | None:
    hit = [(r, c) for r, c in j if _stale(r, c)]
    if not hit:
        return None
    r0, c0 = hit[0]
    every = len(_stale(r0, c0)) == len(c0.acked) and not c0.stale
    return Diagnosis(
        "stale_reads",
        "stale reads that later heal: right after the refresh the page misses acknowledged turns "
        "that the settled history has",
        f"in {len(hit)}/{len(j)} trials, e.g. trial {r0.trial_id} turns {_stale(r0, c0)}"
        f"{' (the whole history: the page showed none of them)' if every else ''} "
        f"({r0.fault} / {r0.refresh})", len(hit), len(j), _ids([r for r, _ in hit]))


def ttl(records: list[TrialRec]) -> list[Diagnosis]:
    """From PTTL observations after each acknowledged send: a TTL renewed by a write comes back
    up; one set once only goes down by the time elapsed. Judged only between observations with a
    write in between (the key grew) and far enough apart to tell."""
    out = []
    pool, not_renewed, no_ttl = [], [], []
    example = ""
    for r in records:
        obs = [o for o in r.ttl if o.pttl_ms != -2]
        if len(obs) < 1:
            continue
        pool.append(r)
        if any(o.pttl_ms == -1 for o in obs):
            no_ttl.append(r)
        for a, b in zip(obs, obs[1:]):
            elapsed_ms = (b.t - a.t) * 1000
            tolerance_ms = TTL_SLACK_MS + (a.rtt_ms + b.rtt_ms) / 2
            # Not renewed: b = a - elapsed, to within the tolerance. Renewed: b = a - elapsed + (the
            # time between the writes before each observation, about `elapsed`). The two are told
            # apart only when the elapsed time dwarfs the tolerance (slow PTTL reads on a busy
            # machine would otherwise pass a renewal within one short turn for "not renewed").
            if a.pttl_ms < 0 or b.pttl_ms < 0 or b.length <= a.length or elapsed_ms < 4 * tolerance_ms:
                continue
            if abs(b.pttl_ms - (a.pttl_ms - elapsed_ms)) <= tolerance_ms:
                not_renewed.append(r)
                example = example or (f"trial {r.trial_id}: PTTL {a.pttl_ms} ms after turn {a.turn}, "
                                      f"{b.pttl_ms} ms after turn {b.turn} {elapsed_ms:.0f} ms later "
                                      f"(the key grew {a.length} -> {b.length})")
                break
    if not_renewed:
        out.append(Diagnosis(
            "ttl_not_renewed",
            "the conversation's TTL is not renewed by writes: set once, it expires a fixed time "
            "after the first message however active the conversation",
            f"{example}; in {len(not_renewed)}/{len(pool)} trials", len(not_renewed), len(pool),
            _ids(not_renewed)))
    if no_ttl:
        out.append(Diagnosis(
            "no_ttl", "conversation keys left with no TTL at all (never expire, or a TTL step was skipped)",
            f"PTTL -1 on the conversation key in {len(no_ttl)}/{len(pool)} trials "
            f"(trials {_few(_ids(no_ttl))})", len(no_ttl), len(pool), _ids(no_ttl)))
    return out


def session_cookie(j: Judged) -> Diagnosis | None:
    pool = [(r, c) for r, c in j if r.refresh == "browser_restart"]
    # Evidence of the cookie, not of loss: the old session still holds the conversation.
    hit = [(r, c) for r, c in pool if c.amnesia and not c.page_failed and r.cookie_persistent is False
           and not c.lost_user]
    if not hit:
        return None
    return Diagnosis(
        "session_cookie",
        "the session cookie does not survive a browser restart (no Max-Age/Expires): the user "
        "comes back to an empty conversation",
        f"after a browser restart the page showed none of the acknowledged turns in {len(hit)}/{len(pool)} "
        f"trials; the cookie was a session cookie, and the conversation is still stored under the old "
        f"one (trials {_few(_ids([r for r, _ in hit]))})", len(hit), len(pool), _ids([r for r, _ in hit]))


def saved_at_stream_end(j: Judged) -> Diagnosis | None:
    """A reply cut mid-stream is missing at the end (its user message too, or only the reply),
    while the replies of the same conversation that streamed to their end were stored: the turn
    is saved after the stream, which a refresh or a closed tab never lets finish."""
    pool = [(r, c) for r, c in j if any(s.cut for s in r.sends)]
    hit = []
    for r, c in pool:
        lost = [t for t in _cut(r) if t in c.lost_user or t in c.reply_missing]
        whole = [s for s in r.sends if s.streamed and not s.cut and s.outcome == "ok"]
        kept = [s for s in whole if s.turn not in c.lost_user and s.turn not in c.reply_missing]
        if lost and kept:
            hit.append((r, c, lost, kept))
    if not hit:
        return None
    r0, c0, lost0, kept0 = hit[0]
    cut0 = next(s for s in r0.sends if s.turn == lost0[0])
    what = "the user message and the reply" if lost0[0] in c0.lost_user else "the reply"
    return Diagnosis(
        "saved_at_stream_end",
        "a streamed turn is stored only when its stream completes: a refresh or a closed tab "
        "mid-reply loses it",
        f"e.g. trial {r0.trial_id}: turn {lost0[0]} acknowledged by its first chunk after {cut0.ms:.0f} ms, "
        f"cut there, and {what} missing from the settled history, while the {len(kept0)} replies streamed "
        f"to their end (about {max(s.ms for s in kept0):.0f} ms) were stored; in {len(hit)}/{len(pool)} "
        f"trials with a cut stream", len(hit), len(pool), [r.trial_id for r, *_ in hit])


def history_capped(j: Judged) -> Diagnosis | None:
    """Loss with no fault, only of the oldest turns, and the stored length the same in every such
    trial: the history is capped (LTRIM or a window), not lost at random."""
    pool = [(r, c) for r, c in j if r.fault == "none" and not _cut(r)]
    hit = [(r, c) for r, c in pool if c.lost_user]
    if not hit:
        return None
    oldest_only = all(sorted(c.lost_user) == list(range(1, len(c.lost_user) + 1)) for _, c in hit)
    lengths = {len(r.final.rows or []) for r, _ in hit if r.final}
    if not oldest_only or len(lengths) != 1 or len(hit) < 2:
        return None
    cap = lengths.pop()
    # A cap loses in EVERY fault-free conversation longer than it, not in some of them.
    longer = [(r, c) for r, c in pool if 2 * len(c.acked) > cap]
    if len(longer) != len(hit):
        return None
    shortest = min(r.turns for r, _ in hit)
    intact = [r for r, c in pool if (r, c) not in hit]
    return Diagnosis(
        "history_capped",
        f"loss only beyond a conversation length, with no fault at all: the history is capped at {cap} rows",
        f"in {len(hit)}/{len(pool)} fault-free trials of {shortest}+ turns only the oldest turns are "
        f"missing and the stored history has exactly {cap} rows (trials {_few(_ids([r for r, _ in hit]))})"
        + (f"; the {len(intact)} shorter conversations ({', '.join(sorted({str(r.turns) for r in intact}))} "
           f"turns) kept every turn" if intact else ""),
        len(hit), len(pool), _ids([r for r, _ in hit]))


def lost_on_restart(j: Judged) -> Diagnosis | None:
    pool = [(r, c) for r, c in j if r.fault == "redis_restart"]
    hit = [(r, c) for r, c in pool if c.lost_user and all(t < (r.fault_turn or 0) for t in c.lost_user)]
    if not hit:
        return None
    return Diagnosis(
        "lost_on_redis_restart",
        "the conversation is lost when Redis restarts: Redis runs without persistence (environment)",
        f"every turn before the restart missing afterwards in {len(hit)}/{len(pool)} trials "
        f"(trials {_few(_ids([r for r, _ in hit]))})", len(hit), len(pool), _ids([r for r, _ in hit]))


def history_hides_stored(j: Judged) -> Diagnosis | None:
    """Acknowledged messages missing from the history the app serves, yet in its Redis key: the
    read path (or a capped read) hides what the write path stored."""
    hit = []
    for r, c in j:
        stored = set((r.redis_final or {}).get("stored_turns", []))
        hidden = [t for t in c.lost_user if t in stored]
        if hidden:
            hit.append((r, hidden))
    if not hit:
        return None
    r0, h0 = hit[0]
    return Diagnosis(
        "history_hides_stored",
        "the history endpoint does not show messages that are stored in Redis: the read path "
        "(a capped or filtered read, a wrong key) hides them",
        f"e.g. trial {r0.trial_id}: turns {h0} absent from GET history but present in "
        f"{(r0.redis_final or {}).get('key')}; in {len(hit)}/{len(j)} trials",
        len(hit), len(j), [r.trial_id for r, _ in hit])


def other_loss(j: Judged, explained: set[str]) -> Diagnosis | None:
    """Acknowledged user messages lost in trials no specific diagnosis explains."""
    hit = [(r, c) for r, c in j if c.lost_user and r.trial_id not in explained]
    if not hit:
        return None
    return Diagnosis(
        "acked_lost", "acknowledged messages lost (no more specific cause identified)",
        f"in {len(hit)}/{len(j)} trials, e.g. trial {hit[0][0].trial_id} ({hit[0][0].fault} / "
        f"{hit[0][0].refresh}) turns {hit[0][1].lost_user}", len(hit), len(j), _ids([r for r, _ in hit]))


def diagnose(records: list[TrialRec], user_role: str = "user",
             assistant_role: str = "assistant") -> list[Diagnosis]:
    j = judged(records, user_role, assistant_role)
    found: list[Diagnosis] = []
    singles: list[Callable[[], Diagnosis | None]] = [
        lambda: replies_not_stored(j), lambda: acked_while_unreachable(j), lambda: acked_too_fast(j),
        lambda: phantom_failures(j), lambda: errors_without_fault(records),
        lambda: history_reads_failing(j, records), lambda: stale_reads(j), lambda: session_cookie(j),
        lambda: history_capped(j), lambda: lost_on_restart(j), lambda: history_hides_stored(j),
        lambda: saved_at_stream_end(j), lambda: history_flapping(records)]
    for f in singles:
        d = f()
        if d is not None:
            found.append(d)
    found += duplicates(j)
    found += ttl(records)
    explained = {t for d in found if d.code in ("acked_while_unreachable", "history_capped",
                                                "lost_on_redis_restart", "history_hides_stored",
                                                "saved_at_stream_end")
                 for t in d.trials}
    d = other_loss(j, explained)
    if d is not None:
        found.append(d)
    return found


ANOMALY_WORDS = {"lost": "acknowledged turns lost", "duplicated": "duplicates",
                 "phantom_fail": "errors whose write was applied", "amnesia": "amnesia after the refresh",
                 "stale": "stale reads"}


def bounds(j: Judged) -> dict[str, tuple[int, int, float]]:
    """For a clean result: per anomaly, (k, n, Wilson upper bound) over the judged trials."""
    out = {}
    for name in ANOMALY_WORDS:
        k = sum(1 for _, c in j if c.anomalies()[name])
        out[name] = (k, len(j), wilson(k, len(j))[1])
    return out
