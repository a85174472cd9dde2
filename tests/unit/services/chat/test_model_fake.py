"""X-Lab-Model: fake (lab mode): the in-process fake answers the request even where the service
takes its replies from a provider (CHAT_MODEL_URL) -- `lab bench` measures the stand-in against
the fake on one running service. Any other value is a 400 naming the valid one."""

from __future__ import annotations

from typing import Any

import pytest
from flask import g, request

from services.chat import create_app, llm, profile, views
from services.chat.errors import ApiError
from tests.helpers import run_async

# A provider nothing listens on: a call to it fails (the fake must not make one).
CONFIG = {"LAB_MODE": True, "MODEL_URL": "http://127.0.0.1:9/v1", "MODEL_TIMEOUT_S": 2}


def _answer(headers: dict[str, str], message: str) -> tuple[bool, Any]:
    """(the request's model_fake, the view's answer or the ApiError it raised), in a request
    of the app -- run in a thread of its own (a browser test before may hold this one's loop)."""
    app = create_app(CONFIG)

    async def main() -> tuple[bool, Any]:
        with app.test_request_context("/chat", method="POST", headers=headers):
            prof = profile.from_request(request, app.config)
            g.mid, g.sid = "m1", "s1"  # (the view sets them before it asks)
            try:
                return prof.model_fake, await views._answer([], message, 0, prof.model_fake)
            except ApiError as exc:
                return prof.model_fake, exc

    return run_async(main())


def test_the_fake_answers_where_the_request_asks_for_it() -> None:
    fake, got = _answer({"X-Lab-Model": "fake"}, "Hi, my name is alice")
    assert fake and got == llm.reply([], "Hi, my name is alice")


def test_without_the_header_the_provider_is_asked() -> None:
    fake, got = _answer({}, "Hi")
    assert not fake and isinstance(got, ApiError) and got.status == 502  # the provider is down: not the fake's reply


def test_another_model_is_refused_naming_the_valid_one() -> None:
    app = create_app(CONFIG)
    with app.test_request_context("/chat", method="POST", headers={"X-Lab-Model": "gpt-4"}):
        with pytest.raises(ApiError) as err:
            profile.from_request(request, app.config)
    assert err.value.status == 400 and "valid: fake" in err.value.message
