"""The README's five-line user test runs as written (through the installed plugin)."""

import re

import pytest

from lab.common.config import ROOT


def test_readme_fault_example_passes(pytester: pytest.Pytester) -> None:
    readme = (ROOT / "README.md").read_text()
    code = re.search(r"```python\n(.*?def test_redis_link_is_slow.*?)```", readme, re.S)
    assert code, "the README example is missing"
    pytester.makepyfile(test_user=code.group(1))
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
