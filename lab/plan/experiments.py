"""The one table of experiments: fault x refresh point, each row there for what it can expose.

`lab chaos` runs the rows that expose a defect of the built-in service (``exposes``: its default
matrix, each row with the profiles its verdicts need); `lab investigate` runs the rows an app of
the spec's shape can be tried by (``needs``: its default plan). Most rows serve both. The order
is each command's: an investigate trial id's experiment number indexes its rows in this order,
so a row is only ever appended to what investigate runs (a replay names the same experiment).
Plain data."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

EVERY = ("*",)  # lab chaos runs every profile in this row's cell (the incident's own)
# after_ack's and in_flight's fault: the same one, so investigate's trials of both share its
# groups (lab.investigate.run.groups) -- the link faulted once for both.
SLOW_REDIS = (("latency_ms", 300),)


@dataclass(frozen=True)
class Row:
    fault: str
    params: tuple[tuple[str, Any], ...]  # sorted by name
    refresh: str
    why: str
    # lab chaos: the built-in defects the row exposes (EVERY: every profile); () not in its matrix
    exposes: tuple[str, ...] = ()
    # lab investigate: what the spec must have -- "" nothing, "streams" a [stream] to cut,
    # "unstreamed" no [stream], "ids" message ids the lab's page sends, "model" a [model] to fail;
    # None: not in its plan
    needs: str | None = None
    long: bool = False  # investigate: a long conversation (lab.investigate.run.experiments.long_turns)
    # investigate: its parameters where they differ from chaos's (None: the same). A black box's
    # store's record shows the moment of its write, which chaos's service does not need.
    probe: tuple[tuple[str, Any], ...] | None = None


TABLE: tuple[Row, ...] = (
    Row(
        "none",
        (),
        "after_ack",
        "the incident's own cell: refreshed the moment the answer arrives, no fault",
        exposes=EVERY,
    ),
    Row(
        "none",
        (),
        "settled",
        "control: replies not stored, 5xx with writes applied, failing history reads, TTL",
        needs="",
    ),
    Row(
        "latency",
        SLOW_REDIS,
        "after_ack",
        "acknowledged before the write could complete; stale reads right after the ack",
        exposes=("fire_and_forget",),
        needs="",
    ),
    Row(
        "drop",
        (("one_shot", True), ("stream", "downstream")),
        "settled",
        "a Redis reply lost after the write: duplicates from a blind retry",
        exposes=("blind_retry",),
        needs="",
        # A black box: the reset lands on the reply to the send's first write of its key, not on
        # whatever the app reads first (a read that fails ends the send before any write; measured
        # on a Go app whose send checks the thread first: 6/6 drop trials 503 at the EXISTS, no
        # write reset, 2026-12-05).
        probe=(("at", "write"), ("one_shot", True), ("stream", "downstream")),
    ),
    Row(
        "down",
        (),
        "settled",
        "Redis unreachable for one send: acknowledged but never stored (swallowed errors)",
        exposes=("swallowed_errors",),
        needs="",
    ),
    Row(
        "ttl_elapse",
        (("ttl_ms", 2000),),
        "settled",
        "a conversation older than its TTL, each write renewing it or not (the service's TTL, set per trial)",
        exposes=("ttl_set_once",),
    ),
    Row(
        "none",
        (),
        "browser_restart",
        "a session cookie that does not survive a browser restart",
        exposes=("session_cookie",),
        needs="",
    ),
    Row(
        "none",
        (),
        "mid_stream",
        "every reply streamed, the last one cut after its first chunk (the connection closed as by a "
        "refresh or a closed tab): a turn stored only when its stream completes",
        exposes=("save_at_stream_end",),
        needs="streams",
    ),
    Row(
        "none",
        (),
        "settled",
        "a long conversation, no fault: loss only beyond a length (a capped history)",
        needs="",
        long=True,
    ),
    # Redis latency widens the GET -> SET window of a read-modify-write from one round trip
    # (about 2 of 10 built-in trials lose a turn without it) to 200 ms (10 of 10).
    Row(
        "latency",
        (("latency_ms", 100),),
        "two_tabs",
        "two tabs of one conversation send at once while Redis is slow: a history read, appended to and "
        "written back whole loses one tab's turn (a lost update)",
        exposes=("read_modify_write",),
        needs="",
    ),
    Row(
        "none",
        (),
        "double_submit",
        "a double click: the last message sent twice at once under its id; an append not idempotent by id "
        "stores it twice",
        exposes=("blind_retry",),
        needs="ids",
    ),
    Row(
        "model_error",
        (("kind", "rate_limit"),),
        "settled",
        "the model answers one send's call with a 429 (a provider under load): a user's message stored "
        "only once the model has answered is gone after the refresh",
        needs="model",
    ),
    Row(
        "model_error",
        (("kind", "server_error"), ("times", 1)),
        "settled",
        "the model fails one send's first call with a 500 and then recovers: an app that retries by "
        "storing the whole exchange again keeps the user's message twice",
        needs="model",
    ),
    Row(
        "model_cut",
        (),
        "settled",
        "the model's stream for one send stops part-way (a provider's stream breaking): a reply kept as "
        "if whole is half an answer after the refresh",
        needs="model",
    ),
    Row(
        "latency",
        SLOW_REDIS,
        "in_flight",
        "the incident's move: the page reloaded while the last send is in flight, the moment the store's "
        "record shows its first write -- acknowledged turns missing then (a rewrite: DEL, the rows pushed "
        "back one at a time), or lost if the aborted request cancels the write",
        needs="",
    ),
    # Appended (investigate's experiment numbers index these rows). The latency above delays
    # Redis's replies: a write the app sends and does not wait for reaches Redis at once all the
    # same, before its answer reaches the browser. Slow commands on their way in are what a write
    # left running after the answer meets (a Redis busy or far away).
    Row(
        "latency",
        (("latency_ms", 300), ("stream", "upstream")),
        "after_ack",
        "commands slow on their way to Redis, refreshed the moment the answer arrives: a write the answer "
        "did not wait for (a task, a promise, a thread) lands after it",
        needs="",
    ),
    # Appended. `down` fails an app's reads too: its send then answers an error before any write,
    # or hangs on a read (a Rust app's history read waited 30 s, 2026-12-05) -- the write's own
    # error path is never reached. Redis refusing writes and serving reads reaches it; in
    # investigate only the send's first write, so a question's write can fail while its reply's lands.
    Row(
        "write_refused",
        (),
        "settled",
        "Redis refuses one send's write, unapplied, and serves reads (a failover's READONLY): acknowledged "
        "but never stored -- the write's error swallowed, or lost in a task nobody awaits",
        needs="",
        probe=(("at", "write"),),
    ),
    # Appended: the mission's "errors swallowed after the reply was sent" -- a streamed reply
    # stored as or after it streams, its write's error logged once the user has the reply.
    Row(
        "write_refused",
        (("at", "answer"),),
        "settled",
        "Redis refuses the first write made once the answer has begun streaming (reads served): a reply "
        "stored after the user has it, its write's error swallowed -- acknowledged, never stored",
        needs="streams",
    ),
    # Appended: the same where the answer does not stream -- the first write after the send's first
    # change of the key (the reply's, where the question is stored first). An answer that waits on
    # something else on the app's connection (a session's save) comes after that write was sent:
    # no timing shows it left to a promise nobody awaits, and only its failure does.
    Row(
        "write_refused",
        (("at", "later"),),
        "settled",
        "Redis refuses the send's next write once it has stored its first (reads served): a reply's write "
        "left to a task nobody awaits, or its error caught -- acknowledged, never stored",
        needs="unstreamed",
    ),
)


def chaos_rows() -> list[Row]:
    """`lab chaos`'s default matrix, in order."""
    return [r for r in TABLE if r.exposes]


def investigate_rows() -> list[Row]:
    """`lab investigate`'s default plan, in order (before what a spec lacks is left out)."""
    return [r for r in TABLE if r.needs is not None]
