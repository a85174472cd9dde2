"""The same sent message stored more than once with no connection drop to explain a retry
(per occurrence: two equal texts are two messages, not a copy). A message the lab itself sent
twice (double_submit) is double_submit_stored's evidence, not this one's; a message stored again
by a retried model call, stored_twice_after_retry's."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, ids, register
from lab.diagnoses.rewrite_window import rewritten_together
from lab.diagnoses.stored_twice_after_retry import stored_twice


@register("duplicates", after=("rewrite_window", "stored_twice_after_retry"))
def diagnose(ev: Evidence) -> Diagnosis | None:
    other = [
        j
        for j in ev.judged
        if j.trial.fault != "drop"
        and j.trial.refresh != "double_submit"
        and not rewritten_together(ev, j)
        and not stored_twice(j)
    ]
    hit = [j for j in other if j.result.duplicated]
    if not hit:
        return None
    return Diagnosis(
        "duplicates",
        "messages stored more than once without a connection drop",
        f"duplicated turns in {len(hit)}/{len(other)} trials, e.g. trial {hit[0].id} turns "
        f"{hit[0].turns(hit[0].result.duplicated_ids)} (trials {few(ids(hit))})",
        len(hit),
        len(other),
        ids(hit),
    )
