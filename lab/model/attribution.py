"""From trials to cells to verdicts: rates with Wilson intervals, and the attribution rule.

Defect D causes an anomaly under (fault, refresh) when
  Wilson-low(D alone) > Wilson-high(correct)                     [sufficient]   and
  Wilson-high(host without D) < Wilson-low(host)                 [necessary]
where the host is the incident profile for the incident's defects and D alone otherwise (so
its "without D" is the correct profile). Otherwise: inconclusive, with the numbers. No verdict
is drawn from an unexercised cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from lab.model.checker import ANOMALIES
from lab.model.context import NOT_STREAMED, never_streamed
from lab.model.outcome import CellOutcome
from lab.plan.schedule import Cell, fault_text
from lab.model.stats import fmt_rate, wilson
from services.chat.defects import INCIDENT, REGISTRY as DEFECTS

# What each verdict is about: a trial "has" a metric when the checker found it.
METRICS = {
    "lost": "loses acknowledged turns",
    "expired": "loses the conversation to its TTL",
    "duplicated": "duplicates messages",
    "amnesia": "shows an empty history after the refresh",
    "told_less": "tells the model less than the user was acknowledged",
}
MIN_ACK_RATIO = 0.8  # below this the correct profile's cell exercised nothing
ALL_UNKNOWN = "no trial gave a verdict (all unknown)"
# A cell whose every trial was unknown because the app does not do what the experiment tests
# (it does not stream the model's answer: there is no stream to cut). A fact about the app, not
# a gap in the run: listed, and no reason to call the run's verdict unknown.
NOT_APPLICABLE = "not applicable"
# A refusal no write of the send met (lab.investigate.run.mid_write: write_refused); at=answer, in
# every trial of the cell, an app that stores everything before it answers: nothing to refuse after.
NOT_REFUSED = "write_refused: no write of the send reached Redis while writes were refused: it tested nothing"
# A send answered ok under a one-send fault whose stream's end the lab cannot read: not acknowledged.
STREAM_END_UNKNOWN = (
    "a faulted send: a streamed answer with no end event named ([stream] end): an error the app sent "
    "in the stream cannot be told from a reply"
)
# A send over frames under a one-send fault whose reply began and never reached its end frame.
REPLY_UNENDED = "a faulted send: the reply began and never reached its end frame"
# A 2xx to a faulted send whose JSON says something failed (a warning field, "saved": false): the
# app told its user -- not an acknowledgement (lab.investigate.evidence.rows.says_failure).
ANSWER_SAYS_FAILED = "the answer itself says something failed"
# A faulted send's reply ([chat] reply_path, or frames) that carries none of the stand-in's reply
# to it: the app answered in words of its own -- an apology, an error said in prose (settle.not_answered).
ANSWER_NOT_THE_MODELS = "the answer does not carry the model's reply: the app answered in words of its own"
NO_LATE_WRITE = "the app made no write once its answer had begun (it stores before it answers): nothing to refuse"
# write_refused's moments (at=...) whose trials, all without a refusal, say the app has no such write.
NOTHING_TO_REFUSE = {
    "answer": NO_LATE_WRITE,
    "later": "the app made no write after a send's first change of its key (a turn stored in one command "
    "or transaction): nothing to refuse",
}


@dataclass
class CellStats:
    cell: Cell
    trials: int  # trials with a valid or invalid verdict (known)
    unknown: int
    failed: int  # invalid trials
    with_metric: dict[str, int]  # trials showing each metric
    anomalies: dict[str, int]  # trials showing each anomaly
    sends: int
    acked_sends: int
    status: str  # valid | invalid | unexercised
    reason: str = ""
    seconds_per_trial: float = 0.0
    failing_trials: list[str] = field(default_factory=list)
    unknown_reasons: dict[str, list[str]] = field(default_factory=dict)
    trial_ids: list[str] = field(default_factory=list)

    @property
    def loss_rate(self) -> float:
        return self.with_metric["lost"] / self.trials if self.trials else 0.0

    def rate(self, metric: str) -> tuple[int, int]:
        return self.with_metric.get(metric, 0), self.trials

    def as_json(self) -> dict[str, Any]:
        lo, hi = wilson(self.with_metric["lost"], self.trials)
        return {
            **self.cell.as_json(),
            "trials": self.trials,
            "unknown": self.unknown,
            "acknowledged": self.acked_sends,
            "sends": self.sends,
            "failed": self.failed,
            "anomalies": self.anomalies,
            "rates": {
                m: {"k": k, "n": self.trials, "ci95": list(wilson(k, self.trials))}
                for m, k in {**{a: 0 for a in ANOMALIES}, **self.anomalies, **self.with_metric}.items()
            },
            "loss_rate": round(self.loss_rate, 4),
            "ci95": [round(lo, 4), round(hi, 4)],
            "status": self.status,
            "reason": self.reason,
            "seconds_per_trial": round(self.seconds_per_trial, 3),
            "failing_trials": self.failing_trials,
            "unknown_reasons": self.unknown_reasons,
            "trial_ids": self.trial_ids,
        }


def cell_stats(out: CellOutcome) -> CellStats:
    known = [t for t in out.trials if t.result.validity != "unknown"]
    with_metric = {m: 0 for m in METRICS}
    anomalies: dict[str, int] = {}
    for t in known:
        counts = t.result.anomalies()
        for name, n in counts.items():
            if n and not name.startswith("lost_"):
                anomalies[name] = anomalies.get(name, 0) + 1
        counts["told_less"] = len(t.result.told_less)  # a metric, not an anomaly (checker.Result)
        for m in METRICS:
            with_metric[m] += counts[m] > 0
    sends = sum(t.result.sends for t in out.trials)
    acked = sum(t.result.acked_sends for t in out.trials)
    failed = sum(t.failed for t in known)
    st = CellStats(
        out.cell,
        len(known),
        len(out.trials) - len(known),
        failed,
        with_metric,
        anomalies,
        sends,
        acked,
        "invalid" if failed else "valid",
        seconds_per_trial=(sum(t.seconds for t in out.trials) / len(out.trials)) if out.trials else 0.0,
        failing_trials=[t.trial_id for t in out.trials if t.failed],
        trial_ids=[t.trial_id for t in out.trials],
        unknown_reasons={t.trial_id: t.result.reasons for t in out.trials if t.result.validity == "unknown"},
    )
    unconfirmed = [t for t in out.trials if not t.trial.fault_confirmed]
    if out.fault_error or unconfirmed:
        st.status, st.reason = (
            "unexercised",
            f"fault not confirmed: {out.fault_error or unconfirmed[0].trial.errors[:1]}",
        )
    elif not known and out.cell.fault == "model_cut" and never_streamed([t.trial for t in out.trials]):
        st.status, st.reason = "unexercised", f"{NOT_APPLICABLE}: {NOT_STREAMED}"
    elif not known and (at := dict(out.cell.fault_params).get("at")) in NOTHING_TO_REFUSE and _none_late(out):
        st.status, st.reason = "unexercised", f"{NOT_APPLICABLE}: {NOTHING_TO_REFUSE[at]} ({len(out.trials)} trials)"
    elif not known:
        st.status, st.reason = "unexercised", ALL_UNKNOWN
    elif not out.cell.defects and not out.cell.target and sends and acked / sends < MIN_ACK_RATIO:
        st.status, st.reason = (
            "unexercised",
            (f"correct profile acknowledged {acked}/{sends} sends, under {MIN_ACK_RATIO:.0%}"),
        )
    return st


def _none_late(out: CellOutcome) -> bool:
    """write_refused at=answer or at=later: every trial's send answered with no write refused at its moment."""
    return bool(out.trials) and all((t.trial.unknown or "").startswith(NOT_REFUSED) for t in out.trials)


