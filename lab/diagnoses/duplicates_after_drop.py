"""Messages stored twice after a connection drop: a non-idempotent append retried blindly.

Drawn from drop trials whose duplicated turns are the faulted send's alone, in a run where no
trial without a drop stored a turn twice (an app that duplicates anyway leaves the same copy in
a drop trial: `duplicates`' evidence, which counts for this one neither). Where the store's
record follows the key, the evidence names the write made again and the connection it came on."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, Judged, ids, register


def _again(j: Judged) -> str:
    """The record's word on the copy: the turn's write made again, and on which connection."""
    turn = min(j.turns(j.result.duplicated_ids))
    writes = [r for r in j.trial.store or [] if r["write"] and r["conn"] != "lab" and turn in r["user"]]
    if len(writes) < 2:
        return ""
    first, second = writes[0], writes[1]
    where = (
        f"a new connection ({second['conn']})"
        if second["conn"] != first["conn"]
        else f"the same connection ({first['conn']})"
    )
    return (
        f"; the store's record shows turn {turn}'s {first['cmd']} run again {(second['t'] - first['t']) * 1000:.0f} ms "
        f"after the first, on {where}"
    )


@register("duplicates_after_drop", needs=("drop",), after=("duplicates",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    if any(d.code == "duplicates" for d in ev.found):
        return None  # the app stores copies without a drop too: nothing here tells a retry apart
    drop = [j for j in ev.judged if j.trial.fault == "drop"]
    hit = [j for j in drop if j.copies_of_faulted_only]
    if not hit:
        return None
    return Diagnosis(
        "duplicates_after_drop",
        "messages stored twice after a connection drop: a non-idempotent append is retried "
        "(blindly) when the reply to an applied write is lost",
        f"turns stored more than once in {len(hit)}/{len(drop)} trials with a one-shot connection "
        f"reset on the Redis link, e.g. trial {hit[0].id} turns {hit[0].turns(hit[0].result.duplicated_ids)}"
        + _again(hit[0]),
        len(hit),
        len(drop),
        ids(hit),
    )
