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
        Call("POST", "/api/threads", body=False),
        Call("GET", "/api/stream/{session}"),
    ]
    assert got.fields == ["content", "mode"]
    assert got.created() == [("/api/threads", "/api/threads/{session}/messages")]
    # A POST with no body is a create call's shape: a chat route after the common names.
    assert got.chats()[-1] == "/api/threads" and got.conversations()[0] == "/api/threads/{session}"


def test_nothing_in_a_page_without_calls_leaves_the_common_names() -> None:
    got = calls_in("<html><body>hello</body></html>")
    assert got.calls == [] and got.chats()[0] == "/chat" and got.message_fields()[:2] == ["message", "content"]


def test_a_url_built_in_a_helper_or_carrying_the_id_in_its_query() -> None:
    script = """
      const url = () => '/v1/c/' + encodeURIComponent(cid) + '/messages';
      function hist(id) { return "/api/history?limit=50&s=" + id; }
      const base =
        "/api/chat" +
        "?s=" + conv
      fetch(url(), { method: 'POST', headers, body });
      fetch(hist(conv));
      fetch(base, { method: "POST", body: JSON.stringify({ text }) });
      fetch("/api/sessions", { method: "POST" });
      conv = crypto.randomUUID();
    """
    got = calls_in(script)
    assert got.calls == [
        Call("POST", "/v1/c/{session}/messages"),
        Call("GET", "/api/history", query="s"),
        Call("POST", "/api/chat", query="s"),
        Call("POST", "/api/sessions", body=False),
    ]
    assert got.mints and got.queried() == [("/api/chat", "s")] and got.queried("GET") == [("/api/history", "s")]
    assert got.created()[0] == ("/api/sessions", "/api/chat?s={session}")
    assert got.chats()[0] == "/api/chat" and got.chats()[-1] == "/api/sessions"


def test_a_helper_of_the_page_s_own_that_takes_the_url_gives_each_of_its_calls() -> None:
    """An app's page that wraps fetch (``api(method, path, payload)``, ``getJSON(url)``): each
    call of the helper is the call it makes, its method given, the fetch's own, or POST where
    it carries a payload (a Flask app written unseen: no route found before, 2026-12-06)."""
    script = """
      function api(method, path, payload) {
        var opts = { method: method, headers: {} };
        if (payload !== undefined) { opts.body = JSON.stringify(payload); }
        return fetch(path, opts).then(function (res) { return res.json(); });
      }
      const getJSON = async (url) => (await fetch(url)).json();
      const send = (u, data) => fetch(u, { method: "POST", body: JSON.stringify(data) });
      api("POST", "/api/conversations").then(function (d) { id = d.conversation_id; });
      api("GET", "/api/conversations/" + encodeURIComponent(id) + "/turns");
      api("POST", `/api/conversations/${id}/turns`, { prompt: text });
      getJSON("/api/notes?c=" + id);
      send("/api/feedback", {stars: n});
      http.post("/api/rate", {score: 1});
      params.get("q"); map.get(key);                         // not routes
    """
    got = calls_in(script)
    assert got.calls == [
        Call("POST", "/api/conversations", body=False),
        Call("GET", "/api/conversations/{session}/turns"),
        Call("POST", "/api/conversations/{session}/turns"),
        Call("GET", "/api/notes", query="c"),
        Call("POST", "/api/feedback"),
        Call("POST", "/api/rate"),
    ]
    assert got.fields[:2] == ["prompt", "stars"] and got.headered() == []
    assert got.created() == [("/api/conversations", "/api/conversations/{session}/turns")]


def test_a_header_set_from_a_name_carries_the_id_one_set_from_a_literal_does_not() -> None:
    script = """
      fetch("/api/ask", { method: "POST", headers: { "Content-Type": "application/json", "X-Chat-Token": token },
        body: JSON.stringify({ question: q }) });
      fetch("/api/log", { headers: { Accept: "application/json", "X-Client": "web" } });
      fetch("/api/me", { headers: { Authorization: "Bearer " + jwt } });
    """
    got = calls_in(script)
    assert got.headered() == [("/api/ask", "X-Chat-Token")]
    assert [c.header for c in got.calls] == ["X-Chat-Token", None, None]


def test_a_url_chosen_by_a_conditional_gives_both_branches() -> None:
    """``const url = id ? "/talk?c=" + id : "/talk"`` (a Flask app written unseen, 2026-12-06)."""
    script = """
      const url = id ? "/talk?c=" + encodeURIComponent(id) : "/talk";
      const res = await fetch(url, { method: "POST", body: JSON.stringify({ input: text }) });
    """
    got = calls_in(script)
    assert got.calls == [Call("POST", "/talk", query="c"), Call("POST", "/talk")]
    assert got.queried() == [("/talk", "c")] and got.fields == ["input"]


def test_a_form_s_fields_are_read_as_a_json_body_s() -> None:
    """`body: new URLSearchParams({q: text})` (an aiohttp app written unseen, 2026-12-06)."""
    got = calls_in("fetch('/send', {method: 'POST', body: new URLSearchParams({q: text})});")
    assert got.calls == [Call("POST", "/send")] and got.fields == ["q"]
