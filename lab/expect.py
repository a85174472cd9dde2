"""Assertions over a cell's trials for pytest, with Jepsen-strict reporting: on failure the
message names the counts, the artifacts land in pytest-playwright's layout
(``test-results/<test-id>/``), and the last line is a one-line replay command."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, Literal

from lab.model.attribution import cell_stats
from lab.model.checker import NOTHING_ACKED
from lab.model.outcome import CellOutcome, TrialOutcome
from lab.runner.runner import Runner
from lab.plan import ids
from lab.plan.schedule import Cell, TrialPlan, plan_cell
from lab.common.wait import in_own_thread

# An exact number of trials, an inclusive range, or ALL: every trial judged (those unknown_ok
# excuses are not judged).
Expectation = int | tuple[int, int] | Literal["all"]
ALL: Literal["all"] = "all"


# Unknown for a reason that says the experiment's own precondition missed -- timing on a loaded
# machine (two sends that did not overlap, pacing that did not hold) -- not that the lab or the
# app broke: such a trial is replaced by a new one, as `lab lesson --check` does, up to
# REPLACE_FACTOR x the trials planned for the cell in all.
HONEST_UNKNOWN = (
    "concurrent sends not exercised",
    "the experiment's preconditions did not hold",
    "the browser dropped",  # a send or the history read, as the machine's network changed (lab.model.checker)
)
REPLACE_FACTOR = 2
DRIVER_RETRY = "driver (retry)"  # lab.driver.conversation: the user's retry could not be made
REPLACE_ROUNDS = 3


def honestly_unknown(t: TrialOutcome) -> bool:
    """A missed precondition; or no send acknowledged with no HTTP answer to any of them (every
    one timed out or was aborted: seen on loaded CI runners, one trial of a cell); or a retry
    the driver could not make of a send that got no answer. Sends the app
    answered with an error are the app's doing (a broken shared client): the test must see them."""
    r = t.result
    if r.validity != "unknown" or not r.reasons:
        return False
    unanswered = bool(t.trial.sends) and all(s.status is None for s in t.trial.sends)
    # The user's retry of a send that got no HTTP answer (it timed out: a loaded machine, one
    # trial of a correct cell in a fresh-clone run, 2026-12-03) found no retry button to press.
    retry_of_silence = bool(t.trial.sends) and t.trial.sends[-1].status is None
    return (
        r.reasons[0].startswith(HONEST_UNKNOWN)
        or (r.reasons[0].startswith(NOTHING_ACKED) and unanswered)
        or (r.reasons[0].startswith(DRIVER_RETRY) and retry_of_silence)
    )


def _run(stack: Any, plans: list[tuple[Cell, list[TrialPlan]]], out_dir: Path, concurrency: int) -> list[CellOutcome]:
    return list(in_own_thread(lambda: Runner(stack, out_dir, concurrency=concurrency).run(plans), "lab-grid"))


def run_grid(
    stack: Any, plans: list[tuple[Cell, list[TrialPlan]]], out_dir: Path, concurrency: int = 4, replace: bool = True
) -> dict[str, CellOutcome]:
    """Run planned cells and index the outcomes by cell id. With ``replace``, trials left unknown
    for an honest reason (HONEST_UNKNOWN) are replaced by new trials of their cell, in rounds, up
    to REPLACE_FACTOR x the planned trials: a test then fails only on a wrong claim, or on too
    few trials judged even after replacing (assert_cell says which)."""
    outcomes = {o.cell.cell_id: o for o in _run(stack, plans, out_dir, concurrency)}
    planned = {c.cell_id: (c, ps) for c, ps in plans}
    for round_no in range(1, REPLACE_ROUNDS + 1) if replace else ():
        more = []
        for cid, o in outcomes.items():
            cell, ps = planned[cid]
            honest = [t for t in o.trials if honestly_unknown(t)]
            room = REPLACE_FACTOR * len(ps) - len(o.trials) - len(o.replaced)
            want = min(len(honest), room)
            if want > 0:
                o.replaced += honest[:want]
                o.trials = [t for t in o.trials if t not in honest[:want]]
                # room > 0 means the cell had plans (lab.plan.ids: "<prefix><k>").
                prefix = f"{ids.split(ps[0].trial_id)[0]}r{round_no}-"
                more.append((cell, plan_cell(cell, want, ids.group_seed(ps[0].seed, cell.cell_id, round_no), prefix)))
        if not more:
            break
        for got in _run(stack, more, out_dir, concurrency):
            outcomes[got.cell.cell_id].trials += got.trials
    return outcomes


