"""Diagnoses: claims about an app's code drawn from the one checker's results, each with its
evidence (numbers and trial ids). One diagnosis = one small module in this package, registered by
name with the evidence it needs; a new anomaly is one module and one test.

A diagnosis is drawn only from evidence that nothing else explains: a trial the checker left
unknown never counts, and each module says which trials could have shown it (its pool).

May import: lab.model.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from lab.model.checker import Result, check_safe
from lab.model.history import Send, Trial
from lab.model.stats import wilson
from lab.diagnoses import _ttl


@dataclass
class Diagnosis:
    code: str
    cause: str  # what points at the cause, in words
    evidence: str  # numbers and trial ids
    k: int  # trials showing it
    n: int  # trials that could show it
    trials: list[str] = field(default_factory=list)
    # Trials outside its own evidence whose loss the same cause explains (e.g. a capped history
    # under a fault): acked_lost does not claim them, and they do not count in k/n.
    also: list[str] = field(default_factory=list)
    # The command that replays one of its trials (its first) and says how often the diagnosis
    # is drawn again ("reproduced k/N"); set by the run that knows its seed and options.
    replay: str | None = None

    def as_json(self) -> dict[str, Any]:
        lo, hi = wilson(self.k, self.n)
        return {
            "code": self.code,
            "cause": self.cause,
            "evidence": self.evidence,
            "k": self.k,
            "n": self.n,
            "ci95": [round(lo, 4), round(hi, 4)],
            "trials": self.trials,
            "also_explains": self.also,
            "replay": {"trial": self.trials[0], "command": self.replay} if self.replay and self.trials else None,
        }

    def sentence(self) -> str:
        return f"{self.cause} -- {rate_words(self.k, self.n)}: {self.evidence}"


ONE_TRIAL = "in the one trial that could show it (one trial gives no rate: run --trials 3 or more)"


def rate_words(k: int, n: int) -> str:
    """k/n with its Wilson interval -- never from one trial, which is a sighting, not a rate."""
    if n < 2:
        return ONE_TRIAL
    lo, hi = wilson(k, n)
    return f"{k}/{n} trials [{lo:.2f}, {hi:.2f}]"


@dataclass(frozen=True)
class Judged:
    """One trial the checker gave a verdict for, with turn-number views of its result."""

    trial: Trial
    result: Result

    @property
    def id(self) -> str:
        return self.trial.trial_id

    def turns(self, ids: Iterable[str]) -> list[int]:
        return self.trial.turns_of(ids)

    @property
    def acked(self) -> list[int]:
        return self.turns(self.result.acked)

    @property
    def lost_user(self) -> list[int]:
        """Turns whose user row is missing -- except lost updates: a turn in flight with another
        whose row survived may have been overwritten by it, so its loss is evidence only for
        lost_update (not for a cause that loses writes one at a time)."""
        return self.turns(i for i in self.result.lost["user"] if i not in self.result.lost_update)

    @property
    def copies_of_faulted_only(self) -> bool:
        """Turns stored more than once, every one of them a turn sent under the fault."""
        dup = set(self.turns(self.result.duplicated_ids))
        return bool(dup) and dup <= {s.turn for s in self.trial.sends if s.under_fault}

    @property
    def hidden_stored(self) -> list[int]:
        """Turns the history did not show whose user text the Redis key holds (black box)."""
        stored = set((self.trial.redis_final or {}).get("stored_turns", []))
        return [t for t in self.lost_user if t in stored]

    @property
    def stale(self) -> list[int]:
        """Turns missing from the page after the refresh that the settled history has. All of
        them (the checker calls that amnesia) count too when nothing else explains it: the
        page's read succeeded, in the same browser context (a browser restart is the cookie's
        business) and every acknowledged turn is there at the end -- e.g. a cache filled before
        the first send. (A session lost at the reload would leave the settled read, made with
        the cookies the reload left, empty too.)"""
        r = self.result
        if r.stale:
            return self.turns(r.stale)
        if r.amnesia and not r.page_failed and self.trial.refresh != "browser_restart" and not r.lost_turns:
            return self.acked
        return []

    @property
    def reply_missing(self) -> list[int]:
        return self.turns(i for i in self.result.reply_missing if i not in self.result.lost_update)

    @property
    def cut(self) -> set[int]:
        """Turns whose streamed reply the lab cut: their loss is saved_at_stream_end's to explain."""
        return {s.turn for s in self.trial.sends if s.cut}

    def send(self, turn: int) -> Send | None:
        return next((s for s in self.trial.sends if s.turn == turn), None)


