"""What a command that starts a target keeps secret, and where -- in one place for `lab
investigate`, `lab window --target`, `lab init` and `pytest --lab-target`: the values of the
variables the spec's [auth] names, and whatever the run registers while it lasts (a login's
token; the values `lab init`'s probe logs in with, lab.investigate.draft.probe), are redacted
from the terminal and scrubbed, when the run ends, from its report folders and from the
target's log in the link's run folder (an app may print its login bodies there). The rest of
that run folder holds no bodies: Redis runs without persistence (no dump of the app's data),
and the Redis / Toxiproxy logs carry none."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from lab.common import redact
from lab.investigate.target.process import NAME

if TYPE_CHECKING:
    from lab.investigate.spec.parse import Spec

TARGET_LOG = f"{NAME}.log"  # the target's output, in the link's run folder


def secret_envs(spec: Spec | None) -> tuple[str, ...]:
    """The variables whose values are the login's secrets ([auth]'s body and header_env)."""
    return spec.auth.secret_envs if spec is not None and spec.auth is not None else ()


@contextmanager
def kept_secret(spec: Spec | None, run_dir: Path, *reports: Path, terminal: bool = True) -> Iterator[None]:
    """For one run against ``spec``'s target, whose link keeps its files in ``run_dir``:
    ``reports`` (folders or files) and the target's log are scrubbed when it ends, however it
    ends. Enter it outside the target's start, so the app has stopped writing its log by then.
    ``terminal``: redact sys.stdout / sys.stderr while it lasts (not in a pytest session)."""
    with redact.scope(secret_envs(spec), [*reports, run_dir / TARGET_LOG], terminal=terminal):
        yield
