import pytest

from lab.model.stats import fmt_rate, wilson


def test_known_values() -> None:
    lo, hi = wilson(20, 20)
    assert (round(lo, 3), hi) == (0.839, 1.0)
    lo, hi = wilson(0, 20)
    assert (lo, round(hi, 3)) == (0.0, 0.161)
    assert wilson(0, 0) == (0.0, 1.0)


def test_rule_of_three_scale() -> None:
    assert wilson(0, 300)[1] < 0.013


def test_bad_counts() -> None:
    with pytest.raises(ValueError):
        wilson(5, 3)


def test_format() -> None:
    assert fmt_rate(20, 20) == "20/20 [0.84, 1.00]"
