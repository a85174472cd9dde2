"""`lab k8s`: bad input is refused before anything starts, naming the bad value and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.cli import main
from lab.common.errors import UsageError


def test_a_folder_without_manifests_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["k8s", "check", "--manifests", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"--manifests {tmp_path}: no *.yaml files there" in err and "deploy/k8s" in err


def test_yaml_that_is_not_deploy_k8s_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "x.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n")
    from lab.k8s import run

    node = run.Node(tmp_path / "state", tmp_path / "bins")
    with pytest.raises(UsageError, match="not deploy/k8s.s objects: no Job/chaoslab-shards, .* among ConfigMap/other"):
        run._rendered(tmp_path, 3, 1, 1, node)
    (tmp_path / "x.yaml").write_text("kind: ConfigMap\n")
    with pytest.raises(UsageError, match="x.yaml holds a document without kind and metadata.name"):
        run._rendered(tmp_path, 3, 1, 1, node)
    (tmp_path / "x.yaml").write_text("kind: [\n")
    with pytest.raises(UsageError, match="x.yaml is not YAML"):
        run._rendered(tmp_path, 3, 1, 1, node)


@pytest.mark.parametrize("args", [["k8s", "run", "--shards", "0"], ["k8s", "run", "--shards", "x"], ["k8s", "warp"]])
def test_bad_numbers_and_actions_exit_2(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    assert "usage: lab k8s" in capsys.readouterr().err
