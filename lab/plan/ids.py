"""Trial ids and seeds: one scheme for every command that plans trials (lab chaos, lab window,
lab lesson, lab bench, the tests' replacement rounds, lab investigate).

A trial belongs to a group -- a cell of the matrix in one round, an experiment of an
investigation -- and is named by the group's prefix and its number k in the group, zero-padded:
``c003-017`` (chaos: the cell's place in the matrix), ``r1-c003-002`` (its first top-up round),
``e3-down-settled-01`` (investigate: the experiment's number, fault and refresh point).

Seeds are derived, never drawn in sequence: a group's seed is a pure function of the run's seed,
what names the group and the round (``group_seed``), and its k-th trial's a pure function of the
group's seed and k (``trial_seed``). So a trial's seed depends on nothing that ran before or
beside it -- a shard, a top-up round, another group's size -- and the run's seed with the trial's
id rebuilds it. Its plan is a pure function of its own seed (lab.plan.schedule.plan_trial), so
the seed alone replays it: `lab replay ... --seed S` for the built-in service, `lab investigate
--seed RUN --replay ID` for a target (whose trials are the run's experiments, numbered)."""

from __future__ import annotations

import random


def derive(*path: object) -> int:
    """A 31-bit seed that is a pure function of ``path`` (its parts' text, in order)."""
    return random.Random("/".join(map(str, path))).randrange(1 << 31)


def group_seed(run_seed: int, key: str, round_no: int = 0) -> int:
    """The seed of a group of trials: the run's seed, what names the group (a cell's id, an
    experiment's number), the round that added it."""
    return derive(run_seed, key, round_no)


def trial_seed(seed: int, k: int) -> int:
    """The seed of trial ``k`` of the group whose seed is ``seed``."""
    return derive(seed, k)


def trial_id(prefix: str, k: int, width: int = 3) -> str:
    """``prefix`` (the group's, ending in "-", or empty) and k zero-padded to ``width`` digits."""
    return f"{prefix}{k:0{width}d}"


def split(text: str) -> tuple[str, int]:
    """'e3-down-settled-01' -> ('e3-down-settled-', 1): the group's prefix and k. ValueError when
    the text does not end in a number."""
    head, sep, tail = text.rpartition("-")
    if not tail.isdigit():
        raise ValueError(text)
    return head + sep, int(tail)
