"""Append and TTL in two commands: a request that fails between them skips the TTL renewal."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, register
from lab.diagnoses._ttl import pairs


@register("ttl_skipped_on_error", needs=("ttl", "fault"))
def diagnose(ev: Evidence) -> Diagnosis | None:
    """Evidence, all in one trial: across a failed send the key grew and its TTL was not renewed
    (or is gone), while across acknowledged writes it was renewed. Milder than ttl_not_renewed:
    the next successful write restores the TTL."""
    pool, hit, example = [], [], ""
    for j in ev.judged:
        ps = pairs(j.trial)
        failed = [
            p
            for p in ps
            if p.grew
            and any(s.outcome != "ok" for s in p.between)
            and (p.b.pttl_ms == -1 or (p.a.pttl_ms >= 0 and p.decayed_only and p.elapsed_ms >= 4 * p.tolerance_ms))
        ]
        renewed = [p for p in ps if p.acked_only and p.judgeable and p.renewed]
        if any(s.outcome != "ok" for s in j.trial.sends) and renewed:
            pool.append(j)
        if failed and renewed:
            hit.append(j)
            if not example:
                p, s = failed[0], next(s for s in failed[0].between if s.outcome != "ok")
                example = (
                    f"{p.text(j.id)}: turn {s.turn} failed ({s.status or s.reason}) after its "
                    f"write landed and the TTL was {'removed' if p.b.pttl_ms == -1 else 'not renewed'}"
                    f"; acknowledged writes renewed it (e.g. after turn {renewed[0].b.turn})"
                )
    if not hit:
        return None
    return Diagnosis(
        "ttl_skipped_on_error",
        "the append and its TTL are two commands: a request that fails between them stores the "
        "message without renewing the TTL (the next successful write renews it); make them one "
        "MULTI/EXEC or script",
        f"{example}; in {len(hit)}/{len(pool)} trials with a failed send",
        len(hit),
        len(pool),
        [j.id for j in hit],
    )
