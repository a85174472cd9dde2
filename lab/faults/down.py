"""down: the proxy stops listening and drops its connections (Toxiproxy: enabled = false)."""

from __future__ import annotations

import socket
from dataclasses import dataclass

from lab.faults.base import Fault, FaultNotConfirmed, Targets, register


@register("down")
@dataclass
class Down(Fault):
    summary = "disable a proxy: connections refused, open ones closed"
    window = "send"  # for one send: the rest of the trial must be able to succeed
    proxy: str = "redis"

    def apply(self, t: Targets) -> None:
        t.toxiproxy.set_enabled(self.proxy, False)

    def remove(self, t: Targets) -> None:
        t.toxiproxy.set_enabled(self.proxy, True)

    def confirm(self, t: Targets) -> str:
        listed = t.toxiproxy.proxies().get(self.proxy, {})
        if listed.get("enabled") is not False:
            raise FaultNotConfirmed(f"proxy {self.proxy} still enabled: {listed}")
        host, port = str(listed["listen"]).rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=2).close()
        except OSError as exc:
            return f"proxy {self.proxy} disabled; connect to {host}:{port} -> {type(exc).__name__}"
        raise FaultNotConfirmed(f"proxy {self.proxy} disabled but {host}:{port} still accepts")
