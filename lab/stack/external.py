"""external: the three services already run beside the lab (the containers of a Kubernetes pod,
deploy/k8s/), on the lab's ports on this host. The lab starts and stops nothing: ``up`` waits
until Redis, Toxiproxy (with the topology's proxies) and the backend answer, ``down`` leaves them
be. Its faults are Toxiproxy's and the backend's own (lab mode): processes it does not own cannot
be paused or restarted, so those faults are refused in this mode (lab.faults.check_mode).

The backend's events (chat.received / chat.done, the runner's triggers) are read from the file
the backend's output goes to: ``LAB_BACKEND_LOG``, default ``<run folder>/backend.log`` (in the
pod, a volume both containers mount)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import redis

from lab.stack import topology
from lab.common.config import LabConfig
from lab.common.errors import LabError, UsageError
from lab.stack.lifecycle import Lifecycle
from lab.common.http import http_get
from lab.common.wait import wait_until


class ExternalStack(Lifecycle):
    mode = "external"

    def __init__(self, cfg: LabConfig) -> None:
        self.cfg = cfg
        self.run_dir = cfg.run_dir

    @property
    def backend_log(self) -> Path:
        return Path(os.environ.get("LAB_BACKEND_LOG") or self.run_dir / "backend.log")

    def up(self, timeout_s: float = 60.0) -> dict[str, Any]:
        """Wait for the services; create a topology proxy Toxiproxy lacks. Never starts a process."""
        self.run_dir.mkdir(parents=True, exist_ok=True)
        hint = "the external mode uses services that already run (e.g. the pod's containers) on the lab's ports"
        wait_until(
            lambda: redis.Redis.from_url(self.cfg.redis_url, socket_timeout=1, retry=None).ping(),
            what=f"Redis at {self.cfg.redis_url}",
            timeout_s=timeout_s,
            hint=hint,
        )
        wait_until(
            lambda: http_get(self.cfg.toxiproxy_url + "/version")[0] == 200,
            what=f"Toxiproxy at {self.cfg.toxiproxy_url}",
            timeout_s=timeout_s,
            hint=hint,
        )
        self._proxies()
        wait_until(
            lambda: http_get(self.cfg.chat_url + "/healthz")[0] == 200,
            what=f"the backend through Toxiproxy at {self.cfg.chat_url}",
            timeout_s=timeout_s,
            hint=hint,
        )
        if not self.backend_log.is_file():
            raise UsageError(
                f"no backend log at {self.backend_log}",
                "point LAB_BACKEND_LOG at the file the backend's output goes to (a shared volume)",
            )
        return {"mode": self.mode, "run_dir": str(self.run_dir), "endpoints": self.cfg.endpoints(), "reused": True}

    def _proxies(self) -> None:
        want = topology.render_native(topology.load(self.cfg.topology_file), self.cfg)
        _, body = http_get(self.cfg.toxiproxy_url + "/proxies")
        have = json.loads(body)
        for p in want:
            got = have.get(p.name)
            if got is None:
                import urllib.error
                import urllib.request

                req = urllib.request.Request(
                    self.cfg.toxiproxy_url + "/proxies",
                    method="POST",
                    data=json.dumps(p.as_json()).encode(),
                    headers={"Content-Type": "application/json", "User-Agent": "chaoslab"},
                )
                try:
                    urllib.request.urlopen(req, timeout=5).close()
                except urllib.error.HTTPError as exc:  # 409: made meanwhile; else a real error
                    if exc.code != 409:
                        raise LabError(f"toxiproxy refused proxy {p.name}: {exc.code} {exc.read()[:200]!r}") from None
            elif got.get("upstream") != p.upstream:
                raise LabError(
                    f"toxiproxy proxy {p.name} goes to {got.get('upstream')}, expected {p.upstream}",
                    "give Toxiproxy the lab's topology (deploy/k8s renders it into a ConfigMap)",
                )

    def down(self) -> list[str]:
        return []  # nothing here is the lab's to stop

    def status(self) -> dict[str, Any]:
        try:
            healthy = http_get(self.cfg.chat_url + "/healthz")[0] == 200
        except OSError:
            healthy = False
        return {
            "mode": self.mode,
            "up": healthy,
            "healthy": healthy,
            "run_dir": str(self.run_dir),
            "services": {},
            "endpoints": self.cfg.endpoints(),
        }

    def heal(self) -> None:
        """Nothing of its own to heal: each fault removes what it applied."""

    def _not_here(self, what: str) -> UsageError:
        return UsageError(
            f"{what}: the external mode does not own the processes", "run this fault in native or compose mode"
        )

    def instance(self, service: str) -> str:
        raise self._not_here(f"which {service} runs")

    def pause_redis(self) -> None:
        raise self._not_here("pausing Redis")

    def resume_redis(self) -> None:
        raise self._not_here("resuming Redis")

    def redis_paused(self) -> str | None:
        return None

    def restart_redis(self, *, durable: bool) -> str:
        raise self._not_here("restarting Redis")

    def restart_backend(self) -> str:
        raise self._not_here("restarting the backend")
