"""The terminal summary of `pytest --lab-target`: per test and fault, over its repeats, the
anomaly rates with Wilson intervals, the diagnoses drawn from those trials (the same modules as
`lab investigate`), what the stand-in model was told where the spec has [model] (the same
line as `lab investigate`'s: a silent diagnosis says over how many calls), and a replay line for
each failing trial's test."""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING

from lab import diagnoses as dg
from lab.common import redact
from lab.model.outcome import TrialOutcome
from lab.model.stats import fmt_rate
from lab.plan.schedule import fault_text
from lab.report.model_side import model_side

if TYPE_CHECKING:
    from lab.model.checker import Result
    from lab.model.history import Trial


def lines(records: list[tuple[str, "Trial", "Result"]], replay: list[str], artifact: Callable[[str], str]) -> list[str]:
    """``replay``: the options that rerun a trial's test (target, sets, seed); ``artifact``: a
    trial's record file. Redacted (lab.common.redact): a reason or an evidence quotes the app,
    which may echo a login's secret."""
    return [redact.text(line) for line in _lines(records, replay, artifact)]


def _lines(
    records: list[tuple[str, "Trial", "Result"]], replay: list[str], artifact: Callable[[str], str]
) -> list[str]:
    groups: dict[tuple[str, str], list[tuple["Trial", "Result"]]] = defaultdict(list)
    for test, t, r in records:
        groups[(test, fault_text(t.fault, t.fault_params))].append((t, r))
    out: list[str] = []
    for (test, fault), group in groups.items():
        judged = [dg.Judged(t, r) for t, r in group if r.validity != "unknown"]
        unknown = [r.reasons[0] if r.reasons else "unknown" for _, r in group if r.validity == "unknown"]
        out.append(f"{test} under {fault}: {len(judged)} judged trials of {len(group)}")
        out += [f"  unknown: {why}" for why in sorted(set(unknown))[:3]]
        found, _ = dg.run([t for t, _ in group], [r for _, r in group])
        for name, (k, n, _) in dg.bounds(judged).items():
            if k or name in ("lost", "stale", "duplicated"):
                out.append(f"  {dg.ANOMALY_WORDS[name]}: {fmt_rate(k, n)}")
        if any(t.model_calls is not None for t, _ in group):
            out.append(
                f"  model: {model_side([TrialOutcome(None, t, r) for t, r in group])['what'] or 'no judged trial'}"
            )
        for d in found:
            out.append(f"  [{d.code}] {d.cause} -- {fmt_rate(d.k, d.n)}: {d.evidence}")
        if not found and judged and not any(j.result.validity == "invalid" for j in judged):
            out.append(f"  no anomaly found in {len(judged)} judged trials (rates above: 95 % upper bounds)")
        first = [t.trial_id for t, r in group if r.validity == "invalid"][:1] + [d.trials[0] for d in found if d.trials]
        for trial_id in dict.fromkeys(first):
            test = trial_id.split("[")[0]  # the test itself: its repeats are its trials
            out.append(f"  replay: {shlex.join(['pytest', test, *replay, '--count', '5'])}")
            out.append(f"    its record: {artifact(trial_id)}")
    return out
