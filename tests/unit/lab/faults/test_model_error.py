"""model_error: only the kinds the stand-in sends, and a clear refusal where no stand-in runs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from lab.common.config import LabConfig
from lab.common.errors import UsageError
from lab.faults import Targets, make
from tests.helpers import free_ports


def test_a_kind_the_stand_in_does_not_send_is_refused_with_the_valid_ones() -> None:
    with pytest.raises(UsageError, match="valid: rate_limit, server_error, overloaded"):
        make("model_error", kind="teapot").check()


def test_without_a_stand_in_it_says_where_it_works() -> None:
    cfg = LabConfig.from_env()
    cfg.ports["model"] = free_ports(1)[0]  # nothing listens there
    stack = cast(Any, SimpleNamespace(cfg=cfg, mode="native"))
    with pytest.raises(UsageError, match=r"(?s)no stand-in model answers .* a target spec with \[model\]"):
        make("model_error").apply(Targets(stack, cast(Any, None)))
