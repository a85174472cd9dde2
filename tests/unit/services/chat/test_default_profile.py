"""CHAT_DEFECTS: the service's default profile when a request carries no X-Lab-Defects header
(how `lab investigate` switches a defect on in a black box); the header still wins in lab mode."""

from __future__ import annotations

import pytest
from flask import request

from services.chat import create_app, profile


def _defects(config: dict[str, object], headers: dict[str, str] | None = None) -> frozenset[str]:
    app = create_app(config)
    with app.test_request_context("/history", headers=headers or {}):
        return profile.from_request(request, app.config).defects


def test_default_is_the_correct_profile() -> None:
    assert _defects({}) == frozenset()


def test_configured_default_applies_without_lab_mode() -> None:
    assert _defects({"DEFECTS": "ttl_set_once, session_cookie"}) == {"ttl_set_once", "session_cookie"}


def test_header_still_wins_in_lab_mode() -> None:
    got = _defects({"DEFECTS": "ttl_set_once", "LAB_MODE": True}, {"X-Lab-Defects": "blind_retry"})
    assert got == {"blind_retry"}
    assert _defects({"DEFECTS": "ttl_set_once", "LAB_MODE": True}, {"X-Lab-Defects": ""}) == frozenset()


def test_unknown_default_refuses_to_start() -> None:
    with pytest.raises(SystemExit, match="CHAT_DEFECTS='nope': unknown defect"):
        create_app({"DEFECTS": "nope"})


def test_incident_is_every_defect() -> None:
    from services.chat import defects

    assert _defects({"DEFECTS": "incident"}) == frozenset(defects.REGISTRY)
    assert len(defects.REGISTRY) == 8