@dataclass
class Evidence:
    """What a diagnosis reads: every trial, the judged ones, and what was drawn before it."""

    trials: list[Trial]
    judged: list[Judged]
    found: list[Diagnosis] = field(default_factory=list)


# What a diagnosis may need, each a question about one trial: a diagnosis is judged only when
# some trial of the run holds all of its needs (else it is listed as not judged, with why).
EVIDENCE: dict[str, Callable[[Trial], bool]] = {
    "page": lambda t: t.page_after_refresh is not None,
    "ttl": lambda t: any(o.settled and o.pttl_ms >= 0 for o in t.ttl),
    # A TTL rule can be read: from settled PTTL reads after the turns, or from the store's record
    # of the app setting one (a user's own test drives the page and no read comes between turns).
    "ttl_set": lambda t: EVIDENCE["ttl"](t) or _ttl.sets_ttl(t),
    # The conversation is meant to expire: the spec says so ([redis] expires = true), or the key
    # had a TTL at some read, or the store's record shows the app setting one (an app that keeps
    # conversations on purpose never sets one; one whose later plain SET clears it was read -1
    # after every turn: an Express app written unseen, 2026-12-06).
    "expiry": lambda t: (
        (t.redis_final or {}).get("expires") is not False
        and (
            (t.redis_final or {}).get("expires") is True
            or any(o.pttl_ms >= 0 for o in t.ttl)
            or (t.redis_final or {}).get("pttl_ms", -1) >= 0
            or _ttl.sets_ttl(t)
        )
    ),
    "key": lambda t: t.redis_final is not None,
    "store": lambda t: t.store is not None,
    "model": lambda t: bool(t.model_calls),
    "cookie": lambda t: t.cookie_persistent is not None,
    "cookie_scope": lambda t: t.cookie_scope is not None,
    "stream_cut": lambda t: any(s.cut for s in t.sends),
    "fault": lambda t: t.fault != "none",
    "latency": lambda t: t.fault == "latency",
    "redis_unreachable": lambda t: t.fault in ("down", "drop"),
    "write_refused": lambda t: t.fault == "write_refused",
    "drop": lambda t: t.fault == "drop",
    "redis_restart": lambda t: t.fault == "redis_restart",
    "browser_restart": lambda t: t.refresh == "browser_restart",
    "no_fault": lambda t: t.fault == "none",
    "concurrent": lambda t: bool(t.concurrent and t.concurrent.get("in_flight_together")),
    "double_submit": lambda t: t.refresh == "double_submit",
}


@dataclass(frozen=True)
class Entry:
    code: str
    fn: Callable[[Evidence], "Diagnosis | list[Diagnosis] | None"]
    needs: tuple[str, ...]
    explains_loss: bool  # its trials' loss has a cause: acked_lost does not claim them
    last: bool  # runs after the others (reads what they found)
    after: tuple[str, ...]  # runs after these (reads what they found)


REGISTRY: dict[str, Entry] = {}


def register(
    code: str,
    *,
    needs: tuple[str, ...] = (),
    explains_loss: bool = False,
    last: bool = False,
    after: tuple[str, ...] = (),
) -> Callable[[Callable[[Evidence], Any]], Callable[[Evidence], Any]]:
    for n in needs:
        if n not in EVIDENCE:
            raise ValueError(f"diagnosis {code}: unknown evidence {n!r}; known: {', '.join(EVIDENCE)}")

    def wrap(fn: Callable[[Evidence], Any]) -> Callable[[Evidence], Any]:
        REGISTRY[code] = Entry(code, fn, needs, explains_loss, last, after)
        return fn

    return wrap