class VerdictCells(NamedTuple):
    """The cells a verdict compares: the defect alone, the correct profile, the host profile
    (the incident for its defects, else the defect alone) and the host without the defect."""

    alone: str
    correct: str
    host: str
    without: str


@dataclass
class Verdict:
    fault: str
    refresh: str
    turns: int
    metric: str
    defect: str
    causes: bool
    evidence: str
    cells: "VerdictCells | None" = None  # the cell ids the verdict compares

    def as_json(self) -> dict[str, Any]:
        return {
            "fault": self.fault,
            "refresh": self.refresh,
            "turns": self.turns,
            "metric": self.metric,
            "causes": [self.defect] if self.causes else [],
            "defect": self.defect,
            "verdict": "causes" if self.causes else "inconclusive",
            "evidence": self.evidence,
        }

    def sentence(self) -> str:
        where = f"under {self.fault} / {self.refresh}"
        if self.causes:
            return f"{self.defect} causes it: the chat {METRICS[self.metric]} {where}. {self.evidence}"
        return f"inconclusive for {self.defect} ({self.metric}) {where}: {self.evidence}"


def points_one_way(v: Verdict, stats: dict[str, CellStats]) -> bool:
    """Undecided, but the point estimates lean to "causes" (alone above correct, host above host
    without): more trials could decide it -- sequential sampling tops these up."""
    if v.causes or v.cells is None:
        return False
    cells = v.cells
    (a, na), (c, nc) = stats[cells.alone].rate(v.metric), stats[cells.correct].rate(v.metric)
    (h, nh), (w, nw) = stats[cells.host].rate(v.metric), stats[cells.without].rate(v.metric)
    return a / na > c / nc and w / nw < h / nh


