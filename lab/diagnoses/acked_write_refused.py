"""A 2xx (or a stream's end) for a send one of whose writes Redis refused, unapplied, while it
served reads -- and that write's row is not stored: the write's error never reached the answer.

Two mechanisms leave this evidence, and it names both, claiming no more than they share: an
error caught and dropped (logged, ignored) around an awaited write, and a write left to a task,
promise or goroutine nobody joins, whose failure is logged or lost. Neither is told apart here;
the suspect lines (lab suspects) show which the code holds. An app that answered before its write
(acked_too_fast) answers 200 for a write that fails later: those trials are that cause."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, explained, few, register


@register("acked_write_refused", needs=("write_refused",), explains_loss=True, after=("acked_too_fast",))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.trial.fault == "write_refused"]
    early = explained(ev.found, "acked_too_fast")
    hit = []
    for j in pool:
        s = next((s for s in j.trial.sends if s.under_fault), None)
        if j.id in early or s is None or s.outcome != "ok":
            continue
        question, reply = s.turn in j.lost_user, s.turn in j.turns(j.result.lost["assistant"])
        if question or s.turn in j.reply_missing:
            gone = (
                "question and its reply" if question and reply else "question (its reply kept)" if question else "reply"
            )
            hit.append((j, s, gone))
    if not hit:
        return None
    j0, s0, what = hit[0]
    return Diagnosis(
        "acked_write_refused",
        "acknowledged though Redis refused its write, and never stored: the write's error does not reach "
        "the answer -- caught and dropped (logged or ignored), or left to a task nobody awaits",
        f"with Redis refusing a write of one send (reads served: {j0.trial.fault_evidence or 'write_refused'}), "
        f"it answered {s0.status} in {s0.ms or 0:.0f} ms, the {what} absent from the final history "
        f"(trials {few([j.id for j, _, _ in hit])})",
        len(hit),
        len(pool),
        [j.id for j, _, _ in hit],
    )
