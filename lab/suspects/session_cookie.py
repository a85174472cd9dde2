"""The session cookie set without Max-Age/Expires: it ends with the browser session."""

from __future__ import annotations

import ast
import re

from lab.suspects import Source, Suspect, _facts, register

_LASTING = re.compile(r"max-age|expires", re.I)


def _literal_text(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return None


@register("session_cookie", diagnoses=("session_cookie",), mechanism="the session cookie set without max_age/expires")
def check(src: Source) -> list[Suspect]:
    out = []
    for m in src.modules:
        for n in ast.walk(m.tree):
            if not isinstance(n, ast.Call):
                continue
            if _facts.tail(n) == "set_cookie" and len(n.args) < 3:  # 3rd positional = max_age
                kws = {k.arg: k.value for k in n.keywords}
                if None in kws:  # **options: cannot tell
                    continue
                lasting = [kws[k] for k in ("max_age", "expires") if k in kws]
                if not lasting or all(isinstance(v, ast.Constant) and v.value is None for v in lasting):
                    out.append(
                        src.suspect(
                            "session_cookie",
                            m,
                            n,
                            "set_cookie without max_age or expires: "
                            "a browser restart drops it, and with it the conversation",
                        )
                    )
            elif _facts.tail(n) in ("send_header", "add_header") and len(n.args) >= 2:
                name, value = _literal_text(n.args[0]), _literal_text(n.args[1])
                if name and name.lower() == "set-cookie" and value is not None and not _LASTING.search(value):
                    out.append(
                        src.suspect(
                            "session_cookie",
                            m,
                            n,
                            "a Set-Cookie header without Max-Age or Expires: a browser restart drops it",
                        )
                    )
    return out