def _slug(nodeid: str) -> str:
    # pytest-playwright's folder naming: the node id with non-word characters as dashes.
    return re.sub(r"[^\w.-]+", "-", nodeid).strip("-").lower()


def assert_cell(
    outcome: CellOutcome,
    nodeid: str,
    *,
    output_dir: Path = Path("test-results"),
    min_ack_ratio: float | None = None,
    unknown_ok: tuple[str, int] | None = None,
    **expected: Expectation,
) -> None:
    """Check how many trials showed each anomaly (lost, duplicated, amnesia, expired,
    phantom_fail, stale); unknown trials are never counted as passing.

    ``unknown_ok=(reason, n)`` tolerates up to n unknown trials whose only reason starts with
    ``reason`` -- for a defect whose own symptom can leave a trial nothing to judge (every send
    refused); those trials still count for nothing, and the rest must meet the expectations."""
    st = cell_stats(outcome)
    n = len(outcome.trials)
    problems = []
    if st.status == "unexercised":
        problems.append(f"cell unexercised: {st.reason}")
    unknown = [t for t in outcome.trials if t.result.validity == "unknown"]
    excused: list[TrialOutcome] = []
    if unknown_ok is not None:
        prefix, most = unknown_ok
        excused = [t for t in unknown if all(r.startswith(prefix) for r in t.result.reasons)]
        if len(excused) <= most:
            unknown = [t for t in unknown if t not in excused]
        else:
            excused = []
    if unknown:
        reasons = sorted({r for t in unknown for r in t.result.reasons})
        after = (
            f" even after replacing {len(outcome.replaced)} unknown trials (the bound: {REPLACE_FACTOR}x)"
            if outcome.replaced
            else ""
        )
        problems.append(f"too few trials judged: {len(unknown)}/{n} unknown{after}: {'; '.join(reasons)[:300]}")
    for anomaly, want in expected.items():
        got = st.anomalies.get(anomaly, 0) if anomaly not in st.with_metric else st.with_metric[anomaly]
        lo, hi = (n - len(excused),) * 2 if want == ALL else (want, want) if isinstance(want, int) else want
        if not lo <= got <= hi:
            problems.append(f"{anomaly}: {got}/{n} trials, expected " + (f"{lo}" if lo == hi else f"{lo}..{hi}"))
    if min_ack_ratio is not None and st.sends and st.acked_sends / st.sends < min_ack_ratio:
        problems.append(f"acknowledged {st.acked_sends}/{st.sends} sends, under {min_ack_ratio:.0%}")
    if not problems:
        return
    folder = output_dir / _slug(nodeid)
    folder.mkdir(parents=True, exist_ok=True)
    for t in outcome.trials:
        if t.artifacts and Path(t.artifacts).is_dir():
            shutil.copytree(t.artifacts, folder / t.trial_id, dirs_exist_ok=True)
    example = next((t for t in outcome.trials if t.failed), outcome.trials[0] if outcome.trials else None)
    lines = [
        f"{outcome.cell.cell_id}: " + "; ".join(problems),
        f"anomalies per trial: {st.anomalies}",
        f"artifacts: {folder}",
    ]
    if example is not None:
        lines.append(f"replay: {example.replay_command()}")
    raise AssertionError("\n".join(lines))
