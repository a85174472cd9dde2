"""One JSON error shape for every failure: {"error": code, "message": text}, never HTML."""

from __future__ import annotations

import logging

from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

log = logging.getLogger("chat")


class ApiError(Exception):
    """An error the API answers with a given status and a machine-readable code."""

    def __init__(self, status: int, code: str, message: str, **extra: object) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.extra = status, code, message, extra


def _body(status: int, code: str, message: str, **extra: object) -> tuple[Response, int]:
    return jsonify({"error": code, "message": message, **extra}), status


def init_app(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def _api(e: ApiError) -> tuple[Response, int]:
        return _body(e.status, e.code, e.message, **e.extra)

    @app.errorhandler(HTTPException)
    def _http(e: HTTPException) -> tuple[Response, int]:
        code = (e.name or "error").lower().replace(" ", "_")
        return _body(e.code or 500, code, e.description or code)

    @app.errorhandler(Exception)
    def _unexpected(e: Exception) -> tuple[Response, int]:
        # Still JSON (a 500 HTML page would read as "the page broke", not "not saved").
        log.exception("unhandled error")
        return _body(500, "internal_error", f"{type(e).__name__}: {e}")
