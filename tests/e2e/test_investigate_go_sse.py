"""An app written apart from the lab (examples/go-sse: Go's net/http, go-redis, the model over
plain HTTP, a token in a header of its own, named SSE events): with Redis refusing one send's
writes, the correct app ends the stream with its failure event -- nothing drawn; its store left to
a goroutine whose error is only logged -> acked_write_refused in every trial, at the first write
and once the answer has begun."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import investigate
from tests.helpers import ROOT

GO_SSE = ROOT / "examples" / "go-sse.toml"
ONLY = ("--only", "write_refused", "--turns", "3", "--trials", "2")


def test_a_store_left_to_a_goroutine_is_acknowledged_though_refused_and_the_correct_app_is_silent(
    tmp_path: Path,
) -> None:
    code, out, results = investigate(tmp_path / "bug", *ONLY, "--set", "start.env.APP_BUGS=goroutine_save", spec=GO_SSE)
    assert code == 1, out
    found = {d["code"]: d for d in results["diagnoses"]}
    # Its reply written after the finish event may also show as stored after its answer: the same bug.
    assert "acked_write_refused" in found and set(found) <= {"acked_write_refused", "stored_after_answer"}, out
    assert found["acked_write_refused"]["k"] == found["acked_write_refused"]["n"] >= 4, found  # both moments
    code, out, results = investigate(tmp_path / "ok", *ONLY, spec=GO_SSE)
    assert code == 0 and results["diagnoses"] == [], out
