"""A chat backend on LangChain, built as its docs build one: a prompt with a history placeholder
piped into ``ChatOpenAI`` (langchain-openai, which reads OPENAI_BASE_URL and OPENAI_API_KEY), the
chain wrapped in ``RunnableWithMessageHistory``, which loads a conversation's messages before the
call and adds the question and the answer after it. Starlette on uvicorn's worker processes; the
conversation is a cookie the app sets (``lc_sid``, Path=/api); each conversation is a Redis
stream (``lc:chat:<sid>``: one XADD per message, the TTL renewed in the same MULTI).

    REDIS_URL=redis://127.0.0.1:16380/0 OPENAI_BASE_URL=http://127.0.0.1:18411/v1 OPENAI_API_KEY=x \\
    python -m uvicorn --app-dir examples langchain_app:app --port 18199 --workers 2 --timeout-keep-alive 0

Its own history class: langchain-redis's RedisChatMessageHistory needs Redis' search module
(RedisVL indexes), which a plain redis-server lacks, and langchain-community's pulls SQLAlchemy
and numpy into an example; a BaseChatMessageHistory over redis-py is a dozen lines.

Keep-alive off (0 s): each request a new connection, so the kernel hands it to either worker --
what a load balancer in front of replicas does to a browser's requests.

Correct by default: the chain is given the history read from the Redis stream, the user's
message is stored before the model is called and the reply after it answers, each save awaited
in the request -- a failure of either answers 502/503, never 200. Not RunnableWithMessageHistory's
own save: it runs in a callback (a root listener's on_chain_end), and LangChain logs and swallows
an error there -- measured here: a save that met a Redis connection closed by the server
("Error in AsyncRootListenersTracer.on_chain_end callback: network:ConnectionError") answered
200 with nothing stored, an acknowledged turn lost. The SDK's own retries (max_retries=2) ride
out a provider error; a call that still fails keeps the user's message (answered 502).

LC_APP_BUGS=session_cache: RunnableWithMessageHistory with ``get_session_history`` as the docs'
first example writes it -- a module-level ``store = {}`` of InMemoryChatMessageHistory, here
seeded from Redis the first time this process sees the conversation -- while every message is
still written to Redis for the history page. With two workers, a turn answered by the worker
that did not answer the one before builds its prompt from a copy that lacks it: the model is
told less than the user was shown (model_told_less), and the page and Redis show nothing wrong.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence

import redis.asyncio as aioredis
import redis as syncredis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry
from langchain_core.chat_history import BaseChatMessageHistory, InMemoryChatMessageHistory
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_openai import ChatOpenAI
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

KNOWN_BUGS = {"session_cache"}
BUGS = {b.strip() for b in os.environ.get("LC_APP_BUGS", "").split(",") if b.strip()}
if BUGS - KNOWN_BUGS:
    raise SystemExit(f"LC_APP_BUGS: unknown {sorted(BUGS - KNOWN_BUGS)}; known: {sorted(KNOWN_BUGS)}")
TTL_S = int(os.environ.get("LC_APP_TTL_S", "172800"))
COOKIE = "lc_sid"
MAX_QUESTION = 8000
KINDS = {"human": HumanMessage, "ai": AIMessage}

# redis-py's sync client: BaseChatMessageHistory's sync methods, and session_cache's seeding in
# get_session_history, which RunnableWithMessageHistory calls synchronously; its async clients
# for everything the routes await.
sync_store = syncredis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=5, socket_connect_timeout=3)
# Reads retried once on a broken connection (a pooled connection Redis or the network closed
# while idle fails its next command: measured, the history read after Redis came back answered
# 500); writes never -- an append whose reply was lost may have been applied, and sending it
# again would store the message twice.
reader = aioredis.Redis.from_url(
    os.environ["REDIS_URL"],
    socket_timeout=5,
    socket_connect_timeout=3,
    retry=Retry(NoBackoff(), 1),
    retry_on_error=[RedisConnectionError],
)
writer = aioredis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=5, socket_connect_timeout=3)


def _key(sid: str) -> str:
    return f"lc:chat:{sid}"


def _decode(entries: list[tuple[bytes, dict[bytes, bytes]]]) -> list[BaseMessage]:
    return [KINDS[f[b"type"].decode()](content=f[b"content"].decode()) for _, f in entries]


class RedisStreamHistory(BaseChatMessageHistory):
    """One conversation as a Redis stream: a message per entry, the TTL renewed with each add."""

    def __init__(self, sid: str) -> None:
        self.key = _key(sid)

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return _decode(sync_store.xrange(self.key))

    async def aget_messages(self) -> list[BaseMessage]:
        return _decode(await reader.xrange(self.key))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        pipe = sync_store.pipeline(transaction=True)
        for m in messages:
            pipe.xadd(self.key, {"type": m.type, "content": str(m.content)})
        pipe.expire(self.key, TTL_S)
        pipe.execute()

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        async with writer.pipeline(transaction=True) as pipe:
            for m in messages:
                pipe.xadd(self.key, {"type": m.type, "content": str(m.content)})
            pipe.expire(self.key, TTL_S)
            await pipe.execute()

    def clear(self) -> None:
        sync_store.delete(self.key)


class MirroredHistory(InMemoryChatMessageHistory):
    """session_cache: the process's copy the prompt is built from; what is added to it is also
    written to Redis, so the history page shows every message."""

    sid: str = ""

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        await super().aadd_messages(messages)
        await RedisStreamHistory(self.sid).aadd_messages(messages)


store: dict[str, MirroredHistory] = {}  # session_cache: this worker's copies


def get_session_history(sid: str) -> BaseChatMessageHistory:
    if sid not in store:  # seeded once, on this worker's first sight of the conversation
        store[sid] = MirroredHistory(sid=sid, messages=RedisStreamHistory(sid).messages)
    return store[sid]


prompt = ChatPromptTemplate.from_messages(
    [
        ("system", "You are a helpful assistant. Answer in one or two sentences."),
        MessagesPlaceholder("history"),
        ("human", "{question}"),
    ]
)
llm = ChatOpenAI(model=os.environ.get("LC_APP_MODEL", "gpt-4o-mini"), max_retries=2, timeout=30)
chain = prompt | llm
with_history = RunnableWithMessageHistory(
    chain, get_session_history, input_messages_key="question", history_messages_key="history"
)


async def _exchange(sid: str, question: str) -> str:
    """One turn: the model's answer, the conversation stored as the mode stores it."""
    if "session_cache" in BUGS:
        config = {"configurable": {"session_id": sid}}
        return str((await with_history.ainvoke({"question": question}, config=config)).content)
    history = RedisStreamHistory(sid)
    past = await history.aget_messages()
    await history.aadd_messages([HumanMessage(content=question)])
    try:
        answer = await chain.ainvoke({"history": past, "question": question})
    except Exception as exc:  # the model failed: the message is kept, the answer says so
        raise ModelFailed(type(exc).__name__) from exc
    await history.aadd_messages([AIMessage(content=str(answer.content))])
    return str(answer.content)


