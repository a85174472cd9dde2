"""Where the lab lives and which ports it uses: one place, every value overridable by env."""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lab.common.errors import UsageError

# Where `lab` and `services` import from: this project's checkout, or site-packages for an
# installed wheel -- read-only either way (nothing the lab runs writes here).
ROOT = Path(__file__).resolve().parents[2]  # lab/common/config.py -> the checkout or site-packages
# The checkout, when the lab runs from one (`make`, `pip install -e .`); None for an installed
# wheel. Only the checkout's own tools (lessons, bench, the built-in service's images) need it.
CHECKOUT: Path | None = ROOT if (ROOT / "pyproject.toml").is_file() and (ROOT / "lab").is_dir() else None
TOPOLOGY = Path(__file__).resolve().parents[1] / "stack" / "toxiproxy.json"  # package data (-> toxiproxy.json)


def home(env: dict[str, str] | None = None) -> Path:
    """Where the lab keeps the state of its runs (run folders, a private Docker engine's data):
    LAB_HOME, else ``.lab`` in the working directory -- as ``reports/`` is, and never inside
    the installed package."""
    given = (os.environ if env is None else env).get("LAB_HOME")
    return Path(given or Path.cwd() / ".lab").resolve()


def script(name: str = "lab") -> str:
    """How a printed command (a replay line) runs one of the virtualenv's scripts: the one beside
    this Python, relative to the working directory where it lies inside it (``.venv/bin/lab`` in
    the checkout), else by its full path -- a user's venv may be anywhere."""
    exe = Path(sys.executable).parent / name  # not resolved: the venv's bin, not the base Python's
    try:
        return str(exe.relative_to(Path.cwd()))
    except ValueError:
        return str(exe)


def checkout(command: str) -> Path:
    """The checkout, for the commands that read more of it than the package carries."""
    if CHECKOUT is None:
        raise UsageError(
            f"`{command}` runs from a checkout of the lab (it reads the checkout's lessons and tests)",
            "clone the lab's repository and run it there (make setup, then .venv/bin/lab ...)",
        )
    return CHECKOUT


def default_bin_dir() -> Path:
    """Where the programs the lab builds itself go (Toxiproxy, `lab setup`): the checkout's
    ``.lab/bin`` (where `make setup` puts them), else the user's cache, shared by every project."""
    return CHECKOUT / ".lab" / "bin" if CHECKOUT is not None else cache_dir() / "bin"


