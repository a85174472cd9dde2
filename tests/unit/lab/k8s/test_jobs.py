"""Watching the Jobs: the kubelet's CRI log files, its summary folded into measured use, and a
Job's outcome and a container's exit status from the API's objects."""

from __future__ import annotations

import calendar
import time
from pathlib import Path

from lab.k8s import jobs


def test_log_lines_are_read_from_cri_log_files(tmp_path: Path) -> None:
    folder = tmp_path / "default_chaoslab-shards-0-abc_uid-1" / "runner"
    folder.mkdir(parents=True)
    (folder / "0.log").write_text(
        "2026-12-04T14:44:43.69Z stdout F lab chaos: 41 cells x 5 trials\n"
        "2026-12-04T14:44:58.67Z stderr F [####....] 25/70 trials  ETA 0m26s  a|b: 0 failed\n"
    )
    (tmp_path / "default_other_uid-2" / "runner").mkdir(parents=True)
    lines = jobs.log_lines(tmp_path, "chaoslab-shards-0-abc", "runner")
    assert lines == ["lab chaos: 41 cells x 5 trials", "[####....] 25/70 trials  ETA 0m26s  a|b: 0 failed"]
    assert jobs.log_lines(tmp_path, "chaoslab-shards-1-xyz", "runner") == []


def test_usage_keeps_the_last_cpu_and_the_peak_memory() -> None:
    start = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(calendar.timegm(time.gmtime()) - 100))

    def sample(cpu_s: float, mib: float) -> dict[str, object]:
        c = {"name": "runner", "startTime": start, "cpu": {"usageCoreNanoSeconds": int(cpu_s * 1e9)},
             "memory": {"workingSetBytes": int(mib * 2**20)}}  # fmt: skip
        return {"pods": [{"podRef": {"name": "p0"}, "containers": [c]}]}

    seen: dict[str, dict[str, float]] = {}
    jobs.usage(sample(10, 300), seen)
    jobs.usage(sample(50, 200), seen)
    jobs.usage({}, seen)  # the kubelet did not answer: nothing changes
    row = seen["p0/runner"]
    assert row["cpu_s"] == 50 and row["peak_mib"] == 300 and 99 <= row["wall_s"] <= 130
    (line,) = jobs.usage_table(seen)
    assert "p0/runner" in line and "50.0 cpu-s" in line and "300 MiB peak" in line


def test_outcome_and_exit_status() -> None:
    assert jobs.finished({"status": {}}) is None
    assert jobs.finished({"status": {"conditions": [{"type": "Complete", "status": "True"}]}}) == "Complete"
    assert jobs.finished({"status": {"conditions": [{"type": "Failed", "status": "False"}]}}) is None
    pod = {"status": {"containerStatuses": [{"name": "merge", "state": {"terminated": {"exitCode": 2}}},
                                            {"name": "x", "state": {"running": {}}}]}}  # fmt: skip
    assert jobs.exit_code(pod, "merge") == 2
    assert jobs.exit_code(pod, "x") is None and jobs.exit_code(pod, "nope") is None
