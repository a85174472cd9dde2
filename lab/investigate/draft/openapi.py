"""`lab init` from an OpenAPI document (FastAPI serves one at /openapi.json): the login, the
conversation's create call, the chat and history routes, read from the paths and their schemas.
Pure: the probe confirms each guess with a real send and read afterwards."""

from __future__ import annotations

import re
from typing import Any

from lab.investigate.draft.infer import REPLY_NAMES, Draft

MESSAGE_FIELDS = ("message", "content", "text", "prompt", "input", "query", "question")
_PARAM = re.compile(r"\{[^}/]+\}")


class Doc:
    def __init__(self, doc: dict[str, Any]) -> None:
        self.paths: dict[str, dict[str, Any]] = doc.get("paths") or {}
        self.schemas: dict[str, Any] = (doc.get("components") or {}).get("schemas") or {}
        self.bearer = any(
            s.get("type") == "http" and str(s.get("scheme", "")).lower() == "bearer"
            for s in ((doc.get("components") or {}).get("securitySchemes") or {}).values()
        )

    def resolve(self, s: Any) -> dict[str, Any]:
        for _ in range(8):  # $ref chains, bounded
            if isinstance(s, dict) and "$ref" in s:
                s = self.schemas.get(str(s["$ref"]).rsplit("/", 1)[-1], {})
            elif isinstance(s, dict) and s.get("anyOf"):
                s = next((x for x in s["anyOf"] if x.get("type") != "null"), {})
            else:
                break
        return s if isinstance(s, dict) else {}

    def body(self, op: dict[str, Any]) -> dict[str, Any]:
        content = ((op.get("requestBody") or {}).get("content") or {}).get("application/json") or {}
        return self.resolve(content.get("schema"))

    def answer(self, op: dict[str, Any]) -> dict[str, Any]:
        for code, resp in (op.get("responses") or {}).items():
            if str(code).startswith("2"):
                content = ((resp or {}).get("content") or {}).get("application/json") or {}
                return self.resolve(content.get("schema"))
        return {}

    def ops(self, method: str) -> list[tuple[str, dict[str, Any]]]:
        return [(p, o[method]) for p, o in self.paths.items() if isinstance(o, dict) and method in o]


# A route named so may take a message or serve the history (a POST elsewhere may do anything).
_CHATTY = re.compile(r"chat|messag|send|ask|complet|conversation|prompt|turn|repl|history|thread", re.I)


def listed(doc: dict[str, Any], create: str | None = None) -> tuple[list[str], list[str]]:
    """The document's POST and GET paths named like a chat's, with no parameter, no login and
    not the create call: where the probe tries a message and a read when no schema names a
    message's field (a handler that reads the JSON itself lists its route, nothing of its body)."""
    api = Doc(doc)
    chatty = [(m, p) for m in ("post", "get") for p, _ in api.ops(m) if _CHATTY.search(p) and not _PARAM.search(p)]
    posts = [p for m, p in chatty if m == "post" and "login" not in p and p != create]
    return posts, [p for m, p in chatty if m == "get"]


def _props(schema: dict[str, Any]) -> dict[str, Any]:
    return schema.get("properties") or {}


def from_openapi(doc: dict[str, Any], d: Draft) -> None:
    """Fill ``d`` with what the document shows; each field says it came from OpenAPI."""
    api = Doc(doc)
    _login(api, d)
    _create(api, d)
    chat = _chat(api, d)
    if chat is not None:
        _history(api, d, chat)


def _login(api: Doc, d: Draft) -> None:
    for path, op in api.ops("post"):
        fields = _props(api.body(op))
        if _PARAM.search(path) or not any("pass" in k.lower() for k in fields):
            continue
        body = {k: "{env:LAB_LOGIN_" + re.sub(r"\W", "_", k).upper() + "}" for k in fields}
        d.put("auth", "login", path, f"OpenAPI: POST {path} takes {', '.join(fields)}")
        d.put("auth", "body", body, "its values from environment variables (set them before the check)")
        token = next((k for k in _props(api.answer(op)) if "token" in k.lower()), None)
        if token:
            d.put("auth", "token", f"$.{token}", f"OpenAPI: its answer has {token!r}")
            if not api.bearer:
                d.missing("auth", "header", "the header the token goes in (no bearer scheme in OpenAPI)")
        return


def _create(api: Doc, d: Draft) -> None:
    """A POST with no path parameter and no required body that answers an id, under which
    other routes continue with a parameter: the conversation's create call."""
    for path, op in api.ops("post"):
        if _PARAM.search(path) or api.body(op).get("required") or "login" in path:
            continue
        answer = _props(api.answer(op))
        ident = next((k for k in answer if k.lower() in ("id", "conversation_id", "uuid")), None)
        below = [p for p in api.paths if p.startswith(path.rstrip("/") + "/{")]
        # An answer the document does not describe (a view returning a dict) may hold the id:
        # the probe's create call reads it.
        if below and (ident or not answer) and not api.body(op):
            d.put("session", "in", "path", f"OpenAPI: {below[0]} continues POST {path}")
            d.put("session", "from", "create", f"POST {path} " + (f"answers {ident!r}" if ident else "takes no body"))
            d.put("session", "create", path, "OpenAPI")
            if ident:
                d.put("session", "id", f"$.{ident}", "OpenAPI: the create call's answer")
            return


def _chat(api: Doc, d: Draft) -> str | None:
    for path, op in api.ops("post"):
        fields = _props(api.body(op))
        strings = [k for k, v in fields.items() if api.resolve(v).get("type") == "string"]
        field = next((k for k in MESSAGE_FIELDS if k in strings), None)
        params = _PARAM.findall(path)
        if field is None or len(params) > 1 or "login" in path:
            continue
        if params and d.get("session", "in") != "path":
            continue
        spec_path = _PARAM.sub("{session}", path)
        d.put("chat", "path", spec_path, f"OpenAPI: POST {path} takes {field!r}")
        d.put("chat", "message_field", field, "OpenAPI: its string field named like a message")
        answer = _props(api.answer(op))
        reply = next((k for k in REPLY_NAMES if k in answer), None)
        if reply:
            d.put("chat", "reply_path", f"$.{reply}", "OpenAPI: its answer's field")
        return path
    return None


def _history(api: Doc, d: Draft, chat: str) -> None:
    """GET on the chat's own path, else a GET named like a history with the same parameters."""
    gets = dict(api.ops("get"))
    candidates = [chat] + [
        p for p in gets if re.search(r"history|messages", p) and len(_PARAM.findall(p)) == len(_PARAM.findall(chat))
    ]
    path = next((p for p in candidates if p in gets), None)
    if path is None:
        return
    d.put("history", "path", _PARAM.sub("{session}", path), f"OpenAPI: GET {path}")
    for name, schema in _props(api.answer(gets[path])).items():
        s = api.resolve(schema)
        if s.get("type") == "array":
            d.put("history", "items", f"$.{name}", f"OpenAPI: its answer's list {name!r}")
            return
