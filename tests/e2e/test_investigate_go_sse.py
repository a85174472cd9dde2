"""An app written apart from the lab (examples/go-sse: Go's net/http, go-redis, the model over
plain HTTP, a token in a header of its own, named SSE events): with Redis refusing one send's
writes, the correct app ends the stream with its failure event -- nothing drawn; its store left to
a goroutine whose error is only logged -> acked_write_refused in every trial, at the first write
and once the answer has begun."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import assert_refused_and_silent
from tests.helpers import ROOT


def test_a_store_left_to_a_goroutine_is_acknowledged_though_refused_and_the_correct_app_is_silent(
    tmp_path: Path,
) -> None:
    assert_refused_and_silent(tmp_path, ROOT / "examples" / "go-sse.toml", "APP_BUGS=goroutine_save")
