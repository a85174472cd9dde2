"""Kubernetes' programs built from the Go module proxy, once per machine (kept in the lab's cache).

The k8s.io/kubernetes module's own go.mod points every k8s.io/<name> library at
./staging/src/k8s.io/<name>, which its module zip does not hold; a wrapper module requires it and
replaces each of those with the published library of the same release (v0.34.x for v1.34.x).
Measured here (2 cores, 2026-12-04): 6 min 14 s with empty Go module and build caches (user 7 min
50 s), 6 min 0 s with the module cache warm; a slower proxy or machine may take longer.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from lab.common.errors import LabError

KUBERNETES = "v1.34.4"
PROGRAMS = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet", "kubectl")
_STAGING = re.compile(r"^\s*(k8s\.io/[\w.-]+)\s*=>\s*\./staging/", re.MULTILINE)


def staging_version(kubernetes: str = KUBERNETES) -> str:
    """The libraries' tag of one release: v1.34.4 -> v0.34.4."""
    major, minor, patch = kubernetes.lstrip("v").split(".")
    if major != "1":
        raise ValueError(f"not a Kubernetes 1.x release: {kubernetes}")
    return f"v0.{minor}.{patch}"


def wrapper_gomod(parent_gomod: str, kubernetes: str = KUBERNETES) -> str:
    """go.mod of a module that builds k8s.io/kubernetes' commands from the proxy alone."""
    names = _STAGING.findall(parent_gomod)
    if not names:
        raise LabError(f"k8s.io/kubernetes@{kubernetes}'s go.mod names no staging module", "is the release right?")
    version = staging_version(kubernetes)
    replaces = "".join(f"\t{n} => {n} {version}\n" for n in names)
    return f"module chaoslab.local/k8sbuild\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes {kubernetes}\n\nreplace (\n{replaces})\n"


def tools_go() -> str:
    imports = "".join(f'\t_ "k8s.io/kubernetes/cmd/{p}"\n' for p in PROGRAMS)
    return f"//go:build tools\n\npackage k8sbuild\n\nimport (\n{imports})\n"


def ldflags(kubernetes: str = KUBERNETES) -> str:
    """The version the programs report (kubectl version, the node's kubelet version)."""
    minor = kubernetes.split(".")[1]
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        for key, value in (
            ("gitVersion", kubernetes),
            ("gitMajor", "1"),
            ("gitMinor", minor),
            ("gitTreeState", "clean"),
        ):
            flags.append(f"-X {pkg}.{key}={value}")
    return " ".join(flags)


def bin_dir(cache: Path, kubernetes: str = KUBERNETES) -> Path:
    return cache / "k8s" / kubernetes / "bin"


def built(cache: Path) -> bool:
    return all((bin_dir(cache) / p).is_file() for p in PROGRAMS)


def ensure(cache: Path, say: Callable[[str], None] = print) -> Path:
    """The folder of the five programs, built first if this machine has not built them."""
    if built(cache):
        return bin_dir(cache)
    go = shutil.which("go")
    if go is None:
        raise LabError("building Kubernetes needs Go (1.24 or later)", "install it: apt-get install -y golang-go")
    say(
        f"building Kubernetes {KUBERNETES} ({', '.join(PROGRAMS)}) from the Go module proxy, once: about 6 min on 2 cores"
    )
    src = cache / "k8s" / KUBERNETES / "src"
    src.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}

    def go_run(*args: str, timeout_s: float) -> str:
        res = subprocess.run([go, *args], cwd=src, env=env, capture_output=True, text=True, timeout=timeout_s)
        if res.returncode != 0:
            raise LabError(f"go {args[0]} failed: {res.stderr.strip()[-600:]}", "is the Go module proxy reachable?")
        return res.stdout

    info = json.loads(go_run("mod", "download", "-json", f"k8s.io/kubernetes@{KUBERNETES}", timeout_s=900))
    (src / "go.mod").write_text(wrapper_gomod(Path(info["GoMod"]).read_text()))
    (src / "tools.go").write_text(tools_go())
    go_run("mod", "tidy", timeout_s=900)
    partial = bin_dir(cache).with_name("bin.part")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    go_run("build", "-trimpath", "-ldflags", ldflags(), "-o", f"{partial}/", *(f"k8s.io/kubernetes/cmd/{p}" for p in PROGRAMS),
           timeout_s=3600)  # fmt: skip
    shutil.rmtree(bin_dir(cache), ignore_errors=True)
    partial.rename(bin_dir(cache))  # only a complete set is ever used
    return bin_dir(cache)
