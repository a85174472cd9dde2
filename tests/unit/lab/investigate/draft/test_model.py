"""lab init reads whether the app calls a model in what it is started with: its variables and
the source files its command names -- not in files it does not name."""

from __future__ import annotations

from pathlib import Path

from lab.investigate.draft.model import named_sources, propose


def test_the_files_a_command_names_are_found_in_each_launchers_form(tmp_path: Path) -> None:
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "chat.py").write_text("from openai import OpenAI\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "app.py").write_text("import anthropic\n")
    (tmp_path / "server.js").write_text("import { createOllama } from 'ollama'\n")
    assert named_sources("{python} examples/chat.py", tmp_path) == [tmp_path / "examples" / "chat.py"]
    gunicorn = "{python} -m gunicorn -b 127.0.0.1:{port} --chdir examples chat:app"
    assert named_sources(gunicorn, tmp_path) == [tmp_path / "examples" / "chat.py"]
    assert named_sources("uvicorn pkg.app:app --port {port}", tmp_path) == [tmp_path / "pkg" / "app.py"]
    assert named_sources("{python} -m pkg.app", tmp_path) == [tmp_path / "pkg" / "app.py"]
    assert named_sources("node server.js", tmp_path) == [tmp_path / "server.js"]
    assert propose("node server.js", tmp_path, {}) == (["ollama_chat"], "server.js has \"'ollama'\"")


def test_a_proposal_says_where_it_was_read_and_none_is_made_without_evidence(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("import redis\n# no model here\n")
    (tmp_path / "other.py").write_text("from openai import OpenAI\n")  # not named by the command
    assert propose("{python} app.py", tmp_path, {"REDIS_URL": "x"}) is None
    got = propose("{python} app.py", tmp_path, {"OPENAI_BASE_URL": "{model_url}/v1"})
    assert got == (["openai_chat"], "the app's environment names OPENAI_BASE_URL")


def test_the_example_that_calls_a_model_is_proposed_its_protocol() -> None:
    root = Path(__file__).resolve().parents[5]
    got = propose("{python} -m gunicorn -b 127.0.0.1:{port} --chdir examples model_flask:app", root, {})
    assert got is not None and got[0] == ["openai_chat"] and "examples/model_flask.py has" in got[1]
