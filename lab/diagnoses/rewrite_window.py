"""The store's record shows acknowledged rows deleted and written back one command at a time:
the conversation is rewritten whole, not atomically -- a read in between shows a partial
history, a crash in between loses the turns.

What else leaves a removal and a write-back outside any MULTI: the same rewrite sent as one
pipeline (ioredis' pipeline(), redis-py's pipeline(transaction=False)). Redis runs a pipeline
that arrives in one read back to back, so no other client's read falls between its commands,
and its gap in the record is microseconds. One awaited command at a time leaves a gap of a round
trip -- under a fraction of a millisecond on the lab's link, as short as a pipeline's seen
through the clock's grain. The latency fault tells them apart: it stretches each awaited step by
the injected latency and leaves a pipeline's commands back to back. So a run whose latency
trials show the rewrite's gaps under the clock's grain is a pipeline (nothing drawn); one whose
latency trials show them stretched counts every gap; without a latency trial, a gap counts only
from the clock's grain up, and a trial whose gaps are all shorter tells nothing."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, register
from lab.model.store import CLOCK_GRAIN_S, comparable, interleaved_rewrites, rewrite_gaps

GRAIN_MS = CLOCK_GRAIN_S * 1000


def _latency_ms(j: Judged) -> float:
    return float(j.trial.fault_params.get("latency_ms", 0)) if j.trial.fault == "latency" else 0.0


def counted(gapped: list[tuple[Judged, dict[int, float]]]) -> list[tuple[Judged, dict[int, float]]] | None:
    """The trials' gaps that show a window (module docstring); None: the rewrite is one pipeline.
    A trial whose every gap is shorter than the clock's grain, where no latency trial said the
    steps are awaited one by one, is left out: it tells a pipeline from awaited steps by nothing."""
    stretched = [j for j, gaps in gapped if _latency_ms(j) and max(gaps.values()) >= _latency_ms(j) / 2]
    if not stretched and any(_latency_ms(j) and max(gaps.values()) < GRAIN_MS for j, gaps in gapped):
        return None
    if stretched:
        return gapped
    kept = [(j, {n: ms for n, ms in gaps.items() if ms >= GRAIN_MS}) for j, gaps in gapped]
    return [(j, gaps) for j, gaps in kept if gaps]


def rewritten_together(ev: Evidence, j: Judged) -> bool:
    """A trial whose rows two interleaved rewrites pushed back (duplicated, reordered, dropped):
    this diagnosis's, where it was drawn (diagnoses of those shapes run after it and leave it)."""
    return any(d.code == "rewrite_window" for d in ev.found) and interleaved_rewrites(j.trial)


@register("rewrite_window", needs=("store",), explains_loss=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.trial.store is not None and comparable(j.trial)]
    gapped = [(j, gaps) for j in pool if (gaps := rewrite_gaps(j.trial))]
    hit = counted(gapped)
    if not hit:
        return None
    told, gapped_ids = {j.id for j, _ in hit}, {j.id for j, _ in gapped}
    pool = [j for j in pool if j.id in told or j.id not in gapped_ids]  # those that told nothing: out
    j0, gaps0 = hit[0]
    turn0 = max(gaps0, key=lambda n: gaps0[n])
    worst = max(ms for _, gaps in hit for ms in gaps.values())
    together = [j for j, _ in hit if interleaved_rewrites(j.trial)]
    return Diagnosis(
        "rewrite_window",
        "a non-atomic rewrite: each write deletes the stored conversation and pushes it back one "
        "command at a time (no MULTI, no script) -- between the two, acknowledged turns are missing "
        "from Redis: a refresh then shows a partial history, a crash or a failed write loses them",
        f"in trial {j0.id} turn {turn0}, acknowledged, was deleted with the key and written back "
        f"{gaps0[turn0]:.0f} ms later (the store's record: DEL outside a MULTI, then one RPUSH per row); "
        f"in {len(hit)}/{len(pool)} trials whose record holds the app's writes, gaps up to {worst:.0f} ms"
        + (
            f"; in {len(together)} of them two rewrites interleaved (two tabs), pushing rows back twice, "
            "out of order or not at all"
            if together
            else ""
        ),
        len(hit),
        len(pool),
        [j.id for j, _ in hit],
    )
