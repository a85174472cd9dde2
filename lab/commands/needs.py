"""What a run needs on this machine, found the way the lab's runs look for it, or installed: the
code behind `lab doctor` and `lab setup` -- and so `make setup`, which calls `lab setup` -- as
`playwright install` is for browsers. Every need that is missing says the one command that
installs it; `lab setup` runs that command where it can (apt as root, `go install` where Go is).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab.common.config import LabConfig
from lab.common.errors import LabError, UsageError
from lab.stack.native import TOXIPROXY_VERSION

TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2"
# apt-get update once per machine boot is enough; the lists are fresh enough for one session.
APT_STAMP = Path("/var/lib/apt/periodic/lab-updated")

Say = Callable[[str], None]


@dataclass(frozen=True)
class Need:
    """One program a run needs. ``debs``: (command, Debian package) pairs apt installs it from
    (empty: built with Go); ``required``: every run needs it, else compose targets only."""

    name: str
    why: str
    find: Callable[[LabConfig], str | None]
    debs: tuple[tuple[str, str], ...] = ()
    required: bool = True

    def missing_debs(self) -> list[str]:
        return [pkg for cmd, pkg in self.debs if not _on_path(cmd)]


def _on_path(cmd: str) -> str | None:
    # As the runs look: PATH; Debian's daemons (dockerd) also in /usr/sbin, which a non-root PATH
    # often lacks (lab.stack.engine starts it from there).
    return shutil.which(cmd) or (str(Path("/usr/sbin") / cmd) if (Path("/usr/sbin") / cmd).is_file() else None)


def _toxiproxy(cfg: LabConfig) -> str | None:
    path = cfg.toxiproxy_server
    if not path.is_file():
        return None
    try:
        out = subprocess.run([str(path), "-version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    return f"{TOXIPROXY_VERSION} at {path}" if TOXIPROXY_VERSION in out else None


def _chromium(cfg: LabConfig) -> str | None:
    from lab.driver.browser import executable

    try:
        return executable()
    except UsageError:
        return None


def _compose(cfg: LabConfig) -> str | None:
    from lab.stack.compose.docker_cli import compose_command

    try:
        return " ".join(compose_command())
    except LabError:
        return None


def _system() -> Need:
    """`lab setup system`: the Debian packages of every run, in one apt-get.
    LAB_SYSTEM_NEEDS="command:package ..." replaces the list (a test names absent ones)."""
    raw = os.environ.get("LAB_SYSTEM_NEEDS")
    debs = tuple((c, p) for c, _, p in (pair.partition(":") for pair in raw.split())) if raw else _SYSTEM_DEBS

    def find(cfg: LabConfig) -> str | None:
        return None if any(not _on_path(c) for c, _ in debs) else ", ".join(c for c, _ in debs)

    return Need("system", "the Debian packages every run needs", find, debs)


# The CNI plugins live outside PATH: the bridge plugin's full path stands for the package.
K8S_DEBS = (("etcd", "etcd-server"), ("containerd", "containerd"), ("runc", "runc"),
            ("/usr/lib/cni/bridge", "containernetworking-plugins"), ("gcc", "gcc"), ("openssl", "openssl"))  # fmt: skip
NEEDS: tuple[Need, ...] = (
    Need(
        "redis-server",
        "the Redis every run stores into",
        lambda cfg: _on_path("redis-server"),
        (("redis-server", "redis-server"),),
    ),
    Need(
        "toxiproxy", f"Toxiproxy {TOXIPROXY_VERSION}, between the app and its Redis (built with go install)", _toxiproxy
    ),
    Need(
        "chromium",
        "Debian's Chromium, the browser the lab drives (its headless shell where installed)",
        _chromium,
        (("chromium-headless-shell", "chromium-headless-shell"), ("chromium", "chromium")),
    ),
    Need(
        "docker",
        "a Docker engine",
        lambda cfg: _on_path("dockerd") or _on_path("docker"),
        (("dockerd", "docker.io"),),
        False,
    ),
    Need(
        "compose",
        "Docker Compose (docker-compose or the docker compose plugin)",
        _compose,
        (("docker-compose", "docker-compose"),),
        False,
    ),
    Need(
        "k8s",
        "what `lab k8s` runs besides Docker and the programs it builds: etcd, containerd, runc, the CNI plugins",
        lambda cfg: None if any(not _on_path(cmd) for cmd, _ in K8S_DEBS) else "etcd, containerd, runc, CNI",
        K8S_DEBS,
        False,
    ),
)
BY_NAME = {n.name: n for n in NEEDS}
_SYSTEM_DEBS = tuple(d for n in NEEDS if n.required for d in n.debs)
# `lab setup` with no name: what `make setup` installs for every run.
ALL = ("system", "toxiproxy")


def go_toolchain() -> str | None:
    """GO may name the toolchain; otherwise PATH, then Go's usual install folder."""
    go = os.environ.get("GO") or shutil.which("go") or "/usr/local/go/bin/go"
    return go if shutil.which(go) else None


