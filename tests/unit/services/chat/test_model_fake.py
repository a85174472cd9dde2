"""X-Lab-Model: fake (lab mode): the in-process fake answers the request even where the service
takes its replies from a provider (CHAT_MODEL_URL) -- `lab bench` measures the stand-in against
the fake on one running service. Any other value is a 400 naming the valid one."""

from __future__ import annotations

import asyncio

import pytest
from flask import g, request

from services.chat import create_app, llm, profile, views
from services.chat.errors import ApiError

# A provider nothing listens on: a call to it fails (the fake must not make one).
CONFIG = {"LAB_MODE": True, "MODEL_URL": "http://127.0.0.1:9/v1", "MODEL_TIMEOUT_S": 2}


def test_the_fake_answers_where_the_request_asks_for_it() -> None:
    app = create_app(CONFIG)
    with app.test_request_context("/chat", method="POST", headers={"X-Lab-Model": "fake"}):
        prof = profile.from_request(request, app.config)
        assert prof.model_fake
        got = asyncio.run(views._answer([], "Hi, my name is alice", 0, prof.model_fake))
    assert got == llm.reply([], "Hi, my name is alice")


def test_without_the_header_the_provider_is_asked() -> None:
    app = create_app(CONFIG)
    with app.test_request_context("/chat", method="POST"):
        assert not profile.from_request(request, app.config).model_fake
        g.mid, g.sid = "m1", "s1"  # (the view sets them before it asks)
        with pytest.raises(ApiError) as err:  # the provider is down: 502, not the fake's reply
            asyncio.run(views._answer([], "Hi", 0, False))
    assert err.value.status == 502


def test_another_model_is_refused_naming_the_valid_one() -> None:
    app = create_app(CONFIG)
    with app.test_request_context("/chat", method="POST", headers={"X-Lab-Model": "gpt-4"}):
        with pytest.raises(ApiError) as err:
            profile.from_request(request, app.config)
    assert err.value.status == 400 and "valid: fake" in err.value.message
