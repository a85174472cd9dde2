"""Each static check on a small app that has its mechanism, and on a harmless neighbour that
must not be a suspect. Apps are written to a temporary folder; a Flask view file gives the
per-request-loop context where a check needs it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from lab import suspects

FLASK_VIEWS = """
from flask import Flask
app = Flask(__name__)

@app.post("/chat")
async def chat():
    return {}
"""

# The append and its TTL in one MULTI/EXEC: neither TTL check's suspect.
PIPELINED_APPEND = """
        def append(r, k, v):
            with r.pipeline(transaction=True) as p:
                p.rpush(k, v)
                p.expire(k, 60)
                p.execute()
        """

# check -> (code with the mechanism, its suspect line's text, harmless code)
CASES: dict[str, tuple[str, str, str]] = {
    "dangling_task": (
        """
        import asyncio
        async def save(r, k, v):
            await r.rpush(k, v)
        async def handle(r):
            asyncio.create_task(save(r, "k", "v"))
        """,
        'asyncio.create_task(save(r, "k", "v"))',
        """
        import asyncio
        async def save(r, k, v):
            await r.rpush(k, v)
        async def handle(r):
            task = asyncio.create_task(save(r, "k", "v"))
            await task
        """,
    ),
    "module_client": (
        """
        import redis.asyncio as aredis
        client = aredis.Redis.from_url("redis://x")
        """,
        'client = aredis.Redis.from_url("redis://x")',
        """
        import redis.asyncio as aredis
        def client():
            return aredis.Redis.from_url("redis://x")
        """,
    ),
    "session_cookie": (
        """
        def respond(resp, sid):
            resp.set_cookie("sid", sid, httponly=True)
        """,
        'resp.set_cookie("sid", sid, httponly=True)',
        """
        def respond(resp, sid):
            resp.set_cookie("sid", sid, max_age=3600, httponly=True)
        """,
    ),
    "ttl_conditional": (
        """
        def append(r, k, v):
            if r.rpush(k, v) == 1:
                r.expire(k, 60)
        """,
        "r.expire(k, 60)",
        PIPELINED_APPEND,
    ),
    "ttl_two_commands": (
        """
        def append(r, k, v):
            r.rpush(k, v)
            r.expire(k, 60)
        """,
        "r.expire(k, 60)",
        PIPELINED_APPEND,
    ),
    "retry_append": (
        """
        import redis
        from redis.retry import Retry
        from redis.backoff import ExponentialBackoff
        r = redis.Redis(retry=Retry(ExponentialBackoff(), 3))
        def append(k, v):
            r.rpush(k, v)
        """,
        "r.rpush(k, v)",
        """
        import redis
        r = redis.Redis(retry=None)
        def append(k, v):
            r.rpush(k, v)
        """,
    ),
    "stream_end_save": (
        """
        def stream(tokens, r, k):
            for t in tokens:
                yield t
            r.rpush(k, "".join(tokens))
        """,
        'r.rpush(k, "".join(tokens))',
        """
        def stream(tokens, r, k):
            r.rpush(k, "".join(tokens))
            for t in tokens:
                yield t
        """,
    ),
    "swallowed_error": (
        """
        import logging
        log = logging.getLogger()
        def save(r, k, v):
            try:
                r.rpush(k, v)
            except Exception as exc:
                log.warning("ignored %s", exc)
        """,
        "except Exception as exc:",
        """
        import logging
        log = logging.getLogger()
        def save(r, k, v):
            try:
                r.rpush(k, v)
            except Exception as exc:
                log.warning("failed %s", exc)
                raise
        """,
    ),
    "background_write": (
        """
        import threading
        def append(r, k, v):
            r.rpush(k, v)
        def handle(r):
            threading.Thread(target=append, args=(r, "k", "v")).start()
        """,
        'threading.Thread(target=append, args=(r, "k", "v")).start()',
        """
        import threading
        def append(r, k, v):
            r.rpush(k, v)
        def handle(r):
            t = threading.Thread(target=append, args=(r, "k", "v"))
            t.start()
            t.join()
        """,
    ),
    "history_trim": (
        """
        def append(r, k, v):
            r.rpush(k, v)
            r.ltrim(k, -20, -1)
        """,
        "r.ltrim(k, -20, -1)",
        """
        def prompt(r, k):
            return r.lrange(k, -20, -1)
        """,
    ),
    "history_cache": (
        """
        _cache = {}
        def history(r, k):
            rows = r.lrange(k, 0, -1)
            _cache[k] = rows
            return rows
        """,
        "_cache[k] = rows",
        """
        _clients = {}
        def client(url, make):
            c = _clients.get(url)
            _clients[url] = c or make(url)
            return _clients[url]
        """,
    ),
    "concurrent_writes": (
        """
        import asyncio
        async def save(r, k, v):
            await r.rpush(k, v)
        async def handle(r):
            a = asyncio.ensure_future(save(r, "k", "question"))
            b = asyncio.ensure_future(save(r, "k", "reply"))
            await a
            await b
        """,
        'a = asyncio.ensure_future(save(r, "k", "question"))',
        """
        import asyncio
        async def save(r, k, v):
            await r.rpush(k, v)
        async def handle(r):
            await save(r, "k", "question")
            await save(r, "k", "reply")
        """,
    ),
    # The document read by a helper, written back by its caller; harmless: WATCH/MULTI retries.
    "read_modify_write": (
        """
        import json
        def load(r, key):
            return json.loads(r.get(key) or "[]")
        def add(r, key, row):
            doc = load(r, key)
            doc.append(row)
            r.set(key, json.dumps(doc), ex=60)
        """,
        "r.set(key, json.dumps(doc), ex=60)",
        """
        import json
        import redis
        def add(r, key, row):
            with r.pipeline() as p:
                while True:
                    try:
                        p.watch(key)
                        doc = json.loads(p.get(key) or "[]")
                        doc.append(row)
                        p.multi()
                        p.set(key, json.dumps(doc), ex=60)
                        p.execute()
                        return
                    except redis.WatchError:
                        continue
        """,
    ),
}


def _scan(tmp_path: Path, code: str) -> list[suspects.Suspect]:
    (tmp_path / "views.py").write_text(FLASK_VIEWS)
    (tmp_path / "app.py").write_text(textwrap.dedent(code))
    return [s for s in suspects.scan([tmp_path], root=tmp_path).suspects if s.path == "app.py"]


def test_every_registered_check_has_a_case() -> None:
    suspects._load()
    assert set(suspects.REGISTRY) == set(CASES)


@pytest.mark.parametrize("check", list(CASES))
def test_the_mechanism_is_a_suspect_at_its_line(tmp_path: Path, check: str) -> None:
    code, line, _ = CASES[check]
    found = [s for s in _scan(tmp_path, code) if s.check == check]
    assert [s.code for s in found] == [line], found
    s = found[0]
    assert s.diagnoses == suspects.REGISTRY[check].diagnoses and s.mechanism and s.detail
    assert textwrap.dedent(code).splitlines()[s.line - 1].strip() == line


@pytest.mark.parametrize("check", list(CASES))
def test_the_harmless_neighbour_is_not(tmp_path: Path, check: str) -> None:
    assert _scan(tmp_path, CASES[check][2]) == []


def test_a_kept_and_awaited_task_is_not_a_suspect(tmp_path: Path) -> None:
    """ruff's RUF006 and the lab's own check (its fallback when ruff cannot run) flag a task
    nobody keeps, or keeps in a name never read again -- never one that is kept and awaited."""
    kept = CASES["dangling_task"][2]
    forgotten = kept.replace("await task", "return None")
    (tmp_path / "views.py").write_text(FLASK_VIEWS)
    for use_ruff in (True, False):
        for code, want in ((kept, []), (forgotten, ["dangling_task"]), (CASES["dangling_task"][0], ["dangling_task"])):
            (tmp_path / "app.py").write_text(textwrap.dedent(code))
            got = suspects.scan([tmp_path], root=tmp_path, use_ruff=use_ruff).suspects
            assert [s.check for s in got if s.path == "app.py"] == want, (use_ruff, code)
            by = {s.by for s in got}
            assert by <= ({"ruff RUF006", "lab"} if use_ruff else {"lab"}), by


def test_a_module_client_made_under_a_condition_or_a_fallback_is_a_suspect(tmp_path: Path) -> None:
    """``Redis.from_url(...) if SHARED else None`` (a Flask app written unseen made its shared
    client so, 2026-12-06: no suspect line before), ``cached or Redis(...)``."""
    for made in ("aredis.Redis.from_url(URL) if SHARED else None", "cached or aredis.Redis(host='x')"):
        code = f"import redis.asyncio as aredis\nclient = {made}\n"
        assert [s.check for s in _scan(tmp_path, code)] == ["module_client"], made
    assert _scan(tmp_path, "import redis.asyncio as aredis\nclient = None if SHARED else 0\n") == []


def test_an_expire_nx_is_a_ttl_set_once(tmp_path: Path) -> None:
    """EXPIRE ... NX on every turn (a Flask app's "not reset by every turn", 2026-12-06): Redis
    itself sets the TTL only once. nx=False, or no NX, is a renewal."""
    body = "def append(r, k, v):\n    p = r.pipeline()\n    p.rpush(k, v)\n    p.expire(k, 60, {})\n    p.execute()\n"
    for nx in ("nx=True", "nx=ONCE", '"NX"'):
        assert [s.check for s in _scan(tmp_path, body.format(nx))] == ["ttl_conditional"], nx
    assert _scan(tmp_path, body.format("nx=False")) == [] and _scan(tmp_path, body.format("xx=False")) == []


def test_a_module_client_without_per_request_loops_is_not_a_suspect(tmp_path: Path) -> None:
    """One long-lived loop (no Flask async views): a shared redis.asyncio client is fine."""
    (tmp_path / "app.py").write_text(textwrap.dedent(CASES["module_client"][0]))
    assert suspects.scan([tmp_path], root=tmp_path).suspects == []


def test_a_task_kept_but_never_awaited_is_a_background_write(tmp_path: Path) -> None:
    """The task held in a set (asyncio's advice against a vanishing task) is no dangling task,
    but the answer still leaves before its write: a background write, found through the helper
    it calls (the writers are a fixpoint). Awaited before the answer: nothing."""
    kept = """
        import asyncio
        _tasks = set()
        async def save(r, k, v):
            await r.incr(k + ":n")
            await r.rpush(k, v)
        async def handle(r):
            task = asyncio.get_running_loop().create_task(save(r, "k", "v"))
            _tasks.add(task)
            task.add_done_callback(_tasks.discard)
        """
    got = _scan(tmp_path, kept)
    assert [(s.check, s.code) for s in got] == [
        ("background_write", 'task = asyncio.get_running_loop().create_task(save(r, "k", "v"))')
    ], got
    for awaited in ("await task", "await asyncio.shield(task)"):  # shielded from the socket's end
        assert _scan(tmp_path, kept.replace("task.add_done_callback(_tasks.discard)", awaited)) == []


def test_a_sync_view_that_runs_each_call_on_a_new_loop_shares_no_client_safely(tmp_path: Path) -> None:
    """Sync views that call asyncio.run() (in the view, or through a helper) make a loop per
    request as Flask's async views do: a module-level redis.asyncio client is the suspect. One
    long-lived loop started by main() is not a loop per request."""
    per_request = """
        import asyncio
        import redis.asyncio as aredis
        from flask import Flask
        app = Flask(__name__)
        client = aredis.Redis.from_url("redis://x")
        def run(coro):
            return asyncio.run(coro)
        @app.get("/history")
        def history():
            return {"rows": run(client.lrange("k", 0, -1))}
        """
    long_lived = """
        import asyncio
        import redis.asyncio as aredis
        client = aredis.Redis.from_url("redis://x")
        async def serve():
            await client.ping()
        def main():
            asyncio.run(serve())
        """
    for code, want in ((per_request, ["module_client"]), (long_lived, [])):
        (tmp_path / "app.py").write_text(textwrap.dedent(code))
        got = suspects.scan([tmp_path / "app.py"], root=tmp_path, use_ruff=False).suspects
        assert [s.check for s in got] == want, (code, got)


def test_an_error_caught_by_the_modules_own_tuple_of_exceptions_is_swallowed_or_not_as_its_members(
    tmp_path: Path,
) -> None:
    """``except STORAGE_ERRORS`` where the module names the tuple (redis.RedisError, OSError): its
    members decide, as if written out; a tuple of other errors is not the store's."""
    code = """
        import logging
        import redis
        log = logging.getLogger()
        STORAGE_ERRORS = (redis.RedisError, OSError)
        PARSE_ERRORS = (ValueError, KeyError)
        def save(r, k, v):
            try:
                r.rpush(k, v)
            except STORAGE_ERRORS as exc:
                log.warning("ignored %s", exc)
        def parse(r, k, v):
            try:
                r.rpush(k, v)
            except PARSE_ERRORS as exc:
                log.warning("ignored %s", exc)
        """
    found = _scan(tmp_path, code)
    assert [(s.check, s.line) for s in found] == [("swallowed_error", 10)], found
