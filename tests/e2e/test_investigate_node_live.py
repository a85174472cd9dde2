"""An app written apart from the lab (examples/node/live.js: Express, a plain WebSocket with frames
of its own, ioredis, the page minting its visitor's id): with Redis refusing one send's writes,
the correct app answers with its fault frame -- nothing drawn; its store left to a promise nobody
awaits after the complete frame -> acked_write_refused in every trial, at both moments."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import assert_refused_and_silent
from tests.helpers import ROOT


def test_a_store_left_to_a_floating_promise_is_acknowledged_though_refused_and_the_correct_app_is_silent(
    tmp_path: Path,
) -> None:
    assert_refused_and_silent(tmp_path, ROOT / "examples" / "node-live.toml", "APP_BUGS=unawaited_store")
