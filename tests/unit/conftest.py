"""Shared unit-test fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lab.common import redact


@pytest.fixture
def fresh_secrets() -> Iterator[None]:
    """No secret known before or after the test (lab.common.redact keeps them process-wide)."""
    redact.clear()
    yield
    redact.clear()
