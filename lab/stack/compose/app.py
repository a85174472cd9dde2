"""An app's own compose file as the stack of `lab investigate` ([start] compose = ...): the
user's file, unedited, plus the lab's override (lab.stack.compose.override) in a compose project
of the lab's own, on the engine compose mode uses (lab.stack.engine). Everything the project
created -- containers, networks, volumes -- is removed after success, failure or a signal.

The user's Redis runs as the user configured it (its persistence too): redis_restart kills and
starts that container and reports what survived. The lab reads the key directly at the port it
publishes for Redis, and the backend's log is followed into the run folder as target.log."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

from lab.common import redact
from lab.common.config import LabConfig
from lab.common.errors import LabError, NotReady, UsageError
from lab.common.files import write_atomic
from lab.common.http import http_get
from lab.common.wait import wait_until
from lab.stack import ports, procs, topology
from lab.stack.compose import override as ov
from lab.stack.compose.app_faults import AppFaults, pings
from lab.stack.compose.substitutes import Substitutes, host_network_builds, needed
from lab.stack.engine import DOCKER, Engine
from lab.stack.lifecycle import Lifecycle
from lab.stack.model_link import PROXY as MODEL_PROXY

OVERRIDE = "compose.lab.yaml"
STATE = "compose-app.json"  # what `lab down` needs to remove a project a killed run left


class AppDidNotStart(LabError):
    """The app's stack did not come up: bad input (exit 2), as a target that does not start is,
    never mistaken for a diagnosis (exit 1)."""

    exit_code = 2


class AppStack(Lifecycle, Substitutes, AppFaults):
    mode = "compose"
    redis_as_configured = True  # redis_restart: the app's own persistence, not the lab's AOF switch

    def __init__(
        self,
        cfg: LabConfig,
        app: ov.AppCompose,
        run_dir: Path,
        env: dict[str, str],
        http_port: int,
        model_env: dict[str, str] | None = None,
    ) -> None:
        from lab.stack.compose.stack import ComposeStack

        self.cfg, self.app, self.run_dir, self.env, self.http_port = cfg, app, run_dir, env, http_port
        # [model]: the app's model variables ({model_url} unfilled); the project then serves the
        # stand-in model (lab.stack.compose.override), and ModelLink only waits for it.
        self.model_env = model_env
        self.file = Path(app.file)
        self.cache = ComposeStack(cfg).cache
        # The engine compose mode uses (one per data root): stopped at the end only if idle.
        self.engine: Engine = ComposeStack(cfg).engine
        self._sdk: Any = None
        self._images: dict[str, str] = {}
        self.substituted: list[str] = []
        self.route = ""
        # A project of the lab's own: the user's own project of this file is never touched.
        key = f"{run_dir}\0{self.file.resolve()}".encode()
        self.project = "chaoslab-app-" + hashlib.sha1(key).hexdigest()[:8]

    # ----------------------------------------------------------------- compose plumbing
    def _compose_files(self) -> list[Path]:
        return [self.file, self.run_dir / OVERRIDE]

    def _compose_dir(self) -> Path:
        return self.file.parent

    @property
    def redis_url(self) -> str:
        return self.cfg.redis_url  # the app's Redis, published by the override on the lab's port

    def _login(self, plan: ov.Plan) -> None:
        """The lab's reads and faults log in to the app's Redis as the app does, in its db; the
        password is a secret of the run (kept out of the terminal and every file it writes)."""
        self.cfg = replace(self.cfg, redis_auth=plan.auth, redis_db=plan.db)
        password = plan.auth.partition(":")[2]
        redact.add(password, unquote(password), plan.auth)
        if plan.secret_url:
            self._secret_env = {ov.SECRET_URL_ENV: plan.secret_url}
            redact.add(plan.secret_url)

    @property
    def serves_model(self) -> bool:
        return self.model_env is not None

    @property
    def backend_log(self) -> Path:
        return self.run_dir / "target.log"

    # ----------------------------------------------------------------- up / down
    def up(self, timeout_s: float = 600.0) -> dict[str, Any]:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        return self._start_or_undo(lambda: self._up(timeout_s))  # a signal or failure: the half-start undone

    def _up(self, timeout_s: float) -> dict[str, Any]:
        if (self.run_dir / OVERRIDE).exists():
            self.down()  # an earlier run's project, killed before its clean-up
        self.engine.run_dir.mkdir(parents=True, exist_ok=True)
        state = {"app": asdict(self.app), "env": self.env, "http_port": self.http_port, "model_env": self.model_env}
        write_atomic(self.run_dir / STATE, json.dumps(state, indent=2) + "\n")
        host = self.engine.ensure()
        raw = self._read_raw()
        resolved = self._resolved(host, [self.file])
        self._check_ports_free(resolved)
        self.substituted = self._substitute(host, needed(resolved))
        image = self._toxiproxy_ref(host)
        ports_ = self.cfg.ports
        at = ov.Published(
            self.http_port,
            ports_["redis"],
            ports_["toxiproxy"],
            ports_["redis_proxy"],
            ports_["model"],
            ports_["model_proxy"],
        )
        config_file = self.run_dir / "toxiproxy.json"
        model = self._model_service(host)
        plan = ov.plan(raw, resolved, self.app, at, image, str(config_file), self.env, model)
        for name, extra in host_network_builds(resolved, self.substituted).items():
            plan.override.setdefault("services", {}).setdefault(name, {}).update(extra)
        proxies = [topology.Proxy("redis", plan.listen, plan.upstream)]
        if model is not None:
            proxies.append(topology.Proxy(MODEL_PROXY, f"0.0.0.0:{ov.MODEL_LISTEN}", f"{ov.MODEL}:{ov.MODEL_PORT}"))
        topology.write(proxies, config_file)
        # Atomically: the override's existence says the project is up (status), `lab down` reads it.
        write_atomic(
            self.run_dir / OVERRIDE,
            "# Written by the lab for this run (lab.stack.compose.override); removed with the project.\n"
            + yaml.safe_dump(plan.override, sort_keys=False),
        )
        self.route = plan.route
        self._login(plan)
        # --build: the backend's image is rebuilt from the app's current source (the layer
        # cache makes an unchanged one instant); the stand-ins are tagged, never pulled.
        self._compose(host, "up", "-d", "--build", timeout=timeout_s)
        self._keep_build_cache(host, resolved)
        self._wait_started(host, timeout_s)
        self.backend_log.unlink(missing_ok=True)  # this run's output only
        self._follow_log(host)
        return {"mode": self.mode, "project": self.project, "docker_host": host, "reused": False}

    def _keep_build_cache(self, host: str, resolved: dict[str, Any]) -> None:
        """On the lab's private engine (its own cache, as its offline images are), the images
        compose built get a second tag, one per app and service: `down --rmi local` then removes
        only the project's tag, and the next run's build finds its layers (the example's image:
        19.4 s to build on vfs storage, 0.3 s from the cache; 1.4 s on overlay2). The tag's
        previous image, if the source changed, is removed. A user's engine keeps nothing."""
        if host != self.engine.private_host:
            return
        for name, svc in (resolved.get("services") or {}).items():
            if "build" not in svc:
                continue
            ps = ("ps", "-aq", "--filter", f"label=com.docker.compose.project={self.project}")
            ids = self._docker(host, *ps, "--filter", f"label=com.docker.compose.service={name}").stdout.split()
            if not ids:
                continue
            image = self._docker(host, "inspect", "-f", "{{.Image}}", ids[0]).stdout.strip()
            key = hashlib.sha1(f"{self.file.resolve()}\0{name}".encode()).hexdigest()[:10]
            tag = f"chaoslab/app-cache:{name}-{key}"
            old = self._docker(host, "image", "inspect", "-f", "{{.Id}}", tag, check=False).stdout.strip()
            self._docker(host, "tag", image, tag)
            if old and old != image:
                self._docker(host, "rmi", old, check=False)  # in use elsewhere: it stays

    def _read_raw(self) -> dict[str, Any]:
        try:
            raw = yaml.safe_load(self.file.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise UsageError(f"start.compose: cannot read {self.file}: {exc}", "give the app's compose file") from None
        if not isinstance(raw, dict):
            raise UsageError(
                f"start.compose: {self.file} is not a compose file (no mapping)", "give the app's compose file"
            )
        return raw

    def _resolved(self, host: str, files: list[Path]) -> dict[str, Any]:
        """The app's config as compose resolves it (variables, env files, paths made absolute)."""
        res = self._compose(host, "config", files=files)
        return dict(yaml.safe_load(res.stdout) or {})

    def _check_ports_free(self, resolved: dict[str, Any]) -> None:
        """The app's own published ports (an override cannot take them away), then the lab's:
        a port in use stops the run before anything starts."""
        from lab.common.config import PORT_ENV

        want = [
            (
                f"the service {s!r} publishes it in {self.file}",
                "stop what holds it (your own stack of this file?)",
                ip,
                p,
            )
            for s, ip, p in ov.published_ports(resolved)
        ]
        want.append(
            (
                "the lab publishes the backend there (http.port)",
                "choose another: --set http.port=NNNNN",
                "",
                self.http_port,
            )
        )
        for key in ("redis", "toxiproxy", "redis_proxy", *(("model", "model_proxy") if self.serves_model else ())):
            want.append(
                (
                    f"the lab publishes it ({PORT_ENV[key]})",
                    f"choose another: {PORT_ENV[key]}=NNNNN",
                    "",
                    self.cfg.ports[key],
                )
            )
        for why, hint, ip, port in want:
            if not ports.is_free("127.0.0.1" if ip in ("0.0.0.0", "") else ip, port):
                who = ports.holder(port)
                raise UsageError(f"port {port} is in use{f' by {who}' if who else ''}: {why}", hint)

    def _model_service(self, host: str) -> ov.ModelService | None:
        """The stand-in on any image with python3 (it needs nothing else): the official Python
        image where the engine has or can pull it, else the lab's offline base."""
        if self.model_env is None:
            return None
        from lab.stack.compose.images import OFFICIAL

        official = OFFICIAL["chat_base"]
        if self._has_image(host, official) or self._pullable(host, official):
            image = official
        else:
            image = self._choose_images(host).get("REDIS_IMAGE", official)
        lab_dir = Path(__file__).resolve().parents[2]  # the lab package: lab/stack/compose/app.py
        return ov.ModelService(image, str(lab_dir), self.model_env)

    def _toxiproxy_ref(self, host: str) -> str:
        from lab.stack.compose.images import OFFICIAL

        official = OFFICIAL["toxiproxy"]
        if self._has_image(host, official) or self._pullable(host, official):
            return official
        return self._choose_images(host).get("TOXIPROXY_IMAGE", official)

    def _wait_started(self, host: str, timeout_s: float) -> None:
        """Every container running, healthy where it has a healthcheck; then Toxiproxy's proxy
        answering and the real Redis at the lab's port."""
        ids = self._compose(host, "ps", "-q").stdout.split()
        fmt = "{{.Name}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}"

        def states() -> list[list[str]]:
            return [line.split() for line in self._docker(host, "inspect", "-f", fmt, *ids).stdout.strip().splitlines()]

        def ready() -> bool:
            return all(st[1] == "running" and st[2:] in ([], ["healthy"]) for st in states())

        def exited() -> str | None:
            gone = [st[0].lstrip("/") for st in states() if st[1] in ("exited", "dead")]
            return f"{', '.join(gone)} exited during start-up" if gone else None

        try:
            wait_until(
                ready,
                what=f"the services of {self.file.name} started",
                timeout_s=timeout_s,
                interval_s=0.5,
                abort=exited,
            )
        except NotReady as exc:
            gone = exited()
            raise AppDidNotStart(
                exc.message + (f"; its last lines:\n{self._logs(host, gone.split(',')[0].split()[0])}" if gone else ""),
                f"run the app's own stack to see why: docker compose -f {self.file} up",
            ) from None
        wait_until(lambda: http_get(self.cfg.toxiproxy_url + "/proxies")[0] == 200, what="toxiproxy", timeout_s=30)
        wait_until(lambda: pings(self.cfg.redis_url), what="the app's redis at the lab's port", timeout_s=30)
        wait_until(lambda: pings(self.cfg.redis_proxy_url), what="the app's redis through toxiproxy", timeout_s=30)

    def _logs(self, host: str, name: str) -> str:
        res = self._docker(host, "logs", "--tail", "20", name.lstrip("/"), check=False)
        return "\n".join("  | " + line for line in (res.stdout + res.stderr).splitlines()[-20:]) or "  | (no output)"

    def _follow_log(self, host: str) -> None:
        """The backend's output, as target.log (evidence for the report); `docker logs -f`
        ends with the container, so a backend restart follows it anew (--since: no repeats)."""
        c = self._container("backend", host)
        procs.spawn(  # its output is target.log
            "target",
            [DOCKER, "logs", "-f", "--since", c.attrs["State"]["StartedAt"], c.id],
            self.run_dir,
            env=self._env(host),
        )

    def down(self) -> list[str]:
        report = []
        for info in procs.recorded(self.run_dir):
            report.append(f"{info.name} {procs.stop(info, self.run_dir)}")
        host = self.engine.find()
        if host is not None and (self.run_dir / OVERRIDE).exists():
            # Containers, the project's networks and its volumes (named and anonymous): all the
            # lab's, under its own project name; --rmi local: the backend's image it built.
            self._compose(host, "down", "--volumes", "--remove-orphans", "--rmi", "local", "-t", "5")
            report.append(f"compose project {self.project}: containers, networks and volumes removed")
        self.close()
        if host is not None:
            stopped = self._stop_engine_if_idle(host)
            if stopped:
                report.append(stopped)
        for name in (OVERRIDE, "toxiproxy.json", STATE):
            (self.run_dir / name).unlink(missing_ok=True)
        return report

    @classmethod
    def left_behind(cls, cfg: LabConfig, run_dir: Path) -> "AppStack | None":
        """The app stack a run in ``run_dir`` started and could not remove (it was SIGKILLed)."""
        try:
            state = json.loads((run_dir / STATE).read_text())
        except (OSError, ValueError):
            return None
        return cls(
            cfg, ov.AppCompose(**state["app"]), run_dir, state["env"], state["http_port"], state.get("model_env")
        )

    def status(self) -> dict[str, Any]:
        return {"mode": self.mode, "up": (self.run_dir / OVERRIDE).exists(), "project": self.project}
