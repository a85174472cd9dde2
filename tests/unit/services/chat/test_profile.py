"""Lab headers outside lab mode, through Flask's test client. No Redis is needed: the request is
refused before the store is touched (a 403 never reaches Redis)."""

import pytest

from services.chat import create_app


@pytest.mark.parametrize("header", ["X-Lab-Defects", "X-Lab-Ttl-Ms", "X-Lab-Trial"])
def test_lab_headers_refused_outside_lab_mode(header: str) -> None:
    client = create_app({"LAB_MODE": False, "REDIS_URL": "redis://127.0.0.1:1/0"}).test_client()
    resp = client.post("/chat", json={"message": "hi"}, headers={header: "1"})
    assert resp.status_code == 403
    assert resp.get_json()["error"] == "lab_mode_off" and header in resp.get_json()["message"]


def test_healthz_reports_lab_mode() -> None:
    client = create_app({"LAB_MODE": True}).test_client()
    assert client.get("/healthz").get_json() == {"status": "ok", "lab_mode": True}
