"""The wrapper module that builds Kubernetes' programs from the Go module proxy alone."""

from __future__ import annotations

import pytest

from lab.common.errors import LabError
from lab.k8s import binaries

PARENT = """module k8s.io/kubernetes

go 1.24.0

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/client-go => ./staging/src/k8s.io/client-go
\tk8s.io/kube-openapi => k8s.io/kube-openapi v0.0.0-2025
)
"""


def test_each_staging_module_is_replaced_by_its_published_release() -> None:
    gomod = binaries.wrapper_gomod(PARENT, "v1.34.4")
    assert "require k8s.io/kubernetes v1.34.4" in gomod
    assert "\tk8s.io/api => k8s.io/api v0.34.4\n" in gomod
    assert "\tk8s.io/client-go => k8s.io/client-go v0.34.4\n" in gomod
    assert "kube-openapi" not in gomod  # not a staging module: the parent's own pin holds


def test_a_parent_without_staging_modules_is_refused() -> None:
    with pytest.raises(LabError, match="no staging module"):
        binaries.wrapper_gomod("module k8s.io/kubernetes\n", "v1.34.4")


def test_release_versions() -> None:
    assert binaries.staging_version("v1.34.4") == "v0.34.4"
    assert binaries.staging_version("v1.36.10") == "v0.36.10"
    with pytest.raises(ValueError):
        binaries.staging_version("v2.0.0")


def test_the_programs_report_the_release() -> None:
    flags = binaries.ldflags("v1.34.4")
    assert "-X k8s.io/component-base/version.gitVersion=v1.34.4" in flags
    assert "-X k8s.io/client-go/pkg/version.gitMinor=34" in flags
    tools = binaries.tools_go()
    assert tools.startswith("//go:build tools")
    assert all(f'_ "k8s.io/kubernetes/cmd/{p}"' in tools for p in binaries.PROGRAMS)


def test_a_set_counts_as_built_only_when_whole(tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder = binaries.bin_dir(tmp_path)
    folder.mkdir(parents=True)
    for name in binaries.PROGRAMS[:-1]:
        (folder / name).write_text("")
    assert not binaries.built(tmp_path)
    (folder / binaries.PROGRAMS[-1]).write_text("")
    assert binaries.built(tmp_path)
