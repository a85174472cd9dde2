"""The schedule (Jepsen's generator): a seeded, deterministic plan for each trial.

A cell is (defect profile, fault, refresh point, turns); a trial plan adds the seed, the message
texts, which turn a one-send fault is armed around, and the pacing. Plans are plain data: the
same seed gives the same plan, and a plan's replay command rebuilds it exactly."""

from __future__ import annotations

import random
import shlex
from dataclasses import dataclass, field, replace
from typing import Any

from lab.common.errors import UsageError
from lab.faults import REGISTRY as FAULTS
from lab.faults import Fault, make
from lab.plan import ids
from lab.plan.knobs import check_knobs
from services.chat.defects import INCIDENT, REGISTRY as DEFECTS
from lab.common.config import script

REFRESH_POINTS = ("in_flight", "after_ack", "mid_stream", "settled", "reopen", "browser_restart", "two_tabs", "double_submit")  # fmt: skip
# Refresh points that are send patterns: the last turn is sent twice at nearly the same moment --
# from a second page of the same browser context (two_tabs: another message, same cookies), or
# the same message with the same id from one page (double_submit: a double click) -- and the
# page is refreshed once both have settled.
CONCURRENT_POINTS = ("two_tabs", "double_submit")
NAMES = ("Ada", "Grace", "Alan", "Barbara", "Edsger", "Frances", "Leslie", "Margaret", "Niklaus")
LIKES = ("chess", "sailing", "jazz", "tea", "hiking", "origami", "cycling", "astronomy")
FILLERS = (
    "Tell me something interesting.",
    "How is your day going?",
    "Any plans for later?",
    "What should I cook tonight?",
    "Recommend a book, please.",
    "Is it going to rain?",
)
DEFAULT_LLM_LATENCY_MS = 30
IN_FLIGHT_LLM_LATENCY_MS = 400  # the window in which "received, not yet answered" is observable
STREAM_TOKEN_DELAY_MS = 40
# The last turn of a mid_stream trial streams slowly: after a reload Chromium keeps reading
# ("draining") a response body for up to 5 s to reuse the socket, so a reply streamed faster
# than that completes on the server anyway. Measured here: 40 ms/token lost the turn in ~40 % of
# trials, 400 ms/token (about 6 s per reply) in every trial.
MID_STREAM_LAST_TOKEN_DELAY_MS = 400


def parse_profile(text: str) -> tuple[str, ...]:
    """'correct' | 'incident' | 'incident-<defect>' | 'a,b' -> defect names (registry order)."""
    text = text.strip()
    if text in ("correct", "", "none"):
        names: set[str] = set()
    elif text == "incident":
        names = set(INCIDENT)
    elif text.startswith("incident-"):
        minus = text.removeprefix("incident-")
        if minus not in INCIDENT:
            raise UsageError(
                f"profile {text!r}: {minus!r} is not in the incident profile",
                f"the incident's defects: {', '.join(INCIDENT)}",
            )
        names = set(INCIDENT) - {minus}
    else:
        names = {n.strip() for n in text.split(",") if n.strip()}
        unknown = sorted(names - DEFECTS.keys())
        if unknown:
            raise UsageError(
                f"unknown defect(s) {', '.join(unknown)}",
                f"valid: {', '.join(DEFECTS)}; or a profile: correct, incident, incident-<defect>",
            )
    return tuple(n for n in DEFECTS if n in names)


def profile_name(defects: tuple[str, ...]) -> str:
    if not defects:
        return "correct"
    if set(defects) == set(INCIDENT):
        return "incident"
    if set(defects) < set(INCIDENT) and len(defects) == len(INCIDENT) - 1:
        return "incident-" + next(d for d in INCIDENT if d not in defects)
    return ",".join(defects)


