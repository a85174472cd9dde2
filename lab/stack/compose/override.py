"""The lab's override file for an app's own compose file: a pure function of the app's file and
its resolved config (``docker-compose config``), so every rule is unit-tested without an engine.

What it adds, and why (the user's file is never written):
- a Toxiproxy service, its API published for the lab;
- the backend's Redis traffic routed through it, one of two ways:
  * ``redis_env``: the variable the backend finds Redis by is overridden with the same value,
    its host and port swapped for Toxiproxy's (user, password and db kept);
  * ``redis_host``: the host name the backend dials is taken over. Compose makes every service
    name a DNS alias on its networks, so a second holder of the alias would share it (DNS round
    robin); instead the real Redis moves to a network of its own (a service with no ``networks``
    key is on ``default`` only until an override names others) and Toxiproxy takes the alias
    on the backend's networks, reaching Redis by an alias of the lab's;
- the backend's port published where the lab's browser reaches it, and Redis's for the lab's
  direct reads of the key (the checker's truth);
- the backend waits for Toxiproxy to be healthy (its own ``depends_on`` waits on Redis);
- where the app calls a model ([model]): the stand-in model as a service of the project (the
  lab's own code, mounted read-only, on a Python image), its record published for the lab, and a
  second Toxiproxy proxy in front of it; the backend's model variables name that proxy, so a
  fault on the "model" link applies to its calls as on the native stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from lab.common.errors import UsageError

TOXIPROXY = "chaoslab-toxiproxy"  # the lab's service (a name no app uses)
STORE = "chaoslab-store"  # the real Redis's own network (redis_host route)
UPSTREAM = "chaoslab-redis-upstream"  # the real Redis's alias there, for Toxiproxy alone
API_PORT = 8474
MODEL = "chaoslab-model"  # the stand-in model's service
MODEL_PORT = 8080  # the stand-in, inside its container
MODEL_LISTEN = 8081  # Toxiproxy's "model" proxy, inside its container
MODEL_SRC = "/opt/chaoslab"  # where the lab's package is mounted in the stand-in's container
MODEL_URL = f"http://{TOXIPROXY}:{MODEL_LISTEN}"  # the stand-in as the backend reaches it


@dataclass(frozen=True)
class ModelService:
    """The stand-in model in the app's project: the image it runs on (any with python3), the
    lab's package folder to mount, and the backend's variables ({model_url} unfilled)."""

    image: str
    lab_dir: str
    env: dict[str, str]


@dataclass(frozen=True)
class AppCompose:
    """[start] compose = ...: where the app lives and how its backend finds Redis."""

    file: str  # resolved path of the app's compose file
    service: str  # the backend's service
    redis_service: str
    redis_env: str | None  # the variable the backend reads Redis's address from, or
    redis_host: str | None  # the host name it dials
    port: int  # the backend's port inside its container
    redis_port: int = 6379  # Redis's port inside its container


@dataclass(frozen=True)
class Published:
    """Where the lab reaches things on 127.0.0.1."""

    http: int  # the backend (the spec's http.port)
    redis: int  # the real Redis, direct
    toxiproxy: int  # Toxiproxy's API
    redis_proxy: int = 0  # Redis through Toxiproxy (a latency fault measures its effect there)
    model: int = 0  # the stand-in model, direct ([model]): its record of calls
    model_proxy: int = 0  # the stand-in through Toxiproxy, as the lab checks it answers


@dataclass(frozen=True)
class Plan:
    override: dict[str, Any]
    listen: str  # Toxiproxy's "redis" proxy, inside its container
    upstream: str  # the real Redis as Toxiproxy reaches it
    route: str  # one line for the terminal: how the backend's traffic now goes
    # How the app logs in to its Redis and which db it uses, from its own REDIS_URL: the lab's
    # reads and faults do the same (LabConfig.redis_auth / redis_db).
    auth: str = ""
    db: int = 0
    secret_url: str = ""  # the backend's Redis URL when it holds a password: SECRET_URL_ENV's value


# The variable the override reads the backend's Redis URL from when that URL holds a password.
SECRET_URL_ENV = "LAB_APP_REDIS_URL"


def plan(
    raw: dict[str, Any],
    resolved: dict[str, Any],
    app: AppCompose,
    at: Published,
    image: str,
    config_file: str,
    env: dict[str, str],
    model: ModelService | None = None,
) -> Plan:
    """The override for ``app``: ``raw`` is the app's file as written, ``resolved`` its config;
    ``model``: the stand-in model beside it."""
    backend = _services(resolved, app)[app.service]
    nets = sorted(backend.get("networks") or {"default": None})
    auth, db, secret_value = "", 0, ""
    if app.redis_env:
        listen_port = app.redis_port
        value, upstream = _env_route(backend, app, listen_port)
        auth, db = url_login(backend["environment"][app.redis_env])
        if auth:
            # The URL carries the app's Redis password: the override names a variable the lab
            # sets for its compose commands (lab.stack.compose.app), so no file holds it.
            value, secret_value = "${" + SECRET_URL_ENV + ":-}", value
        b_env = {**env, app.redis_env: value}
        tp_nets: dict[str, Any] = {n: None for n in nets}
        redis_over: dict[str, Any] = {}
        route = f"{app.service}'s {app.redis_env}={secret_value or value} (was {backend['environment'][app.redis_env]})"
    else:
        assert app.redis_host
        _check_movable(raw, app)
        listen_port, upstream = app.redis_port, f"{UPSTREAM}:{app.redis_port}"
        b_env = dict(env)
        tp_nets = {n: {"aliases": [app.redis_host]} for n in nets} | {STORE: None}
        redis_over = {"networks": {STORE: {"aliases": [UPSTREAM]}}}
        route = f"{app.redis_host}:{app.redis_port} taken over by Toxiproxy on {', '.join(nets)}; {app.redis_service} moved to {STORE}"
    override: dict[str, Any] = {
        # The app's file's version, if it has one: docker-compose 1.29 refuses files that differ.
        **({"version": raw["version"]} if "version" in raw else {}),
        "services": {
            app.service: {
                **({"environment": b_env} if b_env else {}),
                "ports": [f"127.0.0.1:{at.http}:{app.port}"],
                "depends_on": {TOXIPROXY: {"condition": "service_healthy"}},
            },
            app.redis_service: {**redis_over, "ports": [f"127.0.0.1:{at.redis}:{app.redis_port}"]},
            TOXIPROXY: _toxiproxy(image, config_file, at, listen_port, tp_nets, app),
        },
    }  # fmt: skip
    if not app.redis_env:
        override["networks"] = {STORE: {}}
    if model is not None:
        _add_model(override, app, at, model, nets)
    return Plan(override, f"0.0.0.0:{listen_port}", upstream, route, auth, db, secret_value)


def _toxiproxy(
    image: str, config_file: str, at: Published, listen_port: int, nets: dict[str, Any], app: AppCompose
) -> dict[str, Any]:
    return {
        "image": image,
        # The official image's entrypoint is /toxiproxy; a command repeats -host=0.0.0.0.
        "command": ["-host=0.0.0.0", "-config=/config/toxiproxy.json"],
        "volumes": [f"{config_file}:/config/toxiproxy.json:ro"],
        "ports": [f"127.0.0.1:{at.toxiproxy}:{API_PORT}"]
        + ([f"127.0.0.1:{at.redis_proxy}:{listen_port}"] if at.redis_proxy else []),
        "networks": nets,
        "healthcheck": {"test": ["CMD", "/toxiproxy-cli", "list"], "interval": "1s", "timeout": "3s", "retries": 30},
        "depends_on": {app.redis_service: {"condition": "service_started"}},
    }


def _add_model(override: dict[str, Any], app: AppCompose, at: Published, model: ModelService, nets: list[str]) -> None:
    """The stand-in as a service on the backend's networks, Toxiproxy's "model" proxy published
    beside its API, the backend's variables pointing at that proxy (set last: a provider's
    address in the app's file cannot send its calls past the stand-in)."""
    services = override["services"]
    health = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{MODEL_PORT}/_lab/health', timeout=2)"
    services[MODEL] = {
        "image": model.image,
        "entrypoint": ["python3", "-m", "lab.standin", "--host", "0.0.0.0", "--port", str(MODEL_PORT)],
        "environment": {"PYTHONPATH": MODEL_SRC, "PYTHONDONTWRITEBYTECODE": "1"},
        "volumes": [f"{model.lab_dir}:{MODEL_SRC}/lab:ro"],
        "ports": [f"127.0.0.1:{at.model}:{MODEL_PORT}"],
        "networks": {n: None for n in nets},
        "healthcheck": {"test": ["CMD", "python3", "-c", health], "interval": "1s", "timeout": "3s", "retries": 30},
    }
    services[TOXIPROXY]["ports"].append(f"127.0.0.1:{at.model_proxy}:{MODEL_LISTEN}")
    backend = services[app.service]
    backend["environment"] = {
        **backend.get("environment", {}),
        **{k: v.replace("{model_url}", MODEL_URL) for k, v in model.env.items()},
    }
    backend["depends_on"][MODEL] = {"condition": "service_healthy"}


