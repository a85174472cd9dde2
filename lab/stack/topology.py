"""toxiproxy.json is the one list of proxies; native mode renders a loopback copy of it.

The file is written in compose form (service host names, ``[::]:P`` listens). Native mode
substitutes ``127.0.0.1`` and the lab's ports, so nobody edits /etc/hosts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from lab.common.config import LabConfig, parse_port
from lab.common.errors import UsageError
from lab.common.files import write_atomic

REQUIRED_PROXIES = ("redis", "chat")
# Which configured port a proxy listens on natively, and where each compose service runs natively.
PROXY_PORT_KEY = {"redis": "redis_proxy", "chat": "chat_proxy"}
SERVICE_PORT_KEY = {"redis": "redis", "chat": "backend"}
_ADDR = re.compile(r"^(?P<host>\[[0-9a-fA-F:]*\]|[A-Za-z0-9_.-]+):(?P<port>\d+)$")


@dataclass(frozen=True)
class Proxy:
    name: str
    listen: str
    upstream: str
    enabled: bool = True

    @property
    def listen_port(self) -> int:
        return int(split_addr(self.listen)[1])

    @property
    def upstream_host(self) -> str:
        return split_addr(self.upstream)[0]

    @property
    def upstream_port(self) -> int:
        return int(split_addr(self.upstream)[1])

    def as_json(self) -> dict[str, object]:
        return {"name": self.name, "listen": self.listen, "upstream": self.upstream, "enabled": self.enabled}


def split_addr(addr: str) -> tuple[str, str]:
    m = _ADDR.match(addr)
    if not m:
        raise ValueError(addr)
    return m["host"], m["port"]


def load(path: Path) -> list[Proxy]:
    """Read and validate toxiproxy.json; every problem names the file and the fix."""
    where = str(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(
            f"{where} is missing", "restore it from git (git checkout -- toxiproxy.json) or set LAB_TOPOLOGY"
        ) from None
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
            "fix the file; it is a JSON array of {name, listen, upstream, enabled}",
        ) from None
    if not isinstance(raw, list):
        raise UsageError(
            f"{where} must be a JSON array of proxies, got {type(raw).__name__}",
            'e.g. [{"name": "redis", "listen": "[::]:16380", "upstream": "redis:6379"}]',
        )
    proxies: list[Proxy] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise UsageError(f"{where}: entry {i} is not an object")
        missing = [k for k in ("name", "listen", "upstream") if not isinstance(item.get(k), str)]
        if missing:
            raise UsageError(
                f"{where}: entry {i} lacks string field(s) {', '.join(missing)}",
                "each proxy needs name, listen and upstream",
            )
        for key in ("listen", "upstream"):
            try:
                _, port = split_addr(item[key])
                parse_port(port, f"{where}: {item['name']}.{key}") if key == "listen" else int(port)
            except ValueError:
                raise UsageError(
                    f"{where}: {item['name']}.{key}={item[key]!r} is not host:port",
                    'write e.g. "[::]:16380" or "redis:6379"',
                ) from None
        enabled = item.get("enabled", True)
        if not isinstance(enabled, bool):
            raise UsageError(f"{where}: {item['name']}.enabled must be true or false")
        proxies.append(Proxy(item["name"], item["listen"], item["upstream"], enabled))
    names = [p.name for p in proxies]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise UsageError(f"{where}: duplicate proxy name(s) {', '.join(dupes)}")
    absent = [n for n in REQUIRED_PROXIES if n not in names]
    if absent:
        raise UsageError(
            f"{where}: missing proxy {', '.join(absent)}", f"the lab needs proxies named {', '.join(REQUIRED_PROXIES)}"
        )
    return proxies


def render_native(proxies: list[Proxy], cfg: LabConfig) -> list[Proxy]:
    """The same proxies on loopback: listen and upstream ports from the lab's configuration."""
    out = []
    for p in proxies:
        listen_port = cfg.ports[PROXY_PORT_KEY[p.name]] if p.name in PROXY_PORT_KEY else p.listen_port
        if p.upstream_host not in SERVICE_PORT_KEY:
            raise UsageError(
                f"proxy {p.name!r} points at service {p.upstream_host!r}, which native mode does not run",
                f"native mode runs: {', '.join(SERVICE_PORT_KEY)}",
            )
        up_port = cfg.ports[SERVICE_PORT_KEY[p.upstream_host]]
        out.append(Proxy(p.name, f"{cfg.host}:{listen_port}", f"{cfg.host}:{up_port}", p.enabled))
    return out


def write(proxies: list[Proxy], path: Path) -> None:
    # Atomically: toxiproxy-server (or its container) reads it at start.
    write_atomic(path, json.dumps([p.as_json() for p in proxies], indent=2) + "\n")