def parse_fault(text: str) -> tuple[str, dict[str, Any]]:
    """'latency' or 'latency:latency_ms=500,jitter_ms=0' -> (name, params), values typed."""
    name, _, rest = text.partition(":")
    params: dict[str, Any] = {}
    for item in filter(None, (x.strip() for x in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq:
            raise UsageError(f"fault parameter {item!r} is not key=value", "e.g. latency:latency_ms=500")
        params[key.strip()] = _typed(value.strip())
    make(name.strip(), **params)  # validates name and parameters, naming the valid ones
    return name.strip(), params


def _typed(v: str) -> Any:
    if v.lower() in ("true", "false"):
        return v.lower() == "true"
    try:
        return int(v)
    except ValueError:
        return v


def fault_text(name: str, params: dict[str, Any]) -> str:
    if not params:
        return name
    return (
        name + ":" + ",".join(f"{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in sorted(params.items()))
    )


@dataclass(frozen=True)
class Cell:
    defects: tuple[str, ...]
    fault: str
    refresh: str
    turns: int = 5
    fault_params: tuple[tuple[str, Any], ...] = ()
    user_retry: bool = True
    target: str = ""  # lab investigate: the app's name (its defects are unknown)
    # Also retry a send whose request failed with no answer at all (a cut acknowledgement:
    # ack_lost), as the page offers; off by default, where the retry of a 5xx is the one studied.
    # Set by `lab soak` only: `lab replay` cannot express it (its cell id ends in "+retry-cut").
    retry_cut: bool = False
    # A window sweep's variable (lab.plan.knobs), e.g. (("refresh_delay_ms", 30),): part of the
    # cell's id, carried by its plans to the driver and by its replay line.
    knobs: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        check_knobs(self.knobs, self.refresh)
        if self.refresh not in REFRESH_POINTS:
            raise UsageError(f"unknown refresh point {self.refresh!r}", f"valid: {', '.join(REFRESH_POINTS)}")
        if self.fault not in FAULTS:
            raise UsageError(f"unknown fault {self.fault!r}", f"valid: {', '.join(sorted(FAULTS))}")
        if not 1 <= self.turns <= 100:
            raise UsageError(f"turns={self.turns} is out of range [1, 100]")
        f = self.make_fault()
        if f.window != "trial" and self.turns < f.earliest_turn + 1:
            raise UsageError(
                f"fault {self.fault} is armed around turn {f.earliest_turn} or later, "
                f"before the last: needs turns >= {f.earliest_turn + 1}"
            )
        if "fault_onset_ms" in dict(self.knobs) and f.window != "send":
            raise UsageError(f"fault_onset_ms needs a one-send fault (down, blackhole, ...), not {self.fault}")
        if self.fault == "ttl_elapse" and self.turns < 5 and not self.params.get("span_pct"):
            raise UsageError("ttl_elapse needs turns >= 5 to run past 2 x TTL with gaps under TTL/2")

    @property
    def stream(self) -> bool:
        # mid_stream needs a streamed reply; so does save_at_stream_end to mean anything.
        return self.refresh == "mid_stream" or "save_at_stream_end" in self.defects

    @property
    def params(self) -> dict[str, Any]:
        return dict(self.fault_params)

    def make_fault(self) -> Fault:
        return make(self.fault, **self.params)

    @property
    def profile(self) -> str:
        return f"target:{self.target}" if self.target else profile_name(self.defects)

    @property
    def cell_id(self) -> str:
        return (
            f"{self.profile}|{fault_text(self.fault, self.params)}|{self.refresh}|t{self.turns}"
            + ("+retry-cut" if self.retry_cut else "")
            + "".join(f"+{k}={v}" for k, v in self.knobs)
        )

    @property
    def label(self) -> str:
        """The cell's column in tables and reports: fault / refresh point (/ turns if not 5)."""
        return (
            f"{fault_text(self.fault, self.params)}/{self.refresh}"
            + (f"/t{self.turns}" if self.turns != 5 else "")
            + "".join(f"/{k}={v}" for k, v in self.knobs)
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "cell_id": self.cell_id,
            "defects": list(self.defects),
            "profile": self.profile,
            "fault": self.fault,
            "fault_params": self.params,
            "refresh": self.refresh,
            "turns": self.turns,
            "stream": self.stream,
            **({"knobs": dict(self.knobs)} if self.knobs else {}),
        }


@dataclass(frozen=True)
class TrialPlan:
    cell: Cell
    trial_id: str
    seed: int
    messages: tuple[str, ...]
    fault_turn: int  # 1-based turn a one-send fault is armed around; 0 = whole trial
    llm_latency_ms: int
    token_delay_ms: int
    headers: dict[str, str] = field(default_factory=dict)
    think_ms: int = 0  # the user's pause before typing each turn after the first
    other_tab: str = ""  # two_tabs: the message the second tab sends with the last turn
    last_turn_headers: dict[str, str] = field(default_factory=dict)  # changed for the last send only
    # Window sweeps (lab.plan.knobs): the user's pause between the answer and an after_ack
    # refresh; the second tab's send after the first; the refresh not before this many ms after
    # the first send (ttl_elapse's span_pct: the conversation's age at the refresh).
    refresh_delay_ms: int = 0
    tab_gap_ms: int | None = None  # a window sweep's point (None: not swept)
    refresh_at_age_ms: int = 0
    fault_onset_ms: int = 0  # the one-send fault on this long after its turn's send began
    replay: str = ""  # a black-box trial's own replay command (lab investigate's); "": the cell's

    def replay_command(self, runs: int = 5, mode: str = "native", model: bool = False) -> str:
        if self.replay:
            return self.replay
        c = self.cell
        args = [
            script(),
            "replay",
            *(["--mode", mode] if mode != "native" else []),
            *(["--model"] if model else []),
            "--profile",
            c.profile,
            "--fault",
            fault_text(c.fault, c.params),
            "--refresh",
            c.refresh,
            "--turns",
            str(c.turns),
            "--seed",
            str(self.seed),
        ]
        if self.fault_turn:
            args += ["--fault-turn", str(self.fault_turn)]
        for k, v in c.knobs:
            args += ["--knob", f"{k}={v}"]
        return shlex.join(args + ["--runs", str(runs)])


# What every message of a trial carries when the replies come from the stand-in model: the
# stand-in's record is matched to a trial by a text of the user's message (lab.stack.model_link),
# and a plain plan's texts repeat across trials ("What is my name?" in each); "chaoslab probe"
# is what the stand-in's faults match (lab.faults.standin_plan).
def trial_tag(trial_id: str) -> str:
    """What every message of the trial ends with (after " ("): the stand-in's record, and its
    plans, are searched for it."""
    return f"chaoslab probe {trial_id})"


def tagged(plan: TrialPlan) -> TrialPlan:
    """The plan with each message (and the second tab's) unique to its trial."""
    tag = " (" + trial_tag(plan.trial_id)

    def one(m: str) -> str:
        return m if not m or m.endswith(tag) else m + tag  # tagged once, however often asked

    return replace(plan, messages=tuple(one(m) for m in plan.messages), other_tab=one(plan.other_tab))


def _pace(cell: Cell, fault: Fault) -> tuple[int, int, int]:
    """(the model's latency, the user's think time, the refresh's hold until this age) in ms."""
    ttl = getattr(fault, "ttl_ms", None)
    span_pct = getattr(fault, "span_pct", 0)
    if ttl is not None and span_pct:
        # A window sweep of the conversation's age: the turns (model latency and think time
        # alike) end about TTL/4 before the age, the refresh holds for the age itself. A TTL
        # renewed by the last write then outlives the read; per-turn overhead fits in the TTL/4.
        age_ms = ttl * span_pct // 100
        step = max(0, age_ms - ttl // 4) // (2 * cell.turns - 1)
        return step, step, age_ms
    if ttl is not None:
        # A turn = think 0.25 TTL + model 0.3 TTL + overhead: writes stay under TTL/2 apart with
        # room for a loaded machine, and the planned pace alone (5 x 0.3 + 4 x 0.25 = 2.5 TTL)
        # outlasts 2 x TTL with room for turns that fail fast (skipping the model); both are
        # checked per trial. (0.15 left 2.1 TTL: with a driver that waits less between turns,
        # 7 of 10 incident trials fell short of 2 x TTL.)
        return int(ttl * 0.3), int(ttl * 0.25), 0
    return (IN_FLIGHT_LLM_LATENCY_MS if cell.refresh == "in_flight" else DEFAULT_LLM_LATENCY_MS), 0, 0


def plan_trial(cell: Cell, seed: int, trial_id: str, fault_turn: int | None = None) -> TrialPlan:
    """One trial's plan, a pure function of (cell, seed[, fault_turn])."""
    rng = random.Random(seed)
    name, like = rng.choice(NAMES), rng.choice(LIKES)
    msgs = [f"Hi, my name is {name}.", f"I like {like}."]
    while len(msgs) < cell.turns - 1:
        msgs.append(f"{rng.choice(FILLERS)} (#{len(msgs) + 1})")
    msgs.append("What is my name?")
    msgs = msgs[-cell.turns :] if cell.turns < 3 else msgs[: cell.turns]
    fault = cell.make_fault()
    if fault.window == "trial":
        fault_turn = 0
    elif fault_turn is None:
        fault_turn = rng.randint(fault.earliest_turn, cell.turns - 1)
    elif not fault.earliest_turn <= fault_turn < cell.turns:
        raise UsageError(
            f"fault turn {fault_turn} is out of range [{fault.earliest_turn}, {cell.turns - 1}] for {fault.name}",
            "a one-send fault is armed around an earlier turn than the refresh"
            + ("; a restart needs a stored turn before it" if fault.earliest_turn > 1 else ""),
        )
    latency, think, age_ms = _pace(cell, fault)
    headers = {
        "X-Lab-Defects": ",".join(cell.defects),
        "X-Lab-Trial": trial_id,
        "X-Lab-Llm-Latency-Ms": str(latency),
        **fault.headers(),
    }
    if cell.stream:
        headers["X-Lab-Token-Delay-Ms"] = str(STREAM_TOKEN_DELAY_MS)
    other = f"(other tab) {rng.choice(FILLERS)}" if cell.refresh == "two_tabs" else ""
    last = {"X-Lab-Token-Delay-Ms": str(MID_STREAM_LAST_TOKEN_DELAY_MS)} if cell.refresh == "mid_stream" else {}
    return TrialPlan(
        cell,
        trial_id,
        seed,
        tuple(msgs),
        fault_turn,
        latency,
        token_delay_ms=STREAM_TOKEN_DELAY_MS if cell.stream else 0,
        headers=headers,
        think_ms=think,
        other_tab=other,
        last_turn_headers=last,
        refresh_delay_ms=dict(cell.knobs).get("refresh_delay_ms", 0),
        tab_gap_ms=dict(cell.knobs).get("tab_gap_ms"),
        refresh_at_age_ms=age_ms,
        fault_onset_ms=dict(cell.knobs).get("fault_onset_ms", 0),
    )


def plan_cell(cell: Cell, trials: int, seed: int, prefix: str = "") -> list[TrialPlan]:
    """A cell's trials. One-send faults hit the same turn in every trial of the cell, so the
    trials can run in lockstep inside one fault window."""
    fault = cell.make_fault()
    turn = random.Random(seed).randint(fault.earliest_turn, cell.turns - 1) if fault.window != "trial" else None
    return [plan_trial(cell, ids.trial_seed(seed, i), ids.trial_id(prefix, i), turn) for i in range(trials)]
