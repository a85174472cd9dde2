"""Chaos on Compose: the container faults (docker SDK) behind the fault names native mode uses,
confirmed by the engine, and the same cell outcomes as on the native stack.

The expectations are native mode's (tests/e2e/test_memory_survives_refresh.py and
tests/integration/lab/faults/): fire_and_forget loses acknowledged replies under a slow Redis
link and is the cause by the attribution rule; the correct profile loses nothing; a Redis
restart without persistence loses the conversation and with AOF loses nothing; a paused Redis
makes the correct profile answer 503 (not hang) and nothing acknowledged is lost.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
import requests

from lab.model.attribution import cell_stats, verdicts
from lab.common.config import LabConfig, ROOT
from lab.expect import assert_cell, run_grid
from lab.faults import Targets, make
from lab.model.outcome import CellOutcome
from lab.plan.schedule import Cell, parse_fault, parse_profile, plan_cell, plan_trial
from lab.stack.compose import ComposeStack
from tests.helpers import isolated_env, run_lab, start_lab

# Start-up on a fresh engine data root loads the offline images from the machine's cache, or
# builds them when their inputs changed (minutes on 2 cores): the module fixture's setup counts
# against its first test's timeout.
pytestmark = pytest.mark.timeout(900)

K = 4  # trials per cell: 4/4 vs 0/4 is the smallest count whose Wilson intervals separate
DOCKER_ROOT = ROOT / ".lab" / "docker-tests"
FAULT_TURN = 3


@pytest.fixture(scope="module")
def compose_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return isolated_env(tmp_path_factory.mktemp("compose-chaos"), LAB_DOCKER_ROOT=str(DOCKER_ROOT))


@pytest.fixture(scope="module")
def stack(compose_env: dict[str, str]) -> Iterator[ComposeStack]:
    env = compose_env
    stack = ComposeStack(LabConfig.from_env(env), docker_root=DOCKER_ROOT)
    try:
        up = run_lab(env, "up", "--mode", "compose", timeout=900)
        assert up.returncode == 0, up.stdout + up.stderr
        yield stack
    finally:  # also after a failed up: nothing of the engine may outlive the module
        stack.close()
        run_lab(env, "down", "--mode", "compose")


@pytest.fixture
def targets(stack: ComposeStack) -> Iterator[Targets]:
    t = Targets.of(stack)
    t.toxiproxy.reset()
    yield t
    stack.heal()
    t.toxiproxy.reset()


def _cell(profile: str, fault: str, refresh: str = "settled", turns: int = 5) -> Cell:
    name, params = parse_fault(fault)
    return Cell(parse_profile(profile), name, refresh, turns, tuple(sorted(params.items())))


SLOW_LINK = ("latency:latency_ms=300", "after_ack")
ATTRIBUTION = [_cell(p, *SLOW_LINK) for p in ("fire_and_forget", "correct", "incident", "incident-fire_and_forget")]
CONTAINER_CELLS = [
    _cell("correct", f) for f in ("redis_pause", "redis_restart", "redis_restart:durable=true", "backend_restart")
]


@pytest.fixture(scope="module")
def grid(stack: ComposeStack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, CellOutcome]:
    plans = [(c, plan_cell(c, K, 2000 + i, prefix=f"k{i:02d}-")) for i, c in enumerate(ATTRIBUTION)]
    # Container faults at turn 3 of 5: two acknowledged turns before it (what a restart can
    # lose), two after it (what must work again once it is healed).
    plans += [
        (c, [plan_trial(c, 3000 + 10 * i + j, f"f{i:02d}-{j:03d}", FAULT_TURN) for j in range(K)])
        for i, c in enumerate(CONTAINER_CELLS)
    ]
    return run_grid(stack, plans, tmp_path_factory.mktemp("grid"))


# ----------------------------------------------------------------- the faults themselves
def test_redis_pause_is_the_engines_paused_state_and_the_backend_answers_503(
    targets: Targets, stack: ComposeStack
) -> None:
    s = requests.Session()
    before = s.post(stack.cfg.chat_url + "/chat", json={"message": "my name is Ada"}, timeout=30)
    assert before.status_code == 200
    with make("redis_pause").on(targets) as evidence:
        assert "State.Status=paused" in evidence
        direct = redis.Redis.from_url(stack.cfg.redis_url, socket_timeout=0.5, retry=None)
        with pytest.raises(redis.exceptions.TimeoutError):
            direct.ping()
        direct.close()
        # The correct profile's store timeout fires: a 503 JSON answer, not a hang.
        resp = s.post(stack.cfg.chat_url + "/chat", json={"message": "hi"}, timeout=60)
        assert resp.status_code == 503 and resp.json()["error"] == "store_unavailable"
    assert stack.redis_paused() is None
    r = redis.Redis.from_url(stack.cfg.redis_url, socket_timeout=5)
    rows = [json.loads(x) for x in r.lrange(f"chat:{before.json()['session_id']}", 0, -1)]
    r.close()
    # The acknowledged turn is intact. (The 503'd one may be there too: its RPUSH waited in the
    # frozen server's socket and ran at unpause -- a 503 means "maybe applied", not "not applied".)
    acked = before.json()["id"]
    assert [(x["id"], x["role"]) for x in rows[:2]] == [(acked, "user"), (acked, "assistant")]


@pytest.mark.parametrize("durable, survives", [(False, False), (True, True)], ids=["no-persistence", "aof-always"])
def test_redis_restart_kills_and_starts_the_same_container(
    targets: Targets, stack: ComposeStack, durable: bool, survives: bool
) -> None:
    r = redis.Redis.from_url(stack.cfg.redis_url, socket_timeout=5)
    r.rpush("lab:restart", "kept?")
    before = stack.instance("redis")
    with make("redis_restart", durable=durable).on(targets) as evidence:
        assert f"aof_enabled={int(durable)}" in evidence
    after = stack.instance("redis")
    # Same container (its /data survives), a new start: a restart, not a re-creation.
    assert after != before and after.split(" started ")[0] == before.split(" started ")[0]
    assert (r.lrange("lab:restart", 0, -1) == [b"kept?"]) is survives
    r.delete("lab:restart")
    r.close()


def test_backend_restart_keeps_the_conversation_and_the_event_log(targets: Targets, stack: ComposeStack) -> None:
    s = requests.Session()
    s.post(stack.cfg.chat_url + "/chat", json={"message": "my name is Ivy"}, timeout=30)
    with make("backend_restart").on(targets) as evidence:
        assert "backend restarted" in evidence
    resp = s.post(stack.cfg.chat_url + "/chat", json={"message": "what is my name?", "id": "after-restart"}, timeout=30)
    assert resp.json()["reply"] == "Your name is Ivy."
    # The restarted container's log is followed again (the runner's triggers read it).
    from lab.common.wait import wait_until

    wait_until(
        lambda: '"id": "after-restart"' in stack.backend_log.read_text(),
        what="event of the restarted backend in the followed log",
        timeout_s=30,
    )


def test_redis_net_disconnect_cuts_redis_off_until_removed(targets: Targets, stack: ComposeStack) -> None:
    with make("redis_net_disconnect").on(targets) as evidence:
        assert "on no network" in evidence
        resp = requests.post(stack.cfg.chat_url + "/chat", json={"message": "hi"}, timeout=60)
        assert resp.status_code == 503
    assert stack.redis_networks() == [f"{stack.project}_store"]
    resp = requests.post(stack.cfg.chat_url + "/chat", json={"message": "hi"}, timeout=30)
    assert resp.status_code == 200


def test_ctrl_c_during_a_container_fault_leaves_redis_running(
    stack: ComposeStack, compose_env: dict[str, str], tmp_path: Path
) -> None:
    """`lab chaos --mode compose` interrupted while Redis is paused: exit 130, a partial
    report, and the container unpaused (the stack itself, reused, stays up)."""
    from lab.common.wait import wait_until

    proc = start_lab(
        "chaos",
        "--mode",
        "compose",
        "--only",
        "profile=correct;fault=redis_pause",
        "--trials",
        "4",
        "--seed",
        "7",
        "--reports",
        str(tmp_path),
        env=compose_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_until(
            lambda: stack.redis_paused() or proc.poll() is not None,
            what="the chaos run pausing Redis",
            timeout_s=180,
            interval_s=0.1,
        )
        assert proc.poll() is None, "the run must still be going when Ctrl-C arrives"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, out + err
    assert stack.redis_paused() is None
    r = redis.Redis.from_url(stack.cfg.redis_proxy_url, socket_timeout=5)
    assert r.ping()
    r.close()
    assert (tmp_path / "latest" / "results.json").exists()


# ----------------------------------------------------------------- cells: the same outcomes as native
def test_fire_and_forget_causes_the_loss_under_a_slow_link(
    grid: dict[str, CellOutcome], request: pytest.FixtureRequest
) -> None:
    """A Toxiproxy fault, unchanged on compose: fire_and_forget and the incident lose
    acknowledged replies in every trial, the correct profile and the incident without
    fire_and_forget in none, and the attribution rule names fire_and_forget."""
    got = {c.profile: grid[c.cell_id] for c in ATTRIBUTION}
    assert_cell(got["fire_and_forget"], request.node.nodeid, lost=K)
    assert_cell(got["incident"], request.node.nodeid, lost=K)
    assert_cell(got["correct"], request.node.nodeid, lost=0, duplicated=0, min_ack_ratio=0.8)
    assert_cell(got["incident-fire_and_forget"], request.node.nodeid, lost=0)
    vs = [v for v in verdicts([cell_stats(o) for o in got.values()]) if v.causes]
    assert ("fire_and_forget", "lost") in {(v.defect, v.metric) for v in vs}, [v.sentence() for v in vs]
    assert {v.defect for v in vs} == {"fire_and_forget"}, [v.sentence() for v in vs]


def test_paused_redis_makes_the_correct_profile_answer_503_and_lose_nothing(
    grid: dict[str, CellOutcome], request: pytest.FixtureRequest
) -> None:
    o = grid[_cell("correct", "redis_pause").cell_id]
    assert_cell(o, request.node.nodeid, lost=0, duplicated=0)
    assert all(any(s.status == 503 for s in t.trial.sends) for t in o.trials), [
        [s.status for s in t.trial.sends] for t in o.trials
    ]


def test_redis_restart_without_persistence_loses_the_conversation(
    grid: dict[str, CellOutcome], request: pytest.FixtureRequest
) -> None:
    o = grid[_cell("correct", "redis_restart").cell_id]
    assert_cell(o, request.node.nodeid, lost=K)
    # Everything acknowledged before the restart is gone, not just one turn.
    for t in o.trials:
        before = {s.id for s in t.trial.sends if s.turn < FAULT_TURN and s.outcome == "ok"}
        assert before and not before & {r.id for r in t.trial.final_rows}


@pytest.mark.parametrize("fault", ["redis_restart:durable=true", "backend_restart"])
def test_durable_restart_and_backend_restart_lose_nothing(
    grid: dict[str, CellOutcome], fault: str, request: pytest.FixtureRequest
) -> None:
    assert_cell(grid[_cell("correct", fault).cell_id], request.node.nodeid, lost=0, duplicated=0, min_ack_ratio=0.8)
