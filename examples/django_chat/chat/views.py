import json
import logging
import uuid

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie

from . import store
from .llm import generate_reply

log = logging.getLogger("chat")

MAX_MESSAGE_LEN = 4000


def _conversation(request) -> str:
    conv = request.session.get("conversation")
    if not conv:
        conv = str(uuid.uuid4())
        request.session["conversation"] = conv
    return conv


def _error(status, msg):
    return JsonResponse({"error": msg}, status=status)


@ensure_csrf_cookie
def index(request):
    conv = _conversation(request)
    return render(request, "chat/index.html", {"conversation": conv})


def send(request):
    if request.method != "POST":
        return _error(405, "method not allowed")
    try:
        body = json.loads(request.body or b"")
    except (ValueError, UnicodeDecodeError):
        return _error(400, "invalid JSON body")
    if not isinstance(body, dict):
        return _error(400, "body must be a JSON object")
    message = body.get("message")
    if not isinstance(message, str) or not message.strip():
        return _error(400, "'message' must be a non-empty string")
    if len(message) > MAX_MESSAGE_LEN:
        return _error(400, f"'message' longer than {MAX_MESSAGE_LEN} characters")

    conv = _conversation(request)
    answer = generate_reply(message)
    items = [store.make_item("human", message), store.make_item("ai", answer)]

    if "thread_save" in settings.APP_BUGS:
        store.append_in_background(conv, items)
        return JsonResponse({"answer": answer})

    if "swallow" in settings.APP_BUGS:
        try:
            store.append(conv, items)
        except Exception:  # BUG: logged and ignored, client still gets 200
            log.exception("failed to save messages for %s", conv)
        return JsonResponse({"answer": answer})

    try:
        store.append(conv, items)
    except store.StoreError:
        log.exception("failed to save messages for %s", conv)
        return _error(503, "message store unavailable")
    return JsonResponse({"answer": answer})


def messages(request):
    if request.method != "GET":
        return _error(405, "method not allowed")
    conv = _conversation(request)
    try:
        msgs = store.history(conv)
    except store.StoreError:
        log.exception("failed to read messages for %s", conv)
        return _error(503, "message store unavailable")
    return JsonResponse({"conversation": conv, "messages": msgs})