def verdicts(stats: list[CellStats]) -> list[Verdict]:
    groups: dict[tuple[str, str, int], dict[tuple[str, ...], CellStats]] = {}
    for s in stats:
        key = (fault_text(s.cell.fault, s.cell.params), s.cell.refresh, s.cell.turns)
        groups.setdefault(key, {})[s.cell.defects] = s
    out: list[Verdict] = []
    order = {d: i for i, d in enumerate(DEFECTS)}
    for (fault, refresh, turns), cells in groups.items():
        correct = cells.get(())
        incident = cells.get(tuple(d for d in DEFECTS if d in INCIDENT))
        for d in sorted({d for k in cells for d in k if len(k) == 1}, key=lambda d: order[d]):
            alone = cells.get((d,))
            if d in INCIDENT:
                host, without = incident, cells.get(tuple(x for x in DEFECTS if x in INCIDENT and x != d))
                host_name, without_name = "incident", "incident without it"
            else:
                host, without, host_name, without_name = alone, correct, "alone", "correct"
            if alone is None or correct is None or host is None or without is None:
                continue
            if any(c.status == "unexercised" for c in (alone, correct, host, without)):
                continue
            for metric in METRICS:
                a, c, h, w = (x.rate(metric) for x in (alone, correct, host, without))
                if a[0] == 0 and h[0] == 0:
                    continue  # no effect to attribute
                sufficient = wilson(*a)[0] > wilson(*c)[1]
                necessary = wilson(*w)[1] < wilson(*h)[0]
                parts = [f"alone {fmt_rate(*a)}", f"correct {fmt_rate(*c)}"]
                if host is not alone:
                    parts += [f"{host_name} {fmt_rate(*h)}", f"{without_name} {fmt_rate(*w)}"]
                evidence = ", ".join(parts)
                if not (sufficient and necessary):
                    why = [] if sufficient else ["alone is not clearly above correct"]
                    why += [] if necessary else [f"{without_name} is not clearly below {host_name}"]
                    evidence += " (" + "; ".join(why) + ")"
                out.append(
                    Verdict(
                        fault,
                        refresh,
                        turns,
                        metric,
                        d,
                        sufficient and necessary,
                        evidence,
                        VerdictCells(alone.cell.cell_id, correct.cell.cell_id, host.cell.cell_id, without.cell.cell_id),
                    )
                )
    return out
