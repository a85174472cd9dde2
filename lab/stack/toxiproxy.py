"""Toxiproxy through toxiproxy-python (the client the project names), made safe to use.

toxiproxy-python 0.1.1 has no HTTP timeouts, keeps host/port as process-global class
attributes, maps only 400/404/409 (a 500 surfaces as ``KeyError: 'name'``), returns None from
``add_toxic`` and cannot PATCH. This wrapper:
- binds host/port per call under a lock (so two servers can be used from one process);
- gives every HTTP call a timeout and turns every error status into a ToxiproxyError;
- refuses toxic values that crash the server before sending them;
- reads back what it created (``add_toxic`` returns nothing) so callers can confirm it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import requests
from toxiproxy import api as _tp_api
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists
from toxiproxy.server import Toxiproxy as _TpServer

from lab.common.errors import LabError, UsageError

STREAMS = ("upstream", "downstream")
TOXIC_TYPES = ("latency", "bandwidth", "slow_close", "timeout", "reset_peer", "slicer", "limit_data")


class ToxiproxyError(LabError):
    """The Toxiproxy server refused, failed or did not answer."""


class _BoundedRequests:
    """Stands in for ``requests`` inside toxiproxy.api: adds a timeout and a User-Agent (a
    ``Mozilla/`` one gets 403), and raises on statuses the library does not map."""

    timeout_s = 5.0

    def _call(self, method: str, url: str, **kw: Any) -> requests.Response:
        kw.setdefault("timeout", self.timeout_s)
        kw.setdefault("headers", {})["User-Agent"] = "chaoslab"
        try:
            resp = requests.request(method, url, **kw)
        except requests.Timeout:
            raise ToxiproxyError(
                f"toxiproxy did not answer {method} {url} within {self.timeout_s:g} s",
                "is it overloaded? a toxic removal under heavy traffic can hang (toxiproxy #412)",
            ) from None
        except requests.ConnectionError as exc:
            raise ToxiproxyError(
                f"cannot reach toxiproxy at {url}: {exc.__class__.__name__}", "is the stack up? (lab status)"
            ) from None
        if resp.status_code >= 500 or resp.status_code in (401, 403, 405):
            raise ToxiproxyError(f"toxiproxy answered {resp.status_code} to {method} {url}: {resp.text.strip()[:300]}")
        return resp

    def get(self, url: str, **kw: Any) -> requests.Response:
        return self._call("GET", url, **kw)

    def post(self, url: str, **kw: Any) -> requests.Response:
        return self._call("POST", url, **kw)

    def delete(self, url: str, **kw: Any) -> requests.Response:
        return self._call("DELETE", url, **kw)


# toxiproxy.api calls requests.get/post/delete with no timeout; give it our bounded stand-in.
_tp_api.requests = _BoundedRequests()
_LOCK = threading.RLock()  # host/port are class attributes of toxiproxy.api.APIConsumer


def check_toxic(toxic_type: str, stream: str, attributes: dict[str, Any], toxicity: float) -> None:
    """Refuse values the server rejects badly or crashes on, naming the valid ones."""
    if toxic_type not in TOXIC_TYPES:
        raise UsageError(f"unknown toxic type {toxic_type!r}", f"valid: {', '.join(TOXIC_TYPES)}")
    if stream not in STREAMS:
        raise UsageError(f"stream={stream!r} is not valid", f"valid: {', '.join(STREAMS)}")
    if not 0.0 <= toxicity <= 1.0:
        raise UsageError(f"toxicity={toxicity} is out of range", "use a value in [0, 1]")
    for key, value in attributes.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise UsageError(f"{toxic_type}.{key}={value!r} must be a non-negative integer")
    if toxic_type == "bandwidth" and "rate" not in attributes:
        raise UsageError("bandwidth needs rate (KB/s); rate 0 holds all data")
    if toxic_type == "slicer" and not attributes.get("average_size") and not attributes.get("size_variation"):
        # average_size 0 with size_variation 0 makes toxiproxy-server 2.12 crash.
        raise UsageError(
            "slicer with average_size=0 and size_variation=0 crashes toxiproxy", "give average_size >= 1 (bytes)"
        )


class Toxiproxy:
    """One Toxiproxy server, e.g. ``Toxiproxy("http://127.0.0.1:18474")``."""

    def __init__(self, url: str, timeout_s: float = 5.0) -> None:
        parts = urlsplit(url)
        if not parts.hostname or not parts.port:
            raise UsageError(f"toxiproxy URL {url!r} needs a host and a port", "e.g. http://127.0.0.1:18474")
        self.url, self.host, self.port, self.timeout_s = url, parts.hostname, parts.port, timeout_s

    @contextmanager
    def _bound(self) -> Iterator[None]:
        with _LOCK:
            api = _tp_api.APIConsumer
            old = (api.host, api.port, _BoundedRequests.timeout_s)
            api.host, api.port, _BoundedRequests.timeout_s = self.host, self.port, self.timeout_s
            try:
                yield
            except ProxyExists as exc:
                raise ToxiproxyError(f"toxiproxy: already exists: {_text(exc)}") from None
            except NotFound as exc:
                raise ToxiproxyError(f"toxiproxy: not found: {_text(exc)}") from None
            except InvalidToxic as exc:
                raise ToxiproxyError(f"toxiproxy refused the request: {_text(exc)}") from None
            finally:
                api.host, api.port, _BoundedRequests.timeout_s = old

    # ---- reads
    def version(self) -> str:
        with self._bound():
            raw = _TpServer().version()
        # 2.12 answers {"version": "2.12.0"}; older servers answered the bare string.
        text = (raw or b"").decode(errors="replace").strip()
        return str(json.loads(text)["version"]) if text.startswith("{") else text

    def proxies(self) -> dict[str, dict[str, Any]]:
        with self._bound():
            return dict(_tp_api.APIConsumer.get("/proxies").json())

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        with self._bound():
            return list(_tp_api.APIConsumer.get(f"/proxies/{proxy}/toxics").json())

    def snapshot(self) -> dict[str, Any]:
        """Every proxy's enabled flag and toxics: the evidence a trial keeps of its fault."""
        return {n: {"enabled": p["enabled"], "toxics": p["toxics"]} for n, p in self.proxies().items()}

    def toxic(self, proxy: str, name: str) -> dict[str, Any] | None:
        return next((t for t in self.toxics(proxy) if t["name"] == name), None)

    # ---- changes
    def add_toxic(
        self,
        proxy: str,
        name: str,
        toxic_type: str,
        stream: str = "downstream",
        attributes: dict[str, Any] | None = None,
        toxicity: float = 1.0,
    ) -> dict[str, Any]:
        """Add a toxic and return it as the server lists it (proof it is in place)."""
        attributes = dict(attributes or {})
        check_toxic(toxic_type, stream, attributes, toxicity)
        with self._bound():
            p = _TpServer().get_proxy(proxy)
            if p is None:
                raise ToxiproxyError(f"toxiproxy has no proxy {proxy!r}")
            p.add_toxic(name=name, type=toxic_type, stream=stream, toxicity=toxicity, attributes=attributes)
        created = self.toxic(proxy, name)
        if created is None:
            raise ToxiproxyError(f"toxic {name!r} is not listed on proxy {proxy!r} after adding it")
        return created

    def update_toxic(self, proxy: str, name: str, toxicity: float) -> None:
        """A toxic's toxicity changed in place (its attributes kept): every link re-draws it."""
        check_toxic("latency", "downstream", {}, toxicity)  # the range check
        with self._bound():
            _tp_api.APIConsumer.post(f"/proxies/{proxy}/toxics/{name}", json={"toxicity": toxicity})

    def create_proxy(self, name: str, listen: str, upstream: str) -> dict[str, Any]:
        """Add a proxy at run time (the stand-in model's link) and return it as listed."""
        with self._bound():
            _tp_api.APIConsumer.post("/proxies", json={"name": name, "listen": listen, "upstream": upstream})
        made = self.proxies().get(name)
        if made is None or made.get("listen") != listen or made.get("upstream") != upstream:
            raise ToxiproxyError(f"toxiproxy did not create proxy {name} ({listen} -> {upstream}): lists {made}")
        return made

    def delete_proxy(self, name: str) -> None:
        with self._bound():
            _tp_api.APIConsumer.delete(f"/proxies/{name}")

    def remove_toxic(self, proxy: str, name: str) -> None:
        with self._bound():
            _tp_api.APIConsumer.delete(f"/proxies/{proxy}/toxics/{name}")

    def set_enabled(self, proxy: str, enabled: bool) -> None:
        # Proxy.disable()/enable() POST {"enabled": ...}, which 2.12 treats as an update: fine.
        with self._bound():
            p = _TpServer().get_proxy(proxy)
            if p is None:
                raise ToxiproxyError(f"toxiproxy has no proxy {proxy!r}")
            p.enable() if enabled else p.disable()

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        with self._bound():
            _TpServer().reset()


def _text(exc: Exception) -> str:
    arg = exc.args[0] if exc.args else b""
    return (arg.decode(errors="replace") if isinstance(arg, bytes) else str(arg)).strip()
