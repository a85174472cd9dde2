"""ack_lost: one response from the backend is cut after the backend applied the request.

A reset_peer toxic downstream on the "chat" proxy (browser -> backend) for one send: the
backend finishes the request, its response is dropped, the browser sees a failed request.
Chromium re-sends a POST when a reused keep-alive socket dies before the response headers, so
the backend may see the same message id twice: idempotent appends must absorb that. The page's
``requestfailed`` event is the driver's confirmation that the cut reached the browser.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.faults.base import ToxicFault, register


@register("ack_lost")
@dataclass
class AckLost(ToxicFault):
    summary = "cut one response after the backend applied it (one send)"
    window = "send"
    toxic_type = "reset_peer"
    proxy: str = "chat"

    def attributes(self) -> dict[str, int]:
        return {"timeout": 0}