def fix(need: Need, cfg: LabConfig) -> str:
    """The one command that installs a missing need here."""
    if need.name == "toxiproxy":
        if go_toolchain() is None:
            return "apt-get install -y golang-go && lab setup toxiproxy   (or use compose mode: --mode compose)"
        return (f"LAB_BIN={cfg.bin_dir} " if "LAB_BIN" in os.environ else "") + "lab setup toxiproxy"
    pkgs = need.missing_debs() or [need.debs[0][1]]
    return ("" if os.geteuid() == 0 else "sudo ") + "apt-get install -y " + " ".join(pkgs)


def check(cfg: LabConfig) -> list[tuple[Need, str | None]]:
    """Each need and where it was found (None: missing)."""
    return [(need, need.find(cfg)) for need in NEEDS]


def names(args: list[str]) -> list[Need]:
    """`lab setup` arguments to needs; a bad name is named with the valid ones."""
    out: list[Need] = []
    for a in args or ["all"]:
        if a not in BY_NAME and a not in ("system", "all"):
            raise UsageError(f"unknown need {a!r}", f"valid: all, system, {', '.join(BY_NAME)}")
        for n in ALL if a == "all" else (a,):
            need = _system() if n == "system" else BY_NAME[n]
            out += [need] if need.name not in {o.name for o in out} else []
    return out


def apt_install(pkgs: list[str], say: Say) -> None:
    if os.geteuid() != 0:
        raise UsageError(
            f"missing {' '.join(pkgs)}", f"as root run: apt-get update && apt-get install -y {' '.join(pkgs)}"
        )
    say(f"installing {' '.join(pkgs)} (apt)")
    if not APT_STAMP.exists() or not any(p.name != "lock" for p in Path("/var/lib/apt/lists").glob("*")):
        _run(["apt-get", "update", "-q"], "apt-get update failed: check the Debian mirror in /etc/apt/sources.list")
        APT_STAMP.parent.mkdir(parents=True, exist_ok=True)
        APT_STAMP.touch()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    _run(
        ["apt-get", "install", "-y", "-q", "--no-install-recommends", *pkgs],
        f"apt-get install {' '.join(pkgs)} failed; try it by hand to see why",
        env,
    )
    # Debian's redis-server may start a system Redis on 6379 where an init system runs; the lab
    # uses its own ports and processes, so it is harmless and left alone.


def go_install_toxiproxy(cfg: LabConfig, say: Say) -> None:
    go = go_toolchain()
    if go is None:
        raise UsageError(
            f"no Go toolchain: Toxiproxy {TOXIPROXY_VERSION} is built with 'go install' (Go >= 1.23)",
            "install Go (apt-get install golang-go), or use compose mode, which runs the official "
            "Toxiproxy image: lab up --mode compose",
        )
    say(f"toxiproxy: go install v{TOXIPROXY_VERSION} (server + cli) into {cfg.bin_dir}")
    cfg.bin_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chaoslab-gobin-") as gobin:
        # Without -X ...Version the binaries report "git" on /version.
        _run(
            [
                go,
                "install",
                "-ldflags",
                f"-X {TOXIPROXY_MODULE}.Version={TOXIPROXY_VERSION}",
                f"{TOXIPROXY_MODULE}/cmd/server@v{TOXIPROXY_VERSION}",
                f"{TOXIPROXY_MODULE}/cmd/cli@v{TOXIPROXY_VERSION}",
            ],
            "go install of Toxiproxy failed: is the Go module proxy reachable? (go env GOPROXY)",
            {**os.environ, "GOBIN": gobin, "GOFLAGS": "-mod=mod"},
        )
        for src, dest in (("server", "toxiproxy-server"), ("cli", "toxiproxy-cli")):
            tmp = cfg.bin_dir / f".{dest}.tmp"
            shutil.copyfile(Path(gobin) / src, tmp)
            tmp.chmod(0o755)
            tmp.replace(cfg.bin_dir / dest)  # a reader sees the old binary or the new one
    if _toxiproxy(cfg) is None:
        raise LabError(f"the built toxiproxy-server does not report {TOXIPROXY_VERSION}", "see go's output above")


def setup(needs: list[Need], cfg: LabConfig, say: Say) -> None:
    """Install what is missing among ``needs``; say what is present. UsageError: what to run."""
    for need in needs:
        found = need.find(cfg)
        debs = need.missing_debs()
        if found and not debs:
            say(f"{need.name}: present ({found})")
        elif need.debs:
            apt_install(debs, say)
            say(f"{need.name}: installed {' '.join(debs)}")
        else:
            go_install_toxiproxy(cfg, say)
            say(f"{need.name}: {TOXIPROXY_VERSION} installed in {cfg.bin_dir}")


def _run(argv: list[str], error: str, env: dict[str, str] | None = None) -> None:
    res = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1800)
    if res.returncode != 0:
        raise LabError(error, (res.stderr or res.stdout).strip()[-600:] or f"{argv[0]} exited {res.returncode}")
