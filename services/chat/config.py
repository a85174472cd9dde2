"""Configuration defaults; overridden by CHAT_* environment variables, then by test_config."""

from __future__ import annotations

DAY_MS = 24 * 3600 * 1000

# The lab injects at most this much latency on the Redis link (lab/faults/latency.py refuses
# more). The client's socket timeout must exceed it, or the correct profile would fail every
# request under the latency fault and look "unexercised" instead of correct.
MAX_INJECTED_LATENCY_MS = 2000
REDIS_SOCKET_TIMEOUT_S = 5.0  # > MAX_INJECTED_LATENCY_MS per round trip, with margin
REDIS_CONNECT_TIMEOUT_S = 3.0
assert REDIS_SOCKET_TIMEOUT_S * 1000 > MAX_INJECTED_LATENCY_MS
# Every Redis operation of a request ends by this deadline, whatever it waits on. Socket timeouts
# bound reads and connects but not waits on the client's own locks: a redis.asyncio client shared
# across threads' event loops (the shared_loop_client defect) can leave a waiter that no loop will
# ever wake. Above the legitimate worst case (two attempts at connect + socket timeout).
STORE_OP_DEADLINE_S = 2 * (REDIS_CONNECT_TIMEOUT_S + REDIS_SOCKET_TIMEOUT_S) - 1.0

DEFAULTS: dict[str, object] = {
    "REDIS_URL": "redis://127.0.0.1:16380/0",  # always a Toxiproxy address in the lab
    "LAB_MODE": False,  # honour X-Lab-* headers (profiles, TTL, latency)
    "LAB_EXERCISE": "",  # lab mode: a lesson's exercise file (services/chat/exercise.py)
    "TTL_MS": 7 * DAY_MS,  # conversation TTL, renewed on every write
    "COOKIE_MAX_AGE_S": 30 * 24 * 3600,
    "LLM_LATENCY_MS": 30,  # fake LLM "thinking" time before the reply
    # A model provider's OpenAI-compatible base URL (with /v1): the replies come from it instead
    # of the in-process fake -- the lab's stand-in model (lab.standin), so the lab can see what
    # each call was told. "" = the in-process fake (services/chat/llm.py).
    "MODEL_URL": "",
    "MODEL_TIMEOUT_S": 10.0,
    "TOKEN_DELAY_MS": 25,  # pause between streamed tokens
    "MAX_MESSAGE_BYTES": 8 * 1024,  # larger messages get 413
    "MAX_CONTENT_LENGTH": 64 * 1024,  # whole request body (Flask/Werkzeug enforce it)
    "STORE_ATTEMPTS": 2,
    # Default defect profile when a request carries no X-Lab-Defects header ("" = correct).
    # Server configuration, not a request header: lets `lab investigate` switch a defect on in a
    # backend it treats as a black box (examples/chat-service.toml).
    "DEFECTS": "",  # explicit retries of the idempotent append
}
