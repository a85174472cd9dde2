"""What `lab init` reads of a server-rendered chat, whose page is re-rendered from the store on
every load and which has no JSON history: the forms the page posts a message with (``<form
method="post" action=...>``, htmx's ``hx-post``), and the history as the page's messages -- the
element holding the sent text, its siblings of its kind (the selector), the attribute telling the
two speakers apart (a class token, a data attribute), and whose comes first."""

from __future__ import annotations

import re
from collections import Counter

from lab.common.html_select import Node, document, html_items, select, selector
from lab.investigate.draft.client import Client
from lab.investigate.draft.infer import Draft, HistoryShape, an_id, order_from
from lab.investigate.draft.routes import ID, Call, Routes, scripts

TEXT_INPUTS = {"", "text", "search"}  # an <input> a message is typed in (hidden ones carry state)
# The class token or attribute value naming the user's side, where the two differ in more than one.
USER_WORDS = re.compile(r"(?i)user|human|\b(me|you|mine|self|own|question|sent|outgoing|right)\b")


def forms(routes: Routes) -> None:
    """Add the page's message forms to ``routes``: each posting form (or element with hx-post)
    holding a text field, its path with an id of the page's own URL as {session} (a page at
    /c/8f3a posting to /c/8f3a/say), sent as a form."""
    if not routes.texts:
        return
    root, page_path = document(routes.texts[0]), routes.at
    ids = _ids(page_path, routes.again)
    for n in select(root, selector("form, [hx-post], [data-hx-post]")):
        post = n.attrs.get("hx-post") or n.attrs.get("data-hx-post")
        if post is None and n.attrs.get("method", "get").lower() != "post":
            continue
        path = (post or n.attrs.get("action") or page_path).split("?")[0].split("#")[0]
        if not path.startswith("/"):
            path = page_path.rstrip("/") + "/" + path
        path = _own(path, ids)
        fields = [
            x.attrs["name"]
            for x in select(n, selector("textarea[name], input[name]"))
            if x.tag == "textarea" or x.attrs.get("type", "").lower() in TEXT_INPUTS
        ]
        if not fields and post is None and path not in routes.starts:
            routes.starts.append(path)  # a "New chat" button: where a conversation's page is made
        if fields and post is not None:
            routes.headers["HX-Request"] = "true"  # what htmx sends with every request it makes
        if fields:
            hidden = select(n, selector('input[type="hidden"][name]'))
            routes.hidden_from = routes.hidden_from or (_own(page_path, ids) if hidden else None)
            routes.calls.append(Call("POST", path))
            routes.fields += [f for f in fields if f not in routes.fields]
            routes.forms.append(path)
    if routes.forms:  # a page that posts its messages itself may render them: its history, maybe
        routes.headers |= script_headers(routes.texts)
        own = _own(page_path, ids)
        routes.calls.append(Call("GET", own))
        routes.page_url = own if ids else None


# Headers a page sets on its requests that say nothing of the app's answer.
PLAIN_HEADERS = {"content-type", "accept", "authorization", "cache-control"}
_HEADERS = re.compile(r"\bheaders\s*:\s*\{([^{}]*)\}")
_LITERAL = re.compile(r"""["']?([A-Za-z][\w-]*)["']?\s*:\s*(?:"([^"\n]*)"|'([^'\n]*)')""")


def script_headers(texts: list[str]) -> dict[str, str]:
    """Headers with a literal value the page's scripts send (``"X-Requested-With": "fetch"``):
    an app may answer a fragment to them and a redirect without, as its page never sees."""
    found: dict[str, str] = {}
    for text in texts:
        for block in _HEADERS.findall(text):
            for name, a, b in _LITERAL.findall(block):
                if name.lower() not in PLAIN_HEADERS and "csrf" not in name.lower() and "xsrf" not in name.lower():
                    found.setdefault(name, a or b)
    return found


def started(c: Client, routes: Routes) -> None:
    """A landing page with no message form, only a "New chat" one: its POST followed to the
    conversation's page (/chat/k3j9...), whose forms are then read as the page's."""
    if routes.forms or not routes.starts:
        return
    c.form = True
    status, ctype, _ = c.call("POST", routes.starts[0], {})
    if 200 <= status < 300 and "html" in ctype and c.path != routes.at:
        page, at = c.body, c.path
        routes.texts, routes.at, routes.start = [page, *scripts(c, page)], at, ("POST", routes.starts[0])
        c.call("POST", routes.starts[0], {})  # a second conversation: its page's id moves
        routes.again = c.path
        forms(routes)
    c.form = bool(routes.forms)  # the message is then posted as that page's form posts it


def posted(d: Draft, page: Routes, path: str, hidden: dict[str, str]) -> None:
    """A message the app took at ``path``: where the page's own form posts it, a form -- with
    the form's hidden inputs (``hidden``: a CSRF token), as the browser posts them."""
    if path in page.forms:
        d.put("chat", "body", "form", f"the page's own form posts {path}")
        if page.hidden_from and hidden:
            d.put("chat", "hidden_from", page.hidden_from, f"its form's hidden inputs: {', '.join(hidden)}")
        if page.headers:
            d.put("chat", "headers", page.headers, "the app's page sends them with a message")


def templated(page_path: str) -> str:
    """A page's path with the ids in it as {session} (/c/8f3a -> /c/{session})."""
    return _own(page_path, _ids(page_path))


