"""A bounded HTTP GET for readiness checks and lab-mode endpoints (stdlib only)."""

from __future__ import annotations

import urllib.error
import urllib.request


def http_get(url: str, timeout_s: float = 2.0) -> tuple[int, bytes]:
    """(status, body); an HTTP error status is an answer, not an exception."""
    # A plain urllib User-Agent: Toxiproxy answers 403 to anything starting with "Mozilla/".
    req = urllib.request.Request(url, headers={"User-Agent": "chaoslab"})
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