def _load() -> None:
    for mod in pkgutil.iter_modules(__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__name__}.{mod.name}")


def ordered() -> list[Entry]:
    """Each entry after those it names in ``after``, the ``last`` ones after all others."""
    _load()
    out: list[Entry] = []
    todo = sorted(REGISTRY.values(), key=lambda e: (e.last, e.code))
    while todo:
        done = {e.code for e in out}
        ready = next((e for e in todo if all(a in done or a not in REGISTRY for a in e.after)), None)
        if ready is None:
            raise ValueError(f"diagnoses: a cycle in `after` among {', '.join(e.code for e in todo)}")
        out.append(ready)
        todo.remove(ready)
    return out


def judge(trials: list[Trial], checked: list[Result] | None = None) -> list[Judged]:
    """The judged trials with their checker's results: ``checked`` (one per trial, in order)
    where the run has checked them already -- the checker runs once per trial."""
    results = checked if checked is not None else [check_safe(t) for t in trials]
    if len(results) != len(trials):
        raise ValueError(f"diagnoses: {len(results)} results for {len(trials)} trials")
    return [Judged(t, r) for t, r in zip(trials, results, strict=True) if r.validity != "unknown"]


def judged_by(trials: list[Trial]) -> Callable[[Entry], bool]:
    def ok(e: Entry) -> bool:
        return any(all(EVIDENCE[n](t) for n in e.needs) for t in trials)

    return ok


def diagnose(trials: list[Trial]) -> list[Diagnosis]:
    return run(trials)[0]


def run(trials: list[Trial], checked: list[Result] | None = None) -> tuple[list[Diagnosis], dict[str, str]]:
    """(the diagnoses drawn, {code: why it could not be judged}) for one run's trials;
    ``checked``: their checker's results, where the run has them (else checked here)."""
    _load()
    ev = Evidence(trials, judge(trials, checked))
    has = judged_by(trials)
    not_judged: dict[str, str] = {}
    for entry in ordered():
        if not has(entry):
            not_judged[entry.code] = f"needs {' + '.join(entry.needs)} in one trial"
            continue
        got = entry.fn(ev)
        ev.found += [got] if isinstance(got, Diagnosis) else (got or [])
    return ev.found, not_judged


def explained(found: list[Diagnosis], *codes: str) -> set[str]:
    """Trials whose loss a diagnosis that explains loss has claimed (of ``codes`` only, if given)."""
    return {
        t for d in found if REGISTRY[d.code].explains_loss and (not codes or d.code in codes) for t in d.trials + d.also
    }


# Shared wording helpers: every diagnosis names its trials the same way.
def ids(items: Iterable[Judged | Trial]) -> list[str]:
    return [x.id if isinstance(x, Judged) else x.trial_id for x in items]


def few(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" (+{len(names) - 4})" if len(names) > 4 else "")


ANOMALY_WORDS = {
    "lost": "acknowledged turns lost",
    "duplicated": "duplicates",
    "reordered": "turns stored out of order",
    "phantom_fail": "errors whose write was applied",
    "amnesia": "amnesia after the refresh",
    "history_failed": "history reads failed after the refresh",
    "stale": "stale reads",
}


def bounds(judged: list[Judged]) -> dict[str, tuple[int, int, float]]:
    """For a clean result: per anomaly, (k, n, Wilson upper bound) over the judged trials."""
    out = {}
    for name in ANOMALY_WORDS:
        k = sum(1 for j in judged if j.result.anomalies()[name])
        out[name] = (k, len(judged), wilson(k, len(judged))[1])
    return out


def pools(judged: list[Judged]) -> dict[str, int]:
    """Per diagnosis, how many judged trials held all the evidence it needs (its chances)."""
    _load()
    return {e.code: sum(1 for j in judged if all(EVIDENCE[n](j.trial) for n in e.needs)) for e in REGISTRY.values()}
