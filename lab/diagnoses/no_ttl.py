"""The conversation key, settled, has no TTL at all."""

from __future__ import annotations

from lab.diagnoses import EVIDENCE, Diagnosis, Evidence, few, register
from lab.diagnoses._ttl import contradicted


@register("no_ttl", needs=("key", "expiry"))
def diagnose(ev: Evidence) -> Diagnosis | None:
    """From the key read after the history settled (never from a read that raced a write: a
    key between its append and its EXPIRE has no TTL for a moment), and never from a trial whose
    settled reads refute each other (a write still landing after them).

    Only where the conversations are meant to expire: a key with no TTL is what an app that keeps
    its conversations on purpose leaves too, so PTTL -1 alone is no defect. The spec says so
    ([redis] expires = true), or the app set a TTL on the key in some trial of the run -- then a
    key left without one is a TTL step skipped (a rewrite that drops it, a path without EXPIRE).
    ``expires = false`` says the app keeps them: never drawn."""
    pool = [  # the registry judges this only where some trial has the "expiry" evidence
        j
        for j in ev.judged
        if (j.trial.redis_final or {}).get("pttl_ms", -2) != -2
        and (j.trial.redis_final or {}).get("expires") is not False
        and not contradicted(j.trial)
    ]
    hit = [j for j in pool if (j.trial.redis_final or {}).get("pttl_ms") == -1]
    if not hit:
        return None
    return Diagnosis(
        "no_ttl",
        "conversation keys left with no TTL at all (never expire, or a TTL step was skipped)",
        f"PTTL -1 on the settled conversation key {(hit[0].trial.redis_final or {}).get('key')} in "
        f"{len(hit)}/{len(pool)} trials (trials {few([j.id for j in hit])}); {_meant(ev)}",
        len(hit),
        len(pool),
        [j.id for j in hit],
    )


def _meant(ev: Evidence) -> str:
    """Why the keys are meant to expire: the spec's word, or a TTL the app set."""
    if any((t.redis_final or {}).get("expires") is True for t in ev.trials):
        return "the spec says conversations expire ([redis] expires = true)"
    seen = next(t for t in ev.trials if EVIDENCE["expiry"](t))
    return f"the app set a TTL on the key in trial {seen.trial_id}"
