import json
import logging
import threading
from datetime import datetime, timezone

import redis
from django.conf import settings

log = logging.getLogger("chat")

StoreError = redis.RedisError

_client = None


def client() -> redis.Redis:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(
            settings.REDIS_URL, decode_responses=True, socket_connect_timeout=2, socket_timeout=2
        )
    return _client


def key(conversation: str) -> str:
    return f"chat:conv:{conversation}:msgs"


def make_item(sender: str, message: str) -> str:
    return json.dumps({"sender": sender, "message": message, "created": datetime.now(timezone.utc).isoformat()})


def append(conversation: str, items: list[str]) -> None:
    """RPUSH the items and refresh the TTL, atomically."""
    k = key(conversation)
    r = client()
    if "expire_new_only" in settings.APP_BUGS:
        # BUG: only set a TTL when the list is new; later pushes never refresh it.
        was_empty = r.llen(k) == 0
        pipe = r.pipeline(transaction=True)
        pipe.rpush(k, *items)
        if was_empty:
            pipe.expire(k, settings.CHAT_TTL_SECONDS)
        pipe.execute()
        return
    pipe = r.pipeline(transaction=True)
    pipe.rpush(k, *items)
    pipe.expire(k, settings.CHAT_TTL_SECONDS)
    pipe.execute()


def append_in_background(conversation: str, items: list[str]) -> None:
    # BUG (thread_save): fire and forget; failures are only printed.
    def work():
        try:
            append(conversation, items)
        except Exception as exc:  # noqa: BLE001
            print(f"background save failed for {conversation}: {exc!r}")

    threading.Thread(target=work, daemon=True).start()


def history(conversation: str) -> list[dict]:
    return [json.loads(x) for x in client().lrange(key(conversation), 0, -1)]
