"""`lab init`: draft a target spec for an app the lab did not write. The app is started as
`lab investigate` starts it (its own process group, the lab's Redis through Toxiproxy), probed
(lab.investigate.draft.probe), and the draft written with the evidence of each value. Then the
draft, unedited, goes through `lab investigate`'s contract check: one send, one read."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from lab.common import redact
from lab.common.config import LabConfig
from lab.common.errors import UsageError
from lab.common.locks import exclusive
from lab.common.signals import interrupt_on
from lab.investigate.target import redaction
from lab.investigate.spec import parse as sp
from lab.investigate.target import process as target
from lab.investigate.draft.infer import Draft
from lab.investigate.draft.probe import probe
from lab.investigate.draft.model import propose

EXIT_CHECKED, EXIT_CHECK_FAILED, EXIT_INCOMPLETE = 0, 1, 3
DEFAULT_ENV = {"REDIS_URL": "{redis_url}", "PORT": "{port}"}


@dataclass
class Init:
    command: str
    port: int
    out: Path
    cwd: Path
    name: str
    env: dict[str, str] = field(default_factory=dict)
    check: bool = True
    ask: bool = False  # ask what the probe could not infer (stdin: a terminal, or --ask)
    stdout: TextIO = field(default_factory=lambda: sys.stdout)
    # --compose: the app in its own compose file, [start]'s compose keys (lab.investigate.spec.compose)
    compose: dict[str, Any] | None = None

    def say(self, msg: str) -> None:
        print(msg, file=self.stdout, flush=True)

    def run(self, cfg: LabConfig) -> int:
        d = self._started()
        spec = self._provisional(d)
        from lab.investigate.target.link import link_for_spec, model_for

        link = link_for_spec(spec, cfg)
        busy = UsageError(f"a lab investigate or lab init is running on {link.run_dir}", "wait for it to end")
        self.say(
            f"lab init: starting {self._what()} on port {self.port}, "
            + ("its Redis through the lab's Toxiproxy" if self.compose else "with the lab's Redis (through Toxiproxy)")
        )
        # The probe's login values and token (registered as it logs in) are kept out of the
        # terminal and the target's log (an app may print its login bodies): lab.investigate.target.redaction.
        with (
            exclusive(link.run_dir / "investigate.lock", busy),
            redaction.kept_secret(spec, link.run_dir),
            interrupt_on((signal.SIGTERM, signal.SIGHUP)),
        ):
            self.stdout = redact.writer(self.stdout)  # bound before the run: sys.stdout's Writer misses it
            with (
                link,
                model_for(spec, link, self.say) as model,
                target.running(
                    spec, link.run_dir, cfg.host, cfg.ports["redis_proxy"], link, model.url if model else None
                ),
            ):
                url, dbs = link.cfg.redis_url, dict[str, int]()
                probe(
                    spec.http.base_url,
                    d,
                    os.environ.get,
                    lambda text: _keys(url, dbs, text),
                    lambda k: _pttl(url, dbs, k),
                )
        if d.unknown and self.ask:
            self._ask(d)
        # The draft names the login's variables ({env:NAME}), never their values; redacted all the
        # same (the secrets stay known after the scope), as every file of the run is.
        self.out.write_text(redact.text(render(self.name, d, self._header(d))))
        return self._written(d, cfg)

    def _written(self, d: Draft, cfg: LabConfig) -> int:
        """What the draft holds and what it lacks, then its contract check (unless --no-check)."""
        self.say(f"wrote {self.out}:")
        for key, why in d.why.items():
            if why:
                self.say(f"  guessed {key} = {d.sections[key.split('.')[0]][key.split('.')[1]]!r}  ({why})")
        for note in d.notes:
            self.say(f"  note: {note}")
        if d.unknown:
            self.say("could not infer (the spec says so where each goes; give it, then run lab init --check-only):")
            self.say("\n".join(f"  - {k}: {need}" for k, need in d.unknown.items()))
            return EXIT_INCOMPLETE
        return self.contract(cfg) if self.check else EXIT_CHECKED

    def contract(self, cfg: LabConfig) -> int:
        """The draft, unedited, through the contract check of `lab investigate`."""
        from lab.investigate.run.investigation import Investigation

        spec = sp.load(self.out)
        self.say(f"checking {self.out} with lab investigate's contract check (one send, one read):")
        inv = Investigation(spec, cfg, [], 1, Path("reports"), 0, check_only=True, out=self.stdout)
        inv.kind = "init"
        try:
            code = inv.run()
        except target.TargetError as exc:  # the draft answered outside itself: the check failed
            self.say(f"  {exc.message}")
            code = EXIT_CHECK_FAILED
        self.say(
            f"{self.out} passes the contract check: lab investigate --target {self.out}"
            if code == EXIT_CHECKED
            else f"{self.out} does not pass the contract check: fix what the line above says"
        )
        return EXIT_CHECKED if code == EXIT_CHECKED else EXIT_CHECK_FAILED

    def _ask(self, d: Draft) -> None:
        """What the probe could not infer, asked one by one (an empty answer leaves it out)."""
        self.say("lab init could not infer these; answer each (empty: leave it out):")
        for key, need in list(d.unknown.items()):
            self.say(f"  {key}: {need}")
            try:
                answer = input(f"  {key} = ").strip()
            except EOFError:
                return
            if answer:
                section, _, name = key.partition(".")
                d.put(section, name, answer, "given at lab init's question")

    def _what(self) -> str:
        if self.compose:
            return f"the service {self.compose['service']!r} of {self.compose['compose']}"
        return self.command

    def _started(self) -> Draft:
        d = Draft()
        if self.compose:
            for k, v in self.compose.items():
                d.put("start", k, v, "")
            if self.env:
                d.put("start", "env", dict(self.env), "")
            d.put("http", "port", self.port, "")
            return d
        d.put("start", "command", self.command, "")
        d.put("start", "cwd", os.path.relpath(self.cwd, self.out.resolve().parent), "")
        d.put("start", "env", {**DEFAULT_ENV, **self.env}, "")
        d.put("http", "port", self.port, "")
        calls = propose(self.command, self.cwd, self.env)
        if calls is not None:  # the probe's own messages go to the stand-in, not a real provider
            d.put("model", "protocols", calls[0], calls[1] + ": the app calls a model (docs/model.md)")
        return d

    def _provisional(self, d: Draft) -> sp.Spec:
        """A spec for starting the app only: the routes are what the probe finds out."""
        data = {
            "name": self.name,
            "start": {k: v for k, v in d.sections["start"].items()},
            "http": {"port": self.port, "cookie": "unknown"},
            "chat": {"path": "/"},
            "history": {"path": "/"},
            **({"model": dict(d.sections["model"])} if "model" in d.sections else {}),
        }
        return sp.parse(data, self.out)

    def _header(self, d: Draft) -> list[str]:
        return [
            f"Drafted by lab init on {time.strftime('%Y-%m-%d')} for {self._what()!r} on port {self.port}.",
            "Each value says what it was guessed from; check them, then:",
            f"  lab investigate --target {self.out}",
            "The format: docs/investigate.md ('The target spec (TOML)') and docs/app-shapes.md.",
            *(["INCOMPLETE: the lines marked COULD NOT INFER need a value."] if d.unknown else []),
            *(f"Note: {n}" for n in d.notes),
        ]


def _keys(redis_url: str, dbs: dict[str, int], text: str) -> list[str]:
    """The keys in the lab's Redis whose values hold ``text`` (the Redis holds only what the
    probe made the app write), in whichever db the app chose -- remembered in ``dbs`` for
    their PTTL; the run reads that db once its contract check finds the key there."""
    from lab.investigate.evidence.key_home import holders

    found = holders(redis_url, text)
    dbs.update({h.key: h.db for h in found})
    return [h.key for h in found]


def _pttl(redis_url: str, dbs: dict[str, int], key: str) -> int:
    import redis

    from lab.investigate.evidence.key_home import with_db

    r = redis.Redis.from_url(with_db(redis_url, dbs.get(key, 0)), socket_timeout=5)
    try:
        return int(r.pttl(key))
    finally:
        r.close()


# ---------------------------------------------------------------- the draft as TOML
# Every value with the evidence it was chosen on; what could not be inferred left as a commented
# line saying what to give.
ORDER = ("start", "http", "auth", "session", "transport", "chat", "stream", "history", "redis", "model")
_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(value(x) for x in v) + "]"
    return json.dumps(str(v))  # a TOML basic string: JSON's escapes are TOML's


def _key(k: str) -> str:
    return k if _BARE.match(k) else json.dumps(k)


def render(name: str, d: Draft, header: list[str]) -> str:
    out = [f"# {line}" if line else "#" for line in header]
    out += ["", f"name = {value(name)}"]
    sections = list(ORDER) + sorted(set(d.sections) - set(ORDER))
    for section in sections:
        items = d.sections.get(section, {})
        missing = {k.split(".", 1)[1]: need for k, need in d.unknown.items() if k.split(".", 1)[0] == section}
        if not items and not missing:
            continue
        out += ["", f"[{section}]"]
        tables = {k: v for k, v in items.items() if isinstance(v, dict) and k == "env"}  # [start.env]
        for k, v in items.items():
            if k in tables:
                continue
            why = d.why.get(f"{section}.{k}", "")
            out.append(f"{_key(k)} = {value(v)}" + (f"   # {why}" if why else ""))
        for k, need in missing.items():
            out.append(f"# {_key(k)} = ?   # COULD NOT INFER: {need}")
        for k, v in tables.items():
            out.append(f"[{section}.{k}]")
            out += [f"{_key(n)} = {value(x)}" for n, x in v.items()]
    return "\n".join(out) + "\n"
