"""An app written apart from the lab (examples/django_chat: Django on gunicorn, its CSRF check on,
the conversation's id inside its signed session cookie): before [http] csrf_cookie every POST of
the lab's page was refused 403 and lab init found no chat route; before the `*` key its TTL rules
went unjudged (2026-12-06). An EXPIRE sent only for a new list -> ttl_not_renewed on the key
found by what it holds; a swallowed store error -> acked_write_refused; the app without them:
nothing under the same faults."""

from __future__ import annotations

from pathlib import Path

from tests.e2e.investigating import diagnosed_then_silent
from tests.helpers import ROOT

DJANGO = ROOT / "examples" / "django.toml"
ONLY = ("--only", "none|write_refused", "--turns", "3", "--trials", "2")


def test_a_csrf_checked_app_s_bugs_and_its_silence_without_them(tmp_path: Path) -> None:
    found, _, out = diagnosed_then_silent(tmp_path, DJANGO, ONLY, "expire_new_only,swallow")
    assert {"ttl_not_renewed", "acked_write_refused"} <= set(found), out
    assert set(found) <= {"ttl_not_renewed", "acked_write_refused", "acked_while_unreachable"}, out
