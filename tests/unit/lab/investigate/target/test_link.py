"""An external target's own Redis, as the app logs in to it: the proxy's upstream address with the
user, password and db of the URL in [redis] url_env's variable -- read at run time, never written,
redacted from everything the run prints or writes; a missing variable named with what to do."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from lab.common import redact
from lab.common.errors import UsageError
from lab.common.config import LabConfig
from lab.investigate.target.link import app_login, direct_redis


def spec(url_env: str | None, external: bool = True) -> SimpleNamespace:
    return SimpleNamespace(redis=SimpleNamespace(url_env=url_env), start=SimpleNamespace(external=external))


def test_the_login_and_db_come_from_the_apps_url_and_the_address_from_the_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("APP_REDIS_URL", "redis://chat:s3cr%3At@redis.internal:6379/4")
    assert app_login(spec("APP_REDIS_URL")) == ("chat:s3cr%3At", 4)  # type: ignore[arg-type]
    assert "s3cr:t" not in redact.text("password s3cr:t") and "s3cr%3At" not in redact.text("s3cr%3At")
    # The link's config takes the login: its direct URL and its proxy's (the faults' checks) log in.
    link = Link(LabConfig.from_env())
    assert direct_redis(spec("APP_REDIS_URL"), link) == "redis://chat:s3cr%3At@127.0.0.1:6390/4"  # type: ignore[arg-type]
    assert link.cfg.redis_proxy_url.startswith("redis://chat:s3cr%3At@") and link.cfg.redis_proxy_url.endswith("/4")
    assert app_login(spec(None)) is None  # type: ignore[arg-type]


def test_a_variable_that_is_not_set_is_named_with_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("APP_REDIS_URL", raising=False)
    with pytest.raises(UsageError, match="APP_REDIS_URL.*no such variable") as err:
        app_login(spec("APP_REDIS_URL"))  # type: ignore[arg-type]
    assert "export APP_REDIS_URL=redis://" in (err.value.hint or "")


class Link:
    """The proxy's link as direct_redis sees it: a config, and the upstream URL built from it."""

    def __init__(self, cfg: LabConfig) -> None:
        self.cfg = cfg

    @property
    def redis_url(self) -> str:
        auth = self.cfg.redis_auth
        return f"redis://{auth + '@' if auth else ''}127.0.0.1:6390/{self.cfg.redis_db}"


def test_the_lab_reads_the_apps_redis_only_for_an_external_target() -> None:
    link = Link(LabConfig.from_env())
    assert direct_redis(spec(None, external=False), link) == link.cfg.redis_url  # type: ignore[arg-type]
    assert direct_redis(spec(None), link) == "redis://127.0.0.1:6390/0"  # type: ignore[arg-type]


def test_url_env_is_refused_where_the_lab_does_not_read_the_apps_own_redis(tmp_path: Path) -> None:
    from lab.investigate.spec import parse as sp

    text = (Path(__file__).parents[5] / "examples" / "chat-service.toml").read_text()
    bad = tmp_path / "bad.toml"
    bad.write_text(text.replace("[redis]\n", '[redis]\nurl_env = "APP_REDIS_URL"\n'))
    with pytest.raises(UsageError, match="redis.url_env.*external = true"):
        sp.load(bad)