def _ids(page_path: str, again: str | None = None) -> list[str]:
    """The segments of ``page_path`` that are a conversation's id: those with a digit, and those
    that differ in ``again``, a second conversation's page of the same shape -- an id of letters
    alone (20 characters of base32 have no digit one time in 64) is told from a route's word
    (/chat) only by changing from one conversation to the next."""
    mine, other = page_path.split("/"), (again or "").split("/")
    moved = {a for a, b in zip(mine, other) if a != b} if len(mine) == len(other) else set()
    return [s for s in mine if s and an_id(s) and (re.search(r"\d", s) or s in moved)]


def _own(page_path: str, ids: list[str]) -> str:
    """The page's path with its ids as {session}."""
    return "/".join(ID if s in ids else s for s in page_path.split("/"))


def history(body: str, sent: str, reply: str | None) -> HistoryShape | None:
    """The shape of a server-rendered history holding ``sent``: the message element (the lowest
    element around the text with siblings of its tag), the selector picking it and its siblings,
    the attribute telling the sent message from the reply's element, their order. None: the text
    is not in the page, or no element set tells the two speakers apart."""
    root = document(body)
    holders = [n for n in root.elements() if sent in n.text()]
    # Each place the text shows (the log; a sidebar titling the conversation by its first
    # message), from its deepest element up, the last place first.
    leaves = [n for n in holders if not any(c in holders for c in n.children)]
    for leaf in reversed(leaves):
        node: Node | None = leaf
        while node is not None and node.parent is not None:
            if (shape := _shape(root, node, sent, reply)) is not None:
                return shape
            node = node.parent
    return None


def _shape(root: Node, mine: Node, sent: str, reply: str | None) -> HistoryShape | None:
    parent = mine.parent
    assert parent is not None
    kin = [c for c in parent.children if isinstance(c, Node) and c.tag == mine.tag and c is not mine]
    others = [c for c in kin if c.text() and sent not in c.text()]
    if not others:
        return None
    theirs = next((c for c in others if reply and reply in c.text()), None) or _nearest(parent, mine, others)
    role = _role(mine, theirs)
    if role is None:
        return None
    items = _items(root, parent, mine, [mine, *kin])
    if items is None:
        return None
    content = "" if mine.text() == sent else _content(mine, sent)
    if content is None:  # the element holds more than the message (a label, a time) and no part of it just that
        return None
    order = "oldest_first" if parent.children.index(mine) < parent.children.index(theirs) else "newest_first"
    return HistoryShape(items, "html", role[0], content, order=order, user_role=role[1], assistant_role=role[2])


def _nearest(parent: Node, mine: Node, others: list[Node]) -> Node:
    """The reply's element where its text is unknown: the kin next to the sent message's."""
    at = parent.children.index(mine)
    return min(others, key=lambda c: (abs(parent.children.index(c) - at), parent.children.index(c) < at))


def _role(mine: Node, theirs: Node) -> tuple[str, str, str] | None:
    """(attribute, the sent message's value, the reply's) of the attribute telling them apart."""
    a, b = set(mine.attrs.get("class", "").split()), set(theirs.attrs.get("class", "").split())
    only_a, only_b = sorted(a - b), sorted(b - a)
    if only_a and only_b:
        return "class", _pick(only_a), _pick(only_b, user=False)
    for name, value in mine.attrs.items():
        if name not in ("class", "id", "style") and theirs.attrs.get(name) not in (None, value) and value:
            return name, value, theirs.attrs[name]
    return None


def _pick(tokens: list[str], user: bool = True) -> str:
    hits = [t for t in tokens if bool(USER_WORDS.search(t)) == user]
    return (hits or tokens)[0]


def _items(root: Node, parent: Node, mine: Node, kin: list[Node]) -> str | None:
    """A selector picking exactly the message elements (``kin``), tried from the plainest."""
    shared = Counter(t for k in kin for t in set(k.attrs.get("class", "").split()))
    common = [t for t, n in shared.items() if n == len(kin)]
    scope = f"#{parent.attrs['id']} > " if parent.attrs.get("id") else ""
    tries = [f"{mine.tag}.{t}" for t in common] + [f"{scope}{mine.tag}.{t}" for t in common]
    tries += [f"{scope}{mine.tag}"] if scope else []
    parent_cls = parent.attrs.get("class", "").split()
    tries += [f"{parent.tag}.{parent_cls[0]} > {mine.tag}"] if parent_cls else []
    for s in tries:
        try:
            if set(map(id, select(root, selector(s)))) == set(map(id, kin)):
                return s
        except ValueError:  # a class token outside the subset's names
            continue
    return None


def _content(mine: Node, sent: str) -> str | None:
    """A selector inside the message element for its text, where the element holds more (a
    "You:" label, a time): the deepest descendant whose text is the message's, by its class."""
    exact = [n for n in mine.elements() if n.text() == sent and n.attrs.get("class")]
    return f".{exact[-1].attrs['class'].split()[0]}" if exact else None


def order_of_two(d: Draft, body: str, shape: HistoryShape, first: str, second: str) -> bool:
    """The rendered order from a page showing two messages sent one after the other. False: not
    told (either not shown)."""
    try:
        texts = [t for _, t in html_items(body, shape.items, shape.role_field, shape.content_field, ())]
    except ValueError:
        return False
    return order_from(d, texts, first, second)
