"""The TTL is not renewed by acknowledged writes: set once, it expires however active the chat."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, register
from lab.diagnoses._ttl import pairs


@register("ttl_not_renewed", needs=("ttl",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    """Judged only between settled reads with acknowledged writes (and nothing else) between
    them: a failed send that skipped the TTL is ttl_skipped_on_error's, not this rule's."""
    pool, hit, example = [], [], ""
    for j in ev.judged:
        ps = [p for p in pairs(j.trial) if p.acked_only and p.judgeable]
        if not ps:
            continue
        pool.append(j)
        stuck = next((p for p in ps if p.decayed_only), None)
        if stuck is not None:
            hit.append(j)
            example = example or stuck.text(j.id)
    if not hit:
        return None
    return Diagnosis(
        "ttl_not_renewed",
        "the conversation's TTL is not renewed by writes: set once, it expires a fixed time "
        "after the first message however active the conversation",
        f"{example}, every send in between acknowledged; in {len(hit)}/{len(pool)} trials",
        len(hit),
        len(pool),
        [j.id for j in hit],
    )
