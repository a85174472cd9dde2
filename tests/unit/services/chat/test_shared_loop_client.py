"""shared_loop_client's "global" client: one per lab trial in lab mode (a wedge stays in its
trial), one per process otherwise (as in the incident). No connection is made: redis.asyncio
connects lazily."""

from __future__ import annotations

from flask import Flask

from services.chat.defects import shared_loop_client as slc

URL = "redis://127.0.0.1:1/0"


def _client(app: Flask, trial: str | None):  # type: ignore[no-untyped-def]
    headers = {"X-Lab-Trial": trial} if trial else {}
    with app.test_request_context(headers=headers):
        return slc.shared_client(URL, None)[0]


def test_one_client_per_trial_in_lab_mode_and_one_per_process_otherwise() -> None:
    lab = Flask("lab")
    lab.config["LAB_MODE"] = True
    a1, a2, b = _client(lab, "c000-001"), _client(lab, "c000-001"), _client(lab, "c000-002")
    assert a1 is a2 and a1 is not b  # shared across the trial's requests, not across trials
    plain = Flask("plain")
    assert _client(plain, "c000-001") is _client(plain, "other") is _client(plain, None)


def test_older_trials_clients_are_dropped() -> None:
    lab = Flask("lab")
    lab.config["LAB_MODE"] = True
    first = _client(lab, "t-first")
    for i in range(slc.KEEP_TRIALS):
        _client(lab, f"t-{i}")
    assert len(slc._clients) <= slc.KEEP_TRIALS
    assert _client(lab, "t-first") is not first
