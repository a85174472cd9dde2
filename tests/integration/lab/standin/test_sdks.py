"""The providers' own SDKs against a running stand-in, as an app calls them: openai (Chat
Completions whole and streamed with usage, the Responses API whole and through its stream
helper), anthropic (Messages whole and streamed) and ollama (chat whole and streamed) each read
the reply whole; a 429, Anthropic's 529 and a cut stream reach the app as each SDK's own errors.
No retries (max_retries=0): one call, one record."""

from __future__ import annotations

import json
import urllib.request

import anthropic
import ollama
import openai
import pytest


MSGS = [
    {"role": "user", "content": "I am Ada"},
    {"role": "assistant", "content": "Noted."},
    {"role": "user", "content": "probe t-sdk: who am I?"},
]
REPLY = 'Turn 2 as I see it. You first said "I am..."; just now you said "probe t-sdk: who am...".'


@pytest.fixture
def base(port: int) -> str:
    return f"http://127.0.0.1:{port}"


def _plan(base: str, **behaviour: object) -> None:
    data = json.dumps({"match": "t-sdk", **behaviour}).encode()
    req = urllib.request.Request(base + "/_lab/plans", data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=5) as r:
        assert r.status == 200


def test_openai_reads_chat_and_responses_whole_and_streamed(base: str) -> None:
    with openai.OpenAI(base_url=base + "/v1", api_key="not-a-key", max_retries=0) as o:
        _openai_reads(o)


def _openai_reads(o: openai.OpenAI) -> None:
    assert [m.id for m in o.models.list()] == ["chaoslab-standin"]
    whole = o.chat.completions.create(model="m", messages=MSGS)
    assert whole.choices[0].message.content == REPLY and whole.usage is not None
    chunks = list(
        o.chat.completions.create(model="m", messages=MSGS, stream=True, stream_options={"include_usage": True})
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == REPLY
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0
    assert o.responses.create(model="m", input=MSGS, instructions="Be brief.").output_text == REPLY
    with o.responses.stream(model="m", input=MSGS) as stream:
        for _ in stream:
            pass
        assert stream.get_final_response().output_text == REPLY


def test_anthropic_and_ollama_read_it_whole_and_streamed(base: str) -> None:
    # Each client is closed: an SDK's pooled socket left to the collector is an unraisable warning
    # in whichever test happens to run next.
    with anthropic.Anthropic(base_url=base, api_key="not-a-key", max_retries=0) as a:
        _anthropic_reads(a)
    with ollama.Client(host=base) as client:
        assert client.chat(model="l", messages=MSGS, stream=False).message.content == REPLY
        assert "".join(p.message.content or "" for p in client.chat(model="l", messages=MSGS, stream=True)) == REPLY


def _anthropic_reads(a: anthropic.Anthropic) -> None:
    msg = a.messages.create(model="c", max_tokens=100, messages=MSGS, system="Be brief.")
    assert msg.content[0].text == REPLY
    with a.messages.stream(model="c", max_tokens=100, messages=MSGS) as stream:
        assert "".join(stream.text_stream) == REPLY
        assert stream.get_final_message().stop_reason == "end_turn"


def test_the_faults_reach_the_app_as_each_sdks_own_errors(base: str) -> None:
    with (
        openai.OpenAI(base_url=base + "/v1", api_key="not-a-key", max_retries=0) as o,
        anthropic.Anthropic(base_url=base, api_key="not-a-key", max_retries=0) as a,
    ):
        _faults_reach(base, o, a)


def _faults_reach(base: str, o: openai.OpenAI, a: anthropic.Anthropic) -> None:
    _plan(base, fault="rate_limit", retry_after_s=3)
    with pytest.raises(openai.RateLimitError) as limited:
        o.chat.completions.create(model="m", messages=MSGS)
    assert limited.value.response.headers["retry-after"] == "3"
    _plan(base, fault="overloaded")
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        a.messages.create(model="c", max_tokens=100, messages=MSGS)
    assert overloaded.value.status_code == 529
    _plan(base, fault="cut", cut_after=3)
    got: list[str] = []
    with pytest.raises(openai.APIConnectionError):  # the body broke off: not a quiet end
        for c in o.chat.completions.create(model="m", messages=MSGS, stream=True):
            got.append(c.choices[0].delta.content or "")
    assert "".join(got) == "Turn 2 as "
