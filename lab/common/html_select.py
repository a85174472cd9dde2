"""A history the app renders in HTML, not in JSON ([history] format = "html"): a server-rendered
page (Jinja, EJS, Django templates, an htmx app) re-rendered from the store on every load, which
is where its users see the conversation after a refresh. The elements a CSS selector picks
(``items``) are the messages, in document order; an attribute of each (``role_field``: a data
attribute's value, or ``class`` -- the class token naming its speaker) says whose; its text
(or the text of ``content_field``, a selector inside it) is the message.

The stdlib's tokenizer and a small selector subset -- type, ``.class``, ``#id``, ``[attr]``,
``[attr=v]`` (also ``~= ^= $= *=``), descendant and ``>`` combinators, ``,`` groups -- so that a
page of any stack reads alike without a browser per poll. A pseudo-class is refused by name."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
NO_TEXT = {"script", "style", "template", "head", "title"}
# An open element of these closes when a sibling of its kind starts (HTML's optional end tags:
# templates that leave </li> or </p> out still give one element a message).
SELF_CLOSING_SIBLINGS = {"li": {"li"}, "p": {"p"}, "dt": {"dt", "dd"}, "dd": {"dt", "dd"}, "tr": {"tr"}}
SELF_CLOSING_SIBLINGS |= {"td": {"td", "th"}, "th": {"td", "th"}, "option": {"option"}}


@dataclass(eq=False)
class Node:
    tag: str
    attrs: dict[str, str]
    parent: "Node | None" = None
    children: "list[Node | str]" = field(default_factory=list)

    def text(self) -> str:
        """Its text as a reader sees it: script and style left out, white space collapsed."""
        parts: list[str] = []
        _texts(self, parts)
        return " ".join("".join(parts).split())

    def elements(self) -> "list[Node]":
        """Every element below it, in document order."""
        out: list[Node] = []
        for c in self.children:
            if isinstance(c, Node):
                out.append(c)
                out += c.elements()
        return out


def _texts(node: Node, parts: list[str]) -> None:
    for c in node.children:
        if isinstance(c, str):
            parts.append(c)
        elif c.tag not in NO_TEXT:
            if c.tag in ("br", "p", "div", "li"):
                parts.append(" ")
            _texts(c, parts)


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.open = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        closes = SELF_CLOSING_SIBLINGS.get(self.open.tag)
        if closes and tag in closes and self.open.parent is not None:
            self.open = self.open.parent
        node = Node(tag, {k: v or "" for k, v in attrs}, self.open)
        self.open.children.append(node)
        if tag not in VOID:
            self.open = node

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.open.children.append(Node(tag, {k: v or "" for k, v in attrs}, self.open))

    def handle_endtag(self, tag: str) -> None:
        node: Node | None = self.open
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:  # an unmatched end tag is ignored
            self.open = node.parent

    def handle_data(self, data: str) -> None:
        self.open.children.append(data)


def document(body: str) -> Node:
    tree = _Tree()
    tree.feed(body)
    tree.close()
    return tree.root


# ---------------------------------------------------------------------------- selectors
_ATTR = re.compile(r"""\[\s*([\w:-]+)\s*(?:([~^$*]?=)\s*(?:"([^"]*)"|'([^']*)'|([^\]\s]+))\s*)?\]""")
_SIMPLE = re.compile(r"[.#][\w-]+|\*|[A-Za-z][\w-]*")


@dataclass(frozen=True)
class Compound:
    tag: str | None
    ids: tuple[str, ...]
    classes: tuple[str, ...]
    attrs: tuple[tuple[str, str | None, str], ...]  # (name, operator or None, value)

    def matches(self, n: Node) -> bool:
        if self.tag is not None and n.tag != self.tag:
            return False
        tokens = n.attrs.get("class", "").split()
        if any(c not in tokens for c in self.classes) or any(n.attrs.get("id") != i for i in self.ids):
            return False
        return all(name in n.attrs and _attr_ok(n.attrs[name], op, v) for name, op, v in self.attrs)


def _attr_ok(have: str, op: str | None, want: str) -> bool:
    if op is None:
        return True
    return {
        "=": have == want,
        "~=": want in have.split(),
        "^=": bool(want) and have.startswith(want),
        "$=": bool(want) and have.endswith(want),
        "*=": bool(want) and want in have,
    }[op]


Complex = list[tuple[str, Compound]]  # (combinator before it: "" first, " " or ">"), rightmost last


