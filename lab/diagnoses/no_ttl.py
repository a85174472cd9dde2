"""The conversation key, settled, has no TTL at all."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, register
from lab.diagnoses._ttl import contradicted


@register("no_ttl", needs=("key",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    """From the key read after the history settled (never from a read that raced a write: a
    key between its append and its EXPIRE has no TTL for a moment), and never from a trial whose
    settled reads refute each other (a write still landing after them)."""
    pool = [j for j in ev.judged if (j.trial.redis_final or {}).get("pttl_ms", -2) != -2 and not contradicted(j.trial)]
    hit = [j for j in pool if (j.trial.redis_final or {}).get("pttl_ms") == -1]
    if not hit:
        return None
    return Diagnosis(
        "no_ttl",
        "conversation keys left with no TTL at all (never expire, or a TTL step was skipped)",
        f"PTTL -1 on the settled conversation key {(hit[0].trial.redis_final or {}).get('key')} in "
        f"{len(hit)}/{len(pool)} trials (trials {few([j.id for j in hit])})",
        len(hit),
        len(pool),
        [j.id for j in hit],
    )
