"""A trial id is written and read back in one place; its seed is a pure function of the run's
seed and the id's two numbers, so a replay line rebuilds the trial."""

from __future__ import annotations

import pytest

from lab.common.errors import UsageError
from lab.investigate.run.experiments import Experiment
from lab.investigate.run.experiments import TrialId, prefix

DOWN = Experiment("down", (), "settled", 3, "Redis down for one send")


def test_an_id_reads_back_as_written() -> None:
    tid = TrialId(3, 1)
    assert tid.text(DOWN) == "e3-down-settled-01" and tid.text(DOWN).startswith(prefix(3, DOWN))
    assert TrialId.parse(tid.text(DOWN)) == tid
    assert TrialId.parse("e12-latency-in_flight-07") == TrialId(12, 7)


def test_the_seed_depends_on_the_run_and_the_trial_only() -> None:
    assert TrialId(3, 1).seed(42) == TrialId.parse("e3-down-settled-01").seed(42)
    assert len({TrialId(3, 1).seed(42), TrialId(3, 2).seed(42), TrialId(4, 1).seed(42), TrialId(3, 1).seed(43)}) == 4


@pytest.mark.parametrize("bad", ["", "down-settled-01", "e3", "ex-down-settled-01", "e3-down-settled-xx", "000"])
def test_a_bad_id_is_refused_naming_where_to_copy_one_from(bad: str) -> None:
    with pytest.raises(UsageError, match="not a trial id of lab investigate"):
        TrialId.parse(bad)


def test_a_refusal_switched_on_by_the_keys_first_change_needs_a_key() -> None:
    """write_refused at=later waits for the store's record to show the key's first change: a spec
    with no [redis] key (an app keeping each message under a key of its own) leaves it out of
    the default plan -- run, it was unknown in every trial and made the whole run unknown."""
    from lab.common.config import ROOT
    from lab.investigate.run import experiments
    from lab.investigate.spec import parse as sp

    def later(spec: sp.Spec) -> bool:
        return any(
            e.fault == "write_refused" and dict(e.params).get("at") == "later" for e in experiments.for_spec(spec, 3)
        )

    keyless = sp.load(ROOT / "examples" / "keyed-messages.toml")
    assert keyless.redis.key is None and not later(keyless)
    assert later(sp.load(ROOT / "examples" / "node-quill.toml"))  # the same shape, with a key
