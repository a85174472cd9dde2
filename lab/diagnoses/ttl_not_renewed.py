"""The TTL is not renewed by acknowledged writes: set once, it expires however active the chat."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, register
from lab.model.history import Trial
from lab.diagnoses._ttl import pairs
from lab.diagnoses._ttl import ttl_renewals


@register("ttl_not_renewed", needs=("ttl_set",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    """Judged only between settled reads with acknowledged writes (and nothing else) between
    them: a failed send that skipped the TTL is ttl_skipped_on_error's, not this rule's. The PTTL
    arithmetic is the judge where a pair of reads can tell (the TTL's effect: an EXPIREAT to the
    same deadline at every write renews nothing, whatever the commands say); where none can (the
    reads came too close together to tell a renewal from the clock), the store's record judges."""
    pool, hit, example = [], [], ""
    for j in ev.judged:
        ps = [p for p in pairs(j.trial) if p.acked_only and p.judgeable]
        if not ps:
            by_record = _record_only(j.trial)
            if by_record is not None:
                pool.append(j)
                if by_record:
                    hit.append(j)
                    example = example or by_record
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
        f"{example}, every send in between acknowledged; in {len(hit)}/{len(pool)} trials"
        + _commands([j.trial for j in hit]),
        len(hit),
        len(pool),
        [j.id for j in hit],
    )


def _commands(trials: list[Trial]) -> str:
    """The cross-check from the store's record, where the trials kept one: the TTL commands the
    app sent, against its writes (the PTTL arithmetic above is the judge; this says how)."""
    counted = [c for t in trials if (c := ttl_renewals(t)) is not None]
    if not counted:
        return ""
    writes, sets, later = (sum(c[i] for c in counted) for i in range(3))
    if later:
        return (
            f"; the store's record shows {later} TTL command(s) past a key's creation in {len(counted)} trial(s) "
            "that did not move it on (e.g. an EXPIRE with GT or LT, or an EXPIREAT to the same deadline)"
        )
    return f"; the store's record agrees: {writes} writes, {sets} TTL command(s), each with a key's creation (none renews it)"


def _record_only(t: Trial) -> str | None:
    """The store's record as the judge, for a trial no pair of PTTL reads can judge: no fault,
    three or more sends, every one acknowledged and its row written in the record, a TTL set
    with the key's creation and none after -- the evidence ("" where the record shows renewals;
    None where it cannot say). Under a fault an acknowledged send may write nothing (a fallback
    in memory while Redis is down): its missing EXPIRE is no rule of the app's writes."""
    counted = ttl_renewals(t)
    acked = {s.turn for s in t.sends if s.outcome == "ok"}
    written = {n for r in t.store or [] if r["conn"] != "lab" and r["write"] for n in r["user"]}
    if (t.redis_final or {}).get("pttl_ms") == -1:
        return None  # the key ended with no TTL at all: a later write cleared it (no_ttl's to say)
    if t.fault != "none" or counted is None or counted[1] == 0 or len(acked) < 3 or len(acked) < len(t.sends):
        return None
    if counted[0] < 2:
        return None  # one write carried every turn (a copy filled at once): no later write to renew it
    if not acked <= written:
        return None
    if counted[2]:
        return ""
    why = "the PTTL reads came too close together to tell" if t.ttl else "no PTTL read came between the turns"
    return (
        f"trial {t.trial_id}: the store's record shows {counted[1]} TTL command(s), with the key's creation "
        f"only, across {len(acked)} acknowledged sends ({why})"
    )
