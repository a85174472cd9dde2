"""An app written apart from the lab (examples/aiohttp_app.py: aiohttp's own server, its page
posting a FORM, q=..., a Hash a conversation numbered by HINCRBY, the transcript newest first):
before [chat] body = "form", lab init found no chat route (a JSON body reads as no field) and the
lab could not send it a message (2026-12-06). Its two bugs at once: a store error swallowed ->
acked_write_refused; the next number read as HLEN + 1 -> two tabs' turns on one field,
lost_update; the app without them: nothing under the same faults."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import diagnosed_then_silent
from tests.helpers import ROOT

AIOHTTP = ROOT / "examples" / "aiohttp-form.toml"
ONLY = ("--only", "write_refused|two_tabs", "--turns", "3", "--trials", "2")


def test_a_form_app_s_swallowed_error_and_its_lost_update_and_its_silence_without_them(tmp_path: Path) -> None:
    found, _, out = diagnosed_then_silent(tmp_path, AIOHTTP, ONLY, "swallow,overwrite")
    assert set(found) == {"acked_write_refused", "lost_update"}, out
    assert all(d["k"] == d["n"] >= 2 for d in found.values()), found