class ModelFailed(Exception):
    pass


def _problem(body: object) -> str | None:
    if not isinstance(body, dict) or not isinstance(body.get("q"), str) or not body["q"].strip():
        return 'send a JSON object {"q": "your question"}'
    if len(body["q"]) > MAX_QUESTION:
        return f"q must be at most {MAX_QUESTION} characters"
    return None


async def ask(request: Request) -> JSONResponse:
    try:
        body = await request.json()
    except ValueError:
        body = None
    if problem := _problem(body):
        return JSONResponse({"error": problem}, status_code=400)
    sid = request.cookies.get(COOKIE) or secrets.token_urlsafe(18)
    question = body["q"]  # type: ignore[index]
    try:
        resp = JSONResponse({"output": await _exchange(sid, question)})
    except ModelFailed as exc:
        resp = JSONResponse({"error": f"the model failed: {exc}"}, status_code=502)
    except Exception as exc:  # Redis failed (session_cache: the model too; the message is kept)
        resp = JSONResponse({"error": f"not answered: {type(exc).__name__}"}, status_code=503)
        if "session_cache" in BUGS:
            try:
                await get_session_history(sid).aadd_messages([HumanMessage(content=question)])
                resp = JSONResponse({"error": f"the model failed: {type(exc).__name__}"}, status_code=502)
            except Exception:
                pass  # Redis itself is down: nothing was kept, and the 503 says so
    if COOKIE not in request.cookies:
        resp.set_cookie(COOKIE, sid, max_age=30 * 86400, path="/api", httponly=True, samesite="lax")
    return resp


async def log(request: Request) -> JSONResponse:
    sid = request.cookies.get(COOKIE)
    if not sid:
        return JSONResponse({"log": []})
    messages = await RedisStreamHistory(sid).aget_messages()
    return JSONResponse({"log": [{"type": m.type, "content": str(m.content)} for m in messages]})


async def ping(request: Request) -> JSONResponse:
    return JSONResponse({"ok": True})


app = Starlette(
    routes=[
        Route("/api/ask", ask, methods=["POST"]),
        Route("/api/log", log, methods=["GET"]),
        Route("/api/ping", ping, methods=["GET"]),
    ]
)
