"""An investigation's trial ids, written, read back and turned into seeds in one place.

``e<N>-<fault>-<refresh>-<k>``: the experiment's number in the full plan (experiments.full_plan),
its fault and refresh point (for a reader), and the trial's number in its experiment. The trial's
seed is a pure function of the run's seed, N and k: the id printed in a replay line and the run's
seed rebuild the trial (`lab investigate --seed S --replay ID`)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from lab.common.errors import UsageError
from lab.investigate.run.experiments import Experiment


@dataclass(frozen=True)
class TrialId:
    no: int  # the experiment's number in the full plan
    k: int  # the trial's in its experiment

    @classmethod
    def parse(cls, text: str) -> "TrialId":
        """'e3-down-settled-01' -> TrialId(3, 1); anything else is refused (UsageError)."""
        head, _, tail = text.partition("-")
        try:
            if not head.startswith("e"):
                raise ValueError(head)
            return cls(int(head[1:]), int(tail.rsplit("-", 1)[1]))
        except (ValueError, IndexError):
            raise UsageError(
                f"--replay {text!r} is not a trial id of lab investigate",
                "copy it from results.json (e.g. e3-down-settled-01) or the replay line of a run",
            ) from None

    def text(self, exp: Experiment) -> str:
        return f"{prefix(self.no, exp)}{self.k:02d}"

    def seed(self, run_seed: int) -> int:
        return random.Random(f"{run_seed}/{self.no}/{self.k}").randrange(1 << 31)


def prefix(no: int, exp: Experiment) -> str:
    """What the ids of experiment ``no``'s trials begin with (the stand-in paces the calls
    carrying it)."""
    return f"e{no}-{exp.fault}-{exp.refresh}-"