def _services(resolved: dict[str, Any], app: AppCompose) -> dict[str, Any]:
    services = resolved.get("services") or {}
    for what, name in (("start.service", app.service), ("start.redis_service", app.redis_service)):
        if name not in services:
            raise UsageError(
                f"{what} = {name!r}: no such service in {app.file}", f"services there: {', '.join(sorted(services))}"
            )
    return dict(services)


def url_login(value: str) -> tuple[str, int]:
    """A redis:// URL's userinfo ("user:password", ":password"; "" without) and db (its path,
    or a ``db`` query parameter; 0 by default). A bare "host:port" has neither."""
    if "://" not in value:
        return "", 0
    u = urlsplit(value)
    auth = u.netloc.rpartition("@")[0] if "@" in u.netloc else ""
    db = u.path.strip("/") or dict(parse_qsl(u.query)).get("db", "0")
    if not db.isdigit():
        raise UsageError(f"the Redis URL's db {db!r} is not a number", "e.g. redis://:password@redis:6379/2")
    return auth, int(db)


def _env_route(backend: dict[str, Any], app: AppCompose, listen_port: int) -> tuple[str, str]:
    """The variable's value with Toxiproxy's host and port, and the address it named."""
    assert app.redis_env
    value = (backend.get("environment") or {}).get(app.redis_env)
    if not value:
        raise UsageError(
            f"start.redis_env = {app.redis_env!r}: the service {app.service!r} has no such variable in {app.file}",
            f"set it there, or name the host it dials instead: redis_host = {app.redis_service!r}",
        )
    if "://" in value:
        u = urlsplit(value)
        if not u.hostname:
            raise UsageError(f"{app.redis_env}={value!r} names no host", "e.g. redis://redis:6379/0")
        auth = u.netloc.rpartition("@")[0]
        netloc = (auth + "@" if auth else "") + f"{TOXIPROXY}:{listen_port}"
        return urlunsplit(u._replace(netloc=netloc)), f"{u.hostname}:{u.port or 6379}"
    host, _, port = value.partition(":")  # "redis:6379" or "redis"
    return f"{TOXIPROXY}:{listen_port}", f"{host}:{port or 6379}"


def _check_movable(raw: dict[str, Any], app: AppCompose) -> None:
    """The takeover moves Redis off its networks by naming others; an override can only add to
    a ``networks`` list the app's file already has (docker-compose 1.29 has no ``!reset``)."""
    svc = (raw.get("services") or {}).get(app.redis_service) or {}
    if "networks" in svc or "network_mode" in svc:
        raise UsageError(
            f"start.redis_host: the service {app.redis_service!r} names its networks in {app.file}, and an "
            "override cannot take a service off a network",
            'route by the variable the backend reads instead: redis_env = "REDIS_URL" (its name in your file)',
        )


def published_ports(resolved: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(service, host ip, host port) the app's own file publishes: they must be free."""
    out = []
    for name, svc in (resolved.get("services") or {}).items():
        for p in svc.get("ports") or []:
            if isinstance(p, dict):
                ip, pub = p.get("host_ip", "0.0.0.0"), p.get("published")
            else:
                parts = str(p).split("/")[0].split(":")
                ip, pub = (
                    (parts[0], parts[1]) if len(parts) == 3 else ("0.0.0.0", parts[0] if len(parts) == 2 else None)
                )
            if pub and str(pub).isdigit():
                out.append((name, ip or "0.0.0.0", int(pub)))
    return out
