"""Which images an app's compose file needs, and which builds go out through the host's network
(those FROM a stand-in: the engine without a registry is not the way out)."""

from __future__ import annotations

from pathlib import Path

from lab.stack.compose.substitutes import builds_from, host_ca_bundle, host_network_builds, needed


def config(tmp_path: Path) -> dict:  # type: ignore[type-arg]
    (tmp_path / "api").mkdir(exist_ok=True)
    (tmp_path / "api" / "Dockerfile").write_text(
        "FROM python:3.12-slim AS deps\nRUN pip install -r requirements.txt\n"
        "FROM deps\nCOPY . .\nFROM --platform=$BUILDPLATFORM ${BASE}\n"
    )
    (tmp_path / "web" / "docker").mkdir(parents=True, exist_ok=True)
    (tmp_path / "web" / "docker" / "web.Dockerfile").write_text("FROM node:20-bookworm-slim\nFROM scratch\n")
    return {
        "services": {
            "api": {"build": str(tmp_path / "api")},
            "web": {"build": {"context": str(tmp_path / "web"), "dockerfile": "docker/web.Dockerfile"}},
            "cache": {"image": "redis:7.2-alpine"},
            "jobs": {"build": {"context": str(tmp_path / "nowhere")}, "image": "team/jobs:1"},
        }
    }


def test_each_build_is_from_its_dockerfiles_images_not_its_stages_or_variables(tmp_path: Path) -> None:
    assert builds_from(config(tmp_path)) == {"api": ["python:3.12-slim"], "web": ["node:20-bookworm-slim"], "jobs": []}
    # A service that builds is not pulled by its image: name (compose tags the build with it).
    assert needed(config(tmp_path)) == ["node:20-bookworm-slim", "python:3.12-slim", "redis:7.2-alpine"]


def test_only_builds_from_a_stand_in_use_the_hosts_network(tmp_path: Path) -> None:
    cfg = config(tmp_path)
    assert host_network_builds(cfg, ["python:3.12-slim", "redis:7.2-alpine"]) == {"api": {"build": {"network": "host"}}}
    assert host_network_builds(cfg, []) == {}  # a registry answered: the app's builds as its file says


def test_the_stand_ins_trust_what_this_host_trusts() -> None:
    bundle = host_ca_bundle()
    assert b"BEGIN CERTIFICATE" in bundle  # this machine's OpenSSL names a bundle (SSL_CERT_FILE or its default)
