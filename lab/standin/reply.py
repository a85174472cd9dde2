"""What the stand-in answers, as a pure function of the messages a call carried: which turn this
is as the model sees it, and what the user first said -- so a call given the conversation
without its history answers "turn 1" in the middle of a long chat."""

from __future__ import annotations

from dataclasses import dataclass

QUOTE_CHARS = 60
FILLER = "and"  # pads a reply to the length the lab asked for, one token per word


@dataclass(frozen=True)
class Message:
    role: str  # "system", "user", "assistant" (a provider's own names mapped to these)
    text: str


def _quote(text: str) -> str:
    """The start of a message, never the whole of it: the lab finds a turn's rows by its unique
    text, in the page and in the store's commands, and a reply that quoted a message whole would
    be counted as that message written again (in the reply's row)."""
    words = text.split()
    if len(words) > 1:
        start = " ".join(words[:-1])[:QUOTE_CHARS]
    else:
        start = text.strip()[: max(1, len(text.strip()) // 2)]
    return f'"{start}..."'


def reply_text(messages: list[Message]) -> str:
    """The reply: the turn as this call sees it (its user messages), the first and the last of
    them. Deterministic: the same messages, the same reply."""
    users = [m.text for m in messages if m.role == "user"]
    if not users:
        return "Turn 0 as I see it: you have not said anything yet."
    if len(users) == 1:
        return f"Turn 1 as I see it: this is where our conversation starts. You said {_quote(users[0])}."
    return f"Turn {len(users)} as I see it. You first said {_quote(users[0])}; just now you said {_quote(users[-1])}."


def tokens(text: str, count: int | None = None) -> list[str]:
    """The reply as the tokens a stream sends (a word and its space each); ``count`` pads it with
    FILLER words, or cuts it, to that many (None: as it is)."""
    words = text.split(" ")
    out = [w + " " for w in words[:-1]] + [words[-1]]
    if count is None:
        return out
    if count <= len(out):
        return out[:count]
    out[-1] += " "
    return out + [FILLER + " "] * (count - len(out) - 1) + [FILLER]
