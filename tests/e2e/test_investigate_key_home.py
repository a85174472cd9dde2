"""The contract check's search for the message ([redis] key, lab.investigate.evidence.key_home),
end to end. An app whose URL names another db than the lab's: its key is found there, read and
followed there -- a TTL rule, judged from the key's reads and its record, is drawn as it is on
db 0, and its replay reproduces it. A spec whose key names nothing the app writes stops before any experiment, naming the
key that holds the message (it was read as absent after every send before, and nothing said so)."""

from __future__ import annotations

import shlex
from pathlib import Path

from tests.cleanup import lab_down_after
from tests.e2e.investigating import ROOT, investigate, investigate_env
from tests.helpers import run_lab

HTMX = ROOT / "examples" / "htmx.toml"
NODE_REST = ROOT / "examples" / "node-rest.toml"


def test_an_app_writing_another_db_is_read_there_and_its_ttl_bug_drawn(tmp_path: Path) -> None:
    code, out, results = investigate(
        tmp_path,
        "--only",
        "none",
        "--trials",
        "2",
        "--set",
        "start.env.REDIS_URL=redis://{redis_host}:{redis_port}/2",
        "--set",
        "start.env.HTMX_BUGS=ttl_first_only",
        spec=HTMX,
    )
    assert "the app keeps it in db 2 (the lab's URL named db 0): read there from now on" in out, out
    found = {d["code"]: d for d in results["diagnoses"]}
    assert code == 1 and set(found) == {"ttl_not_renewed"}, out
    assert found["ttl_not_renewed"]["k"] == found["ttl_not_renewed"]["n"] >= 2, found
    # Its replay line, run as printed: the replay finds the db as the run did (it read db 0 and
    # reproduced nothing before its contract check ran too).
    argv = shlex.split(found["ttl_not_renewed"]["replay"]["command"])
    env, port = investigate_env(tmp_path / "replay")
    again = ("--set", f"http.port={port}", "--runs", "2", "--reports", str(tmp_path / "replay" / "reports"))
    with lab_down_after(env):
        p = run_lab(env, *argv[1:], *again, timeout=300)
    said = p.stdout + p.stderr
    assert p.returncode == 0 and "ttl_not_renewed reproduced 2/2" in said, said
    assert "the app keeps it in db 2" in said, said


def test_a_key_naming_nothing_the_app_writes_stops_the_run_naming_the_one_that_holds_it(tmp_path: Path) -> None:
    code, out, results = investigate(tmp_path, "--only", "none", "--set", "redis.key=chat:{session}", spec=NODE_REST)
    assert code == 2 and results == {}, out
    assert "[redis] key = 'chat:{session}' names no key the app wrote" in out, out
    assert "while the message is under 'conversation:" in out and ":messages' (db 0)" in out, out
    assert "Traceback" not in out, out
