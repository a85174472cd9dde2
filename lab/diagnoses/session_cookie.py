"""The session cookie does not survive a browser restart."""

from __future__ import annotations

from lab.diagnoses import Diagnosis, Evidence, few, ids, register


@register("session_cookie", needs=("browser_restart", "cookie"))
def diagnose(ev: Evidence) -> Diagnosis | None:
    pool = [j for j in ev.judged if j.trial.refresh == "browser_restart"]
    # Evidence of the cookie, not of loss: the old session still holds the conversation.
    hit = [
        j
        for j in pool
        if j.result.amnesia and not j.result.page_failed and j.trial.cookie_lost_at_restart and not j.lost_user
    ]
    if not hit:
        return None
    return Diagnosis(
        "session_cookie",
        "the session cookie does not survive a browser restart (no Max-Age/Expires): the user "
        "comes back to an empty conversation",
        f"after a browser restart the page showed none of the acknowledged turns in {len(hit)}/{len(pool)} "
        f"trials; the cookie was a session cookie, and the conversation is still stored under the old "
        f"one (trials {few(ids(hit))})",
        len(hit),
        len(pool),
        ids(hit),
    )
