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


def test_the_median_interval_is_the_sign_tests_order_statistics() -> None:
    from lab.model.stats import median_interval

    assert median_interval([0.1, 0.2, 0.3, 0.4, 0.5]) is None  # 5 values: no 95 % interval exists
    assert median_interval([float(x) for x in range(6)]) == (0.0, 5.0)  # 1 - 2/64 >= 95 %
    # n = 20: P(Bin(20, 1/2) <= 5) = 0.0207 <= 0.025 < P(<= 6): the 6th and 15th values.
    assert median_interval([float(x) for x in range(20, 0, -1)]) == (6.0, 15.0)
