"""The chat backend: Flask async views over redis.asyncio, with switchable incident defects."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask

from services.chat import config, errors, exercise, views


def create_app(test_config: Mapping[str, Any] | None = None) -> Flask:
    """App factory: defaults, then CHAT_* environment variables, then ``test_config``."""
    app = Flask(__name__, static_folder="static", static_url_path="/static")
    app.config.from_mapping(config.DEFAULTS)
    app.config.from_prefixed_env("CHAT")  # CHAT_REDIS_URL, CHAT_LAB_MODE=1, CHAT_TTL_MS, ...
    if test_config:
        app.config.from_mapping(test_config)
    app.config["LAB_MODE"] = app.config["LAB_MODE"] in (True, 1, "1", "true", "yes")
    _check_defects(app.config["DEFECTS"])
    errors.init_app(app)
    exercise.init_app(app)
    app.register_blueprint(views.bp)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    return app


def _check_defects(value: object) -> None:
    """CHAT_DEFECTS must name known defects: refuse to start rather than run an unknown profile."""
    from services.chat import defects, profile

    unknown = sorted(profile.parse_defects(str(value or "")) - defects.REGISTRY.keys())
    if unknown:
        raise SystemExit(
            f"CHAT_DEFECTS={value!r}: unknown defect(s) {', '.join(unknown)}; "
            f"valid: incident (all of them), {', '.join(defects.REGISTRY)}"
        )
