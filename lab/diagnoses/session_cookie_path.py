"""The session cookie's Path leaves out the history route: the browser sends the session with
every message and never with the history read, so a refresh shows an empty conversation while
Redis holds every turn."""

from __future__ import annotations

from typing import Any

from lab.diagnoses import Diagnosis, Evidence, few, ids, register


@register("session_cookie_path", needs=("cookie_scope", "key"), explains_loss=True)
def diagnose(ev: Evidence) -> Diagnosis | None:
    # Evidence nothing else leaves: the cookie's own Path attribute, read from the browser, does
    # not cover the history route -- and the history hid turns the key holds. A capped or
    # filtered read (history_hides_stored), a stale cache or a lost write leave the second part
    # too, never the first; a cookie that covers the route never counts here.
    pool = [j for j in ev.judged if j.trial.cookie_scope is not None and j.trial.redis_final is not None]
    hit = [j for j in pool if scoped_away(j.trial.cookie_scope) and j.hidden_stored]
    if not hit:
        return None
    scope = hit[0].trial.cookie_scope or {}
    return Diagnosis(
        "session_cookie_path",
        f"the session cookie is scoped to Path={scope.get('path')}, which does not cover the history "
        f"route {scope.get('history_path')}: the browser never sends the session to the history read, "
        "so every refresh shows an empty conversation (nothing is lost: Redis holds it)",
        f"in {len(hit)}/{len(pool)} trials the page's history hid turns its Redis key holds, and the "
        f"cookie {scope.get('name')!r} carried Path={scope.get('path')} (trials {few(ids(hit))})",
        len(hit),
        len(pool),
        ids(hit),
    )


def scoped_away(scope: dict[str, Any] | None) -> bool:
    return scope is not None and scope.get("covers_history") is False
