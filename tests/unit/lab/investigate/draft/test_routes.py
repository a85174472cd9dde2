"""lab init's reading of the app's own page: the routes its script calls, as written."""

from __future__ import annotations

from lab.investigate.draft.routes import Call, calls_in


def test_a_template_a_join_and_a_plain_string_each_give_a_path_with_the_id() -> None:
    script = """
      const r = await fetch(`/api/threads/${encodeURIComponent(threadId)}/messages`, {
        method: 'POST', body: JSON.stringify({ content: text, "mode": m }) });
      fetch("/api/threads/" + encodeURIComponent(id) + "?limit=100");
      await fetch('/api/threads', { method: "post" });
      axios.post(base + "/api/x", {a: 1});            // not a path: it starts with a variable
      const es = new EventSource("/api/stream/" + id);
      fetch(url);                                      // nothing to read
    """
    got = calls_in(script)
    assert got.calls == [
        Call("POST", "/api/threads/{session}/messages"),
        Call("GET", "/api/threads/{session}"),
        Call("POST", "/api/threads"),
        Call("GET", "/api/stream/{session}"),
    ]
    assert got.fields == ["content", "mode"]
    assert got.created() == [("/api/threads", "/messages")]
    assert got.chats()[0] == "/api/threads" and got.conversations()[0] == "/api/threads/{session}"


def test_nothing_in_a_page_without_calls_leaves_the_common_names() -> None:
    got = calls_in("<html><body>hello</body></html>")
    assert got.calls == [] and got.chats()[0] == "/chat" and got.message_fields()[:2] == ["message", "content"]