def selector(text: str) -> list[Complex]:
    """A selector group; ValueError names what is outside the subset."""
    groups = [g.strip() for g in text.split(",")]
    if not all(groups):
        raise ValueError(f"{text!r}: an empty selector in the group")
    return [_complex(g) for g in groups]


def _complex(text: str) -> Complex:
    out: Complex = []
    comb = ""
    for tok in re.findall(r">|(?:\[[^\]]*\]|[^\s>\[])+", text):
        if tok == ">":
            if not out or comb == ">":
                raise ValueError(f"{text!r}: '>' needs an element on each side")
            comb = ">"
            continue
        out.append((comb, _compound(tok, text)))
        comb = " "
    if not out or comb == ">":
        raise ValueError(f"{text!r}: '>' needs an element on each side")
    return out


def _compound(part: str, whole: str) -> Compound:
    tag, ids, classes, attrs = None, [], [], []
    rest = part
    while rest:
        if m := _ATTR.match(rest):
            attrs.append((m.group(1), m.group(2), next((g for g in m.groups()[2:] if g is not None), "")))
        elif m := _SIMPLE.match(rest):
            s = m.group(0)
            if s.startswith("."):
                classes.append(s[1:])
            elif s.startswith("#"):
                ids.append(s[1:])
            elif s != "*":
                if tag is not None or rest is not part:
                    raise ValueError(f"{whole!r}: {s!r} -- an element name goes first in its part")
                tag = s.lower()
        else:
            raise ValueError(
                f"{whole!r}: {rest!r} is outside the selectors read here "
                "(element, .class, #id, [attr], [attr=value], descendant, >, ',')"
            )
        rest = rest[m.end() :]
    return Compound(tag, tuple(ids), tuple(classes), tuple(attrs))


def _matches(n: Node, chain: Complex) -> bool:
    comb, last = chain[-1]
    if not last.matches(n):
        return False
    if len(chain) == 1:
        return True
    up = n.parent
    while up is not None and up.tag != "#root":
        if _matches(up, chain[:-1]):
            return True
        if comb == ">":
            return False
        up = up.parent
    return False


def select(root: Node, group: list[Complex]) -> list[Node]:
    """The elements any of the group's selectors picks, in document order."""
    return [n for n in root.elements() if any(_matches(n, c) for c in group)]


def role_of(n: Node, role_field: str, roles: tuple[str, ...]) -> str:
    """The message's speaker: the attribute's value; for ``class``, the one of ``roles`` among
    its tokens (else its whole class)."""
    return role_value(n.attrs.get(role_field, ""), role_field, roles)


def role_value(value: str, role_field: str, roles: tuple[str, ...]) -> str:
    """The speaker an attribute's value names (the server's HTML and the page's DOM alike)."""
    if role_field == "class":
        found = [r for r in roles if r in value.split()]
        return found[0] if len(found) == 1 else value
    return value.strip()


def html_items(body: str, items: str, role_field: str, content: str, roles: tuple[str, ...]) -> list[tuple[str, str]]:
    """(role, text) of each message element, in document order. ``content``: a selector inside
    the element for its text ("" for the element's own)."""
    root = document(body)
    inner = selector(content) if content else None
    out: list[tuple[str, str]] = []
    for n in select(root, selector(items)):
        text_of = n
        if inner is not None:
            found = select(n, inner)
            if not found:
                raise ValueError(f"a message element has no {content!r} inside: {n.text()[:60]!r}")
            text_of = found[0]
        out.append((role_of(n, role_field, roles), text_of.text()))
    return out


def hidden_inputs(body: str, field: str | None = None) -> dict[str, str]:
    """The hidden inputs (name -> value) of the page's form holding ``field`` (else of every form
    that posts): what a browser sends with the message besides it -- a CSRF token, an id."""
    root = document(body)
    forms = select(root, selector("form, [hx-post], [data-hx-post]"))
    if field is not None:
        forms = [f for f in forms if any(x.attrs.get("name") == field for x in f.elements())] or forms
    out: dict[str, str] = {}
    for f in forms:
        for x in select(f, selector('input[type="hidden"][name]')):
            out.setdefault(x.attrs["name"], x.attrs.get("value", ""))
    return out


def metas(body: str) -> dict[str, str]:
    """The page's ``<meta name=... content=...>`` tags (name -> content): where Rails, Laravel,
    Phoenix and Flask-WTF pages keep the CSRF token their scripts send in a header."""
    return {n.attrs["name"]: n.attrs.get("content", "") for n in select(document(body), selector("meta[name]"))}
