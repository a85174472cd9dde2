"""The backend a stack runs: how it is started (one gunicorn command for the lab and the tests),
and which code it serves (a stack is reused only if it runs this checkout)."""

from __future__ import annotations

import hashlib
import sys

from lab.common.config import ROOT

# The backend's server is pinned in one file for both modes (see its docstring).
GUNICORN_CONF = ROOT / "services" / "chat" / "gunicorn.conf.py"


def backend_command(bind: str) -> list[str]:
    """The chat backend as a server process on ``bind`` (host:port), with this Python."""
    return [sys.executable, "-m", "gunicorn", "--config", str(GUNICORN_CONF), "--bind", bind, "services.chat.wsgi:app"]


def code_fingerprint() -> str:
    """A hash of the backend's code and server config: a running stack is reused only if its
    backend runs what this checkout holds."""
    h = hashlib.sha256()
    chat = GUNICORN_CONF.parent
    for f in sorted([*chat.rglob("*.py"), *chat.glob("static/*")]):
        h.update(f.relative_to(chat).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]
