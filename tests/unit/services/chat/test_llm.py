from services.chat import llm
from services.chat.store import Row


def _history(*pairs: tuple[str, str]) -> list[Row]:
    return [Row(str(i), role, text) for i, (role, text) in enumerate(pairs)]


def test_empty_history_greets_a_stranger() -> None:
    assert llm.reply([], "hello there") == llm.GREETING


def test_introduction_is_answered_by_name() -> None:
    assert llm.reply([], "Hi, my name is alice") == "Nice to meet you, Alice! What would you like to talk about?"


def test_recalls_name_and_preference_from_history() -> None:
    h = _history(
        ("user", "my name is Bob"),
        ("assistant", "Nice to meet you, Bob!"),
        ("user", "I like sailing."),
        ("assistant", "Noted."),
    )
    assert llm.reply(h, "what is my name?") == "Your name is Bob."
    assert llm.reply(h, "what do I like?") == "You told me you like sailing."
    assert (
        llm.reply(h, "tell me more")
        == "Noted, Bob. This is message 3 of our conversation. You told me you like sailing."
    )


def test_without_history_the_name_is_unknown() -> None:
    assert llm.reply([], "what's my name?") == "I don't know your name yet: you haven't told me."


def test_reply_is_deterministic_and_tokens_rejoin() -> None:
    h = _history(("user", "I'm Carol"))
    text = llm.reply(h, "and again")
    assert text == llm.reply(h, "and again")
    assert "".join(llm.tokens(text)) == text and len(llm.tokens(text)) > 5
