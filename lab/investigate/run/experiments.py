"""The experiments of `lab investigate`: fault x refresh point x turns, each there for the
causes it can expose (its ``why``) -- the rows of the one table (lab.plan.experiments) an app of
the spec's shape can be tried by, and their trials' ids and seeds (TrialId). Plain data; a trial
id's experiment number indexes the full plan (full_plan), so a replay names the same experiment
whatever --only chose."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from lab.common.errors import UsageError
from lab.faults import Fault, make
from lab.faults.standin_plan import PROBES
from lab.plan import ids
from lab.plan.experiments import investigate_rows
from lab.plan.schedule import Cell

if TYPE_CHECKING:
    from lab.investigate.spec.parse import Spec

# The last turns sent from two tabs at once (two_tabs), or twice from one (double_submit). Two
# rounds of two tabs: an app with a connection pool may open its second connection in the first
# round, and that handshake (round trips under the injected latency) can hold one request back
# until the other has finished -- measured on examples/foreign_app.py: the second request's
# first read came 0.4 s late, after the other's write. The second round meets a warm pool.
TWO_TAB_ROUNDS = {"two_tabs": 2, "double_submit": 1}


def probe_message(spec: Spec, trial_id: str, turn: int, nonce: str, tab: str = "") -> tuple[str, str | None]:
    """A send's text and id (None: the API takes none, or the app's page sends it)."""
    # Unique per message: where rows carry no ids the lab matches them by text (a tab's too).
    text = f"{PROBES} {trial_id} turn {turn}{tab} {nonce}"
    mid = f"{trial_id}-t{turn}{tab}-{nonce}" if spec.chat.id_field and spec.page is None else None
    return text, mid


@dataclass(frozen=True)
class Experiment:
    fault: str
    params: tuple[tuple[str, Any], ...]
    refresh: str
    turns: int
    why: str
    delay_ms: int = 0  # lab window: the after_ack reload this long after the answer
    # lab window: two_tabs' second tab sends this long after the first (None: not swept; a swept
    # 0 claims the two sends left together, and is checked for it)
    gap_ms: int | None = None

    def cell(self, target: str) -> Cell:
        """The experiment as a cell of the results (the same schema as `lab chaos`'s)."""
        knobs: tuple[tuple[str, int], ...] = (("refresh_delay_ms", self.delay_ms),) if self.delay_ms else ()
        knobs += (("tab_gap_ms", self.gap_ms),) if self.gap_ms is not None else ()
        return Cell((), self.fault, self.refresh, self.turns, self.params, user_retry=False, target=target, knobs=knobs)

    @property
    def label(self) -> str:
        return self.cell("?").label

    @cached_property
    def built(self) -> Fault:
        """Its fault, built once (its window, its step delay; a group's Lockstep arms it)."""
        return make(self.fault, **dict(self.params))


MODEL_FAULTS = {"model_error", "model_cut", "model_stall"}  # the stand-in's: a spec with [model] only
# Faults that restart or reconfigure Redis itself: never an app's own ([start] external).
OWN_REDIS = {"redis_restart", "write_refused"}


def optional_plan(turns: int) -> list[Experiment]:
    """Opt-in (--only): these test the environment as much as the app."""
    return [
        Experiment(
            "redis_restart",
            (("durable", False),),
            "settled",
            turns,
            "Redis killed and restarted before one send: loss when Redis has no persistence "
            "(the lab's Redis has none: this checks what the app does about it)",
        ),
        # Appended: a trial id's experiment number indexes the full plan.
        Experiment(
            "model_stall",
            (),
            "settled",
            turns,
            "the model answers nothing to one send's call (no first token) past the app's timeout, then "
            "hangs up: a user's message stored only once the model has answered is gone after the refresh "
            "([model]; each trial waits out the stall)",
        ),
    ]


def default_plan(turns: int, streams: bool = False, ids: bool = False, model: bool = False) -> list[Experiment]:
    """Each experiment is there for the causes it can expose (the `why`). ``streams``: the
    spec has a [stream] section, so a reply can be cut mid-stream. ``ids``: the API takes a
    message id and the lab's page drives it, so a double submit is one message sent twice (an
    app with no ids cannot tell a double click from two equal messages: not judged there).
    ``model``: the spec has [model], so the stand-in can answer a call with an error or cut its stream."""
    has = {"": True, "streams": streams, "unstreamed": not streams, "ids": ids, "model": model}
    return [
        Experiment(r.fault, r.probe or r.params, r.refresh, long_turns(turns) if r.long else turns, r.why)
        for r in investigate_rows()
        if has[r.needs or ""]
    ]


def for_spec(spec: "Spec", turns: int) -> list[Experiment]:
    """The default plan for what the spec has: a stream to cut, message ids, a model to fail."""
    plan = default_plan(turns, spec.streams, uses_ids(spec), spec.model is not None)
    return [e for e in plan if applicable(spec, e)]


def full_plan(spec: "Spec", turns: int) -> list[Experiment]:
    """Every experiment, default and opt-in: a trial id's experiment number indexes this list,
    so a replay command names the same experiment whatever --only chose."""
    return for_spec(spec, turns) + optional_plan(turns)


def uses_ids(spec: "Spec") -> bool:
    """The lab sends message ids: the API takes one and the lab's page drives it."""
    return bool(spec.chat.id_field) and spec.page is None


def long_turns(turns: int) -> int:
    """The long conversation's length: long enough for the caps apps commonly set on a history
    (10-20 messages), short enough to stay a few seconds per trial."""
    return min(100, max(12, 4 * turns))


def only_filter(spec: "Spec", text: str, where: str) -> Callable[[Experiment], bool] | None:
    """--only 'down|mid_stream' as a filter of experiments (None: the default plan), an item
    perhaps pinning its parameters ('write_refused:at=write'); an unknown name, or mid_stream
    without a [stream] section in the spec, is refused (UsageError)."""
    # An item may name a fault's parameters too: write_refused:at=write (that row only).
    items = {f.strip() for f in text.split("|") if f.strip()}
    pinned = {
        name: dict(kv.split("=", 1) for kv in rest.split(",") if "=" in kv)
        for name, _, rest in (i.partition(":") for i in items)
    }
    wanted = set(pinned)
    if not wanted:
        return None
    plan = default_plan(3, streams=True, ids=True, model=True) + optional_plan(3)
    known = {e.fault for e in plan} | {e.refresh for e in plan}
    if wanted - known:
        raise UsageError(
            f"--only {text!r}: unknown experiment(s) {', '.join(sorted(wanted - known))}",
            f"valid: faults {', '.join(sorted({e.fault for e in plan}))}; refresh points "
            f"{', '.join(sorted({e.refresh for e in plan}))}",
        )
    if own := sorted(wanted & OWN_REDIS) if spec.start.external else []:
        raise UsageError(
            f"--only {text!r}: {'/'.join(own)} needs the lab's own Redis; [start] external = true uses the app's",
            "leave it out: an app's Redis is not the lab's to kill or reconfigure",
        )
    if "mid_stream" in wanted and not spec.streams:
        raise UsageError(
            f"--only {text!r}: mid_stream needs a [stream] or [transport] section in {where}",
            "add [stream] with the request fields that make the answer stream, e.g. request = { stream = true }",
        )
    if wanted & MODEL_FAULTS and spec.model is None:
        raise UsageError(
            f"--only {text!r}: {'/'.join(sorted(wanted & MODEL_FAULTS))} needs a [model] section in {where} (the stand-in model answers the app)",
            'add [model] with the protocol the app speaks, e.g. protocols = ["openai_chat"] (docs/model.md)',
        )

    # A refresh point also names experiments the spec cannot run (settled: model_stall without a
    # [model], redis_restart on an app's own Redis): left out, not run into an unexercised cell.
    def chosen(e: Experiment) -> bool:
        name = e.fault if e.fault in wanted else e.refresh if e.refresh in wanted else None
        params = {k: str(v).lower() for k, v in e.params}
        return name is not None and all(params.get(k) == v.lower() for k, v in pinned[name].items())

    return lambda e: chosen(e) and applicable(spec, e)


def applicable(spec: "Spec", e: Experiment) -> bool:
    # write_refused at=later is switched on by the store's record of the key's first change: with
    # no [redis] key (an app keeping each message under a key of its own) nothing can switch it
    # on -- left out, as a model's fault is without [model], not run to be unknown every time.
    later = e.fault == "write_refused" and dict(e.params).get("at") == "later"
    return (
        not (e.fault in MODEL_FAULTS and spec.model is None)
        and not (e.fault in OWN_REDIS and spec.start.external)
        and not (later and not spec.redis.key)
    )


# An investigation's trial ids, in the lab's one scheme (lab.plan.ids): the group is the
# experiment, ``e<N>-<fault>-<refresh>-``: its number in the full plan (full_plan), its fault and
# refresh point (for a reader); k the trial's number in it. The trial's seed is the scheme's, of
# the run's seed, N and k: the id printed in a replay line and the run's seed rebuild the trial
# (`lab replay --target FILE --seed S --trial ID`).
@dataclass(frozen=True)
class TrialId:
    no: int  # the experiment's number in the full plan
    k: int  # the trial's in its experiment

    @classmethod
    def parse(cls, text: str) -> "TrialId":
        """'e3-down-settled-01' -> TrialId(3, 1); anything else is refused (UsageError)."""
        try:
            group, k = ids.split(text)
            head = group.partition("-")[0]
            if not head.startswith("e"):
                raise ValueError(head)
            return cls(int(head[1:]), k)
        except ValueError:
            raise UsageError(
                f"--trial {text!r} is not a trial id of lab investigate",
                "copy it from results.json (e.g. e3-down-settled-01) or the replay line of a run",
            ) from None

    def text(self, exp: Experiment) -> str:
        return ids.trial_id(prefix(self.no, exp), self.k, width=2)

    def seed(self, run_seed: int) -> int:
        return ids.trial_seed(ids.group_seed(run_seed, f"e{self.no}"), self.k)


def prefix(no: int, exp: Experiment) -> str:
    """What the ids of experiment ``no``'s trials begin with (the stand-in paces the calls
    carrying it)."""
    return f"e{no}-{exp.fault}-{exp.refresh}-"
