"""The scan over real trees: the built-in service (each defect's suspect in its own module),
the foreign example (each bug's line), the lessons' solutions (none), and bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from lab import suspects
from lab.diagnoses import REGISTRY as DIAGNOSES, _load as load_diagnoses
from lab.common.errors import UsageError

ROOT = Path(__file__).resolve().parents[4]

# The built-in defects: the module whose line the static checks must point at, and the check.
DEFECT_LINES = {
    "fire_and_forget": "dangling_task",
    "ttl_set_once": "ttl_conditional",
    "shared_loop_client": "module_client",
    "blind_retry": "retry_append",
    "swallowed_errors": "swallowed_error",
    "save_at_stream_end": "stream_end_save",
    "session_cookie": "session_cookie",
}


def _by_file(found: list[suspects.Suspect]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for s in found:
        out.setdefault(s.path, set()).add(s.check)
    return out


def test_each_built_in_defect_has_its_suspect_in_its_own_module() -> None:
    found = suspects.scan([ROOT / "services" / "chat"], root=ROOT).suspects
    files = _by_file(found)
    for defect, check in DEFECT_LINES.items():
        assert check in files.get(f"services/chat/defects/{defect}.py", set()), (defect, files)
    # The correct code (store, views, session, the package's own modules) holds no suspect.
    assert {p for p in files if not p.startswith("services/chat/defects/")} == set(), files


def test_the_foreign_example_bugs_are_suspects_at_their_lines() -> None:
    app = ROOT / "examples" / "foreign_app.py"
    found = suspects.scan([app], root=ROOT).suspects
    text = app.read_text().splitlines()
    # Each bug's code: the check that must point at it (by the line's own text).
    want = {
        "ack_early": ("background_write", "threading.Thread(target=append"),
        "cap_history": ("history_trim", "r.ltrim(key, 0, CAP_ROWS - 1)"),
        "stale_cache": ("history_cache", "_cache[sid] = (time.monotonic(), items)"),
        "no_ttl": ("ttl_conditional", "p.expire(key, TTL_S)"),
        "out_of_order": ("concurrent_writes", 'writes = [_store_later(key, f"user:{text}"'),
        "ttl_two_commands": ("ttl_two_commands", "r.expire(key, TTL_S)"),
        "read_modify_write": ("read_modify_write", 'r.set(key, json.dumps({"messages": items})'),
    }
    for bug, (check, line) in want.items():
        hits = [s for s in found if s.check == check and line in text[s.line - 1]]
        assert hits, (bug, [(s.check, s.code) for s in found])
    assert {s.check for s in found} == {c for c, _ in want.values()}


def test_the_lessons_solutions_leave_no_suspect_their_exercises_each_one() -> None:
    chat = ROOT / "services" / "chat"
    for folder in ("lab/lessons/solutions", "lab/lessons/exercises"):
        found = suspects.scan([ROOT / folder, chat], root=ROOT).suspects
        mine = {Path(s.path).name for s in found if s.path.startswith(folder)}
        if folder.endswith("solutions"):
            assert mine == set(), found
        else:  # every behaviour lesson (1-6, 8); 07 is configuration
            assert mine == {
                f"0{n}_{slug}.py"
                for n, slug in enumerate(
                    ["create_task", "ttl_set_once", "loop_client", "idempotency", "ack_durable", "mid_stream"], 1
                )
            } | {"08_two_tabs.py"}


def test_every_check_points_at_diagnoses_that_exist() -> None:
    suspects._load()
    load_diagnoses()
    for c in suspects.REGISTRY.values():
        assert c.diagnoses and set(c.diagnoses) <= set(DIAGNOSES), (c.name, c.diagnoses)


def test_a_missing_path_and_a_file_that_does_not_parse_are_named(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no-such-dir: no such file or directory"):
        suspects.scan([tmp_path / "no-such-dir"])
    bad = tmp_path / "app.py"
    bad.write_text("def f(:\n    pass\n")
    with pytest.raises(UsageError, match=r"app.py:1: does not parse"):
        suspects.scan([tmp_path])


def test_non_python_files_are_skipped_and_counted(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    (tmp_path / "README.md").write_text("# app\n")
    (tmp_path / "static").mkdir()
    (tmp_path / "static" / "app.js").write_text("1;\n")
    s = suspects.scan([tmp_path], root=tmp_path)
    assert (s.files, s.skipped, s.suspects) == (1, 2, [])


def _lab(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "lab", *args], capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_cli_lists_each_line_with_the_diagnosis_that_would_prove_it() -> None:
    p = _lab("suspects", "services/chat")
    assert p.returncode == 0, p.stderr
    assert "services/chat/defects/fire_and_forget.py:19: [dangling_task]" in p.stdout
    assert "proven by: replies_not_stored" in p.stdout and "suspects, not findings" in p.stdout
    j = json.loads(_lab("suspects", "services/chat", "--json").stdout)
    assert j["files"] > 0 and {s["check"] for s in j["suspects"]} >= set(DEFECT_LINES.values())


def test_cli_bad_input_exits_2_naming_it(tmp_path: Path) -> None:
    p = _lab("suspects", str(tmp_path / "nope.py"))
    assert p.returncode == 2 and "nope.py: no such file or directory" in p.stderr, p.stderr
    (tmp_path / "bad.py").write_text("if True\n")
    p = _lab("suspects", str(tmp_path))
    assert p.returncode == 2 and "bad.py:1: does not parse" in p.stderr and "Traceback" not in p.stderr
