"""The Vercel AI SDK's common shape (examples/node-ai/server.js: node:http, streamText with
@ai-sdk/openai on the Responses API, node-redis, the reply saved in onFinish) against the stand-in:

- save_at_stream_end (both messages saved in onFinish, the answer piped, no consumeStream): a cut
  mid-stream -- the stand-in streaming slowly enough to be cut -- loses the turn ->
  saved_at_stream_end and nothing else, in every trial;
- correct (the message saved first, the stream read to its end without the page, the answer
  ended only once the reply is whole): no anomaly under the cut, a cut model stream and a 429."""

from __future__ import annotations

import re

from pathlib import Path

import pytest

from tests.e2e.investigating import investigate
from tests.helpers import ROOT

NODE_AI = ROOT / "examples" / "node-ai.toml"
pytestmark = pytest.mark.skipif(
    not (ROOT / "examples" / "node-ai" / "node_modules" / "ai").is_dir(),
    reason="examples/node-ai's packages are not installed: make setup (npm ci in examples/node-ai)",
)


def test_saving_in_on_finish_loses_a_turn_cut_mid_stream_and_nothing_else(tmp_path: Path) -> None:
    code, out, results = investigate(
        tmp_path,
        *("--only", "mid_stream", "--turns", "3", "--trials", "5"),  # the 5-trial run
        *("--set", "start.env.AI_APP_BUGS=save_at_stream_end"),
        spec=NODE_AI,
    )
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert set(found) == {"saved_at_stream_end"}, out
    d = found["saved_at_stream_end"]
    assert d["k"] == d["n"] and 4 <= d["n"] <= 5, found  # every judged trial
    assert "model (openai_responses) at http://127.0.0.1:" in out, out


def test_the_sdks_documented_way_keeps_every_turn_under_every_model_fault(tmp_path: Path) -> None:
    code, out, results = investigate(
        tmp_path, "--only", "mid_stream|model_cut|model_error", "--turns", "3", "--trials", "2", spec=NODE_AI
    )
    assert code == 0 and results["diagnoses"] == [], out
    # Every model fault's cell judged; a mid-stream trial whose turn was stored within the
    # clock's grain of the cut is unknown (whether the stream had ended first cannot be told:
    # 5 of 6 on one CI run, 2026-12-04), never a pass.
    model = [c for c in results["cells"] if c["fault"] in ("model_cut", "model_error")]
    assert len(model) == 3 and all(c["trials"] >= 1 for c in model), model  # each exercised
    assert re.search(r"No anomaly found in \d+ judged trials", out), out
