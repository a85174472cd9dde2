"""The suite's pytest-xdist workers never share a port, a run folder or a free-port block."""

from __future__ import annotations

from lab.common.config import PORT_ENV
from tests.conftest import FIXED_PORTS, MAX_WORKERS, ONE_WORKER, worker_env


def test_every_worker_has_ports_and_a_run_folder_of_its_own() -> None:
    envs = [worker_env(w) for w in range(MAX_WORKERS)]
    ports = [v for e in envs for k, v in e.items() if k.endswith("_PORT")]
    assert len(ports) == len(set(ports)) == len(PORT_ENV) * MAX_WORKERS  # every lab port, the model's too
    assert len({e["LAB_RUN_DIR"] for e in envs}) == MAX_WORKERS
    assert {int(p) for p in ports} == FIXED_PORTS


def test_free_port_blocks_of_two_workers_do_not_overlap(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import tests.conftest as conftest
    from tests.helpers import free_ports

    picked = []
    for w in range(2):
        monkeypatch.setattr(conftest, "WORKER", w)
        monkeypatch.setattr(conftest, "WORKERS", 2)
        picked.append(free_ports(20))
    assert max(picked[0]) < 26000 <= min(picked[1])
    assert not set(picked[0] + picked[1]) & FIXED_PORTS


def test_the_runs_kept_in_one_worker_are_real_test_paths() -> None:
    from lab.common.config import ROOT

    for prefix in ONE_WORKER:
        assert (ROOT / prefix.rstrip("/")).exists(), prefix