def cache_dir() -> Path:
    """Content-keyed artifacts shared by every checkout on this machine (the offline images):
    a fresh clone reuses what an earlier one built. LAB_CACHE_DIR overrides."""
    if os.environ.get("LAB_CACHE_DIR"):
        return Path(os.environ["LAB_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "chaoslab"


# Ports Chromium refuses with ERR_UNSAFE_PORT (net/base/port_util.cc, those >= 1024): a browser
# must be able to reach the chat proxy, and the others are kept off the list for uniformity.
CHROMIUM_UNSAFE_PORTS = frozenset(
    {1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080}
)

# Lab ports avoid the services' defaults (a system Redis may hold 6379, Toxiproxy 8474).
DEFAULT_PORTS: dict[str, int] = {
    "redis": 16379,  # real redis-server (read directly only by the lab's checker)
    "redis_proxy": 16380,  # Toxiproxy "redis" proxy: the only Redis address the backend gets
    "backend": 18081,  # chat backend, direct (the lab's own health checks)
    "chat_proxy": 18080,  # Toxiproxy "chat" proxy: the only address the browser uses
    "toxiproxy": 18474,  # Toxiproxy HTTP API
    "model": 18410,  # the stand-in model, direct (the lab reads its record of calls here)
    "model_proxy": 18411,  # Toxiproxy "model" proxy: the only model address an app is given
}
PORT_ENV = {name: f"LAB_{name.upper()}_PORT" for name in DEFAULT_PORTS}
MODES = ("native", "compose", "external")  # external: the services run already (deploy/k8s)


def parse_port(value: str | int, what: str) -> int:
    """Validate one port number, naming the variable in the error."""
    try:
        port = int(value)
    except (TypeError, ValueError):
        raise UsageError(f"{what}={value!r} is not a port number", "use an integer between 1024 and 65535") from None
    if not 1024 <= port <= 65535:
        raise UsageError(f"{what}={port} is out of range", "use a port between 1024 and 65535")
    if port in CHROMIUM_UNSAFE_PORTS:
        raise UsageError(
            f"{what}={port} is a port Chromium refuses (ERR_UNSAFE_PORT)", "pick another port, e.g. one in 16000-19999"
        )
    return port


@dataclass(frozen=True)
class LabConfig:
    """Paths and ports of one native stack."""

    root: Path = ROOT
    run_dir: Path = field(default_factory=lambda: home() / "run" / "native")
    bin_dir: Path = field(default_factory=default_bin_dir)
    topology_file: Path = TOPOLOGY
    ports: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_PORTS))
    host: str = "127.0.0.1"
    # The Redis the lab reads and faults may not be its own: an app's compose file may give its
    # Redis a password (and a user) and the app a db number (lab.stack.compose.override). The
    # userinfo of a redis:// URL ("user:password", ":password"; empty: none) and the db.
    redis_auth: str = ""
    redis_db: int = 0

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: object) -> "LabConfig":
        env = dict(os.environ if env is None else env)
        ports = {
            name: parse_port(env.get(PORT_ENV[name], default), PORT_ENV[name])
            for name, default in DEFAULT_PORTS.items()
        }
        seen: dict[int, str] = {}
        for name, port in ports.items():
            if port in seen:
                raise UsageError(
                    f"{PORT_ENV[name]} and {PORT_ENV[seen[port]]} are both {port}", "give each service its own port"
                )
            seen[port] = name
        values: dict[str, Any] = {"ports": ports}
        if "LAB_RUN_DIR" in env:
            values["run_dir"] = Path(env["LAB_RUN_DIR"]).resolve()
        if "LAB_BIN" in env:
            values["bin_dir"] = Path(env["LAB_BIN"]).resolve()
        if "LAB_TOPOLOGY" in env:
            values["topology_file"] = Path(env["LAB_TOPOLOGY"]).resolve()
        values.update(overrides)
        return cls(**values)

    # Endpoints, all on loopback: cookies ignore ports but not host names, so one host everywhere.
    def url(self, port_name: str) -> str:
        return f"http://{self.host}:{self.ports[port_name]}"

    @property
    def chat_url(self) -> str:
        return self.url("chat_proxy")

    @property
    def backend_url(self) -> str:
        return self.url("backend")

    @property
    def toxiproxy_url(self) -> str:
        return self.url("toxiproxy")

    @property
    def model_url(self) -> str:
        """The stand-in model through Toxiproxy: the address an app's SDK is given."""
        return self.url("model_proxy")

    @property
    def model_direct_url(self) -> str:
        return self.url("model")

    def _redis(self, port_name: str, auth: str) -> str:
        return f"redis://{auth + '@' if auth else ''}{self.host}:{self.ports[port_name]}/{self.redis_db}"

    @property
    def redis_url(self) -> str:
        """Redis itself, bypassing Toxiproxy: where the checker reads the truth."""
        return self._redis("redis", self.redis_auth)

    @property
    def redis_proxy_url(self) -> str:
        """Redis through Toxiproxy: the only Redis address the backend is given."""
        return self._redis("redis_proxy", self.redis_auth)

    def endpoints(self) -> dict[str, str]:
        """For people: a password shows as ``***``."""
        user, has_password, _ = self.redis_auth.partition(":")
        shown = user + ":***" if has_password else user
        return {
            "chat": self.chat_url,
            "backend": self.backend_url,
            "toxiproxy": self.toxiproxy_url,
            "redis": self._redis("redis", shown),
            "redis_proxy": self._redis("redis_proxy", shown),
        }

    @property
    def toxiproxy_server(self) -> Path:
        """The lab's bin folder first (the version it built), else one on PATH."""
        built = self.bin_dir / "toxiproxy-server"
        found = None if built.is_file() else shutil.which("toxiproxy-server")
        return Path(found) if found else built
