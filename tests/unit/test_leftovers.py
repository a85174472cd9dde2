"""The session's leftover check (tests/leftovers.py, run by tests/conftest.py): from a snapshot at
the session's start and one at its end, what is left of this session -- and what is not its own
(a process that was there before, another session's, a developer's engine beside the suite)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.leftovers import Container, Link, Marks, Proc, Snapshot, dockerd_host, kept_groups, leftovers, temp_left

ME = "4242-abcd"
TMP = "/tmp/pytest-of-root/pytest-7"
MARKS = Marks(
    session=ME,
    own_pid=100,
    paths=(TMP, "/w/.lab/docker-tests", "/w/.lab/run/pytest"),
    mount_roots=("/w/.lab/", "/run/chaoslab-", TMP),
)


def proc(pid: int, *argv: str, session: str | None = None, cwd: str = "/", ppid: int = 1, pgid: int = 0) -> Proc:
    return Proc(pid, 1000 + pid, ppid, pgid or pid, argv, cwd, session)


def left(before: Snapshot, after: Snapshot, marks: Marks = MARKS) -> list[str]:
    return [lo.line() for lo in leftovers(before, after, marks)]


def test_a_process_of_this_session_started_during_it_is_left() -> None:
    dockerd = proc(300, "/usr/sbin/dockerd", "--data-root", "/w/.lab/docker-tests", session=ME)
    containerd = proc(301, "containerd", "--config", "/run/chaoslab-1a2b3c4d/exec/containerd.toml", session=ME)
    found = left(Snapshot(), Snapshot(procs=(dockerd, containerd)))
    assert [f.split(" (")[0] for f in found] == ["process pid 300", "process pid 301"]
    assert "--data-root /w/.lab/docker-tests" in found[0]


def test_what_ran_before_the_session_is_not_flagged_but_a_recycled_pid_is() -> None:
    redis = proc(200, "redis-server", "--dir", "/w/.lab/run/pytest", session=ME)
    recycled = Proc(200, 99999, 1, 200, ("redis-server", "--dir", "/w/.lab/run/pytest"), "/", ME)
    assert left(Snapshot(procs=(redis,)), Snapshot(procs=(redis,))) == []
    assert len(left(Snapshot(procs=(redis,)), Snapshot(procs=(recycled,)))) == 1


def test_another_sessions_process_is_its_own_even_in_our_paths() -> None:
    theirs = proc(400, "redis-server", "--dir", f"{TMP}/x/run", session="999-other")
    assert left(Snapshot(), Snapshot(procs=(theirs,))) == []


def test_a_process_without_the_session_variable_counts_by_where_it_points() -> None:
    by_argv = proc(500, "toxiproxy-server", "-config", f"{TMP}/test_x0/run/toxiproxy.json")
    by_cwd = proc(501, "containerd-shim-runc-v2", cwd="/w/.lab/docker-tests/x")
    developers = proc(502, "redis-server", "--dir", "/w/.lab/run/native")  # `make up` beside the suite
    unrelated = proc(503, "vim", "notes.txt", cwd="/root")
    found = left(Snapshot(), Snapshot(procs=(by_argv, by_cwd, developers, unrelated)))
    assert [f.split(" (")[0] for f in found] == ["process pid 500", "process pid 501"]


def test_the_checking_process_itself_is_not_a_leftover() -> None:
    assert left(Snapshot(), Snapshot(procs=(proc(100, "python", "-m", "pytest", session=ME),))) == []


def test_a_kept_stack_and_its_descendants_are_not_flagged() -> None:
    """--lab-keep-stack: the session stacks' process groups stay on purpose, with what their
    leaders started in groups of their own (a dockerd's containerd)."""
    dockerd = proc(600, "dockerd", session=ME)
    containerd = proc(601, "containerd", session=ME, ppid=600, pgid=601)
    other = proc(700, "redis-server", session=ME)
    marks = Marks(ME, 100, MARKS.paths, MARKS.mount_roots, kept_groups=frozenset({600}))
    found = left(Snapshot(), Snapshot(procs=(dockerd, containerd, other)), marks)
    assert [f.split(" (")[0] for f in found] == ["process pid 700"]


def test_new_mounts_under_the_labs_folders_are_left_unless_a_foreign_engine_owns_them() -> None:
    before = Snapshot(mounts=frozenset({"/", "/w/.lab/docker/overlay2/old/merged"}))
    developers_engine = proc(800, "/usr/sbin/dockerd", "--data-root", "/w/.lab/docker", "-H", "unix:///run/x.sock")
    after = Snapshot(
        procs=(developers_engine,),
        mounts=before.mounts
        | {
            "/run/chaoslab-1a2b3c4d/exec/netns/abc",  # our killed engine's netns
            "/w/.lab/docker-tests/overlay2/l1/merged",
            "/w/.lab/docker/overlay2/new/merged",  # the developer's engine's container
            "/mnt/usb",
        },
    )
    assert left(before, after) == [
        "mount /run/chaoslab-1a2b3c4d/exec/netns/abc",
        "mount /w/.lab/docker-tests/overlay2/l1/merged",
    ]


def test_a_new_engine_exec_root_is_left_unless_a_live_foreign_engine_uses_it() -> None:
    developers = proc(850, "dockerd", "--exec-root", "/run/chaoslab-dev00000/exec")
    after = Snapshot(
        procs=(developers,),
        folders=frozenset({"/run/chaoslab-1a2b3c4d", "/run/chaoslab-dev00000", "/run/chaoslab-old"}),
    )
    assert left(Snapshot(folders=frozenset({"/run/chaoslab-old"})), after) == ["folder /run/chaoslab-1a2b3c4d"]


def test_new_docker_interfaces_are_left_unless_a_foreign_engines_network_owns_them() -> None:
    before = Snapshot(links=(Link("lo", None), Link("eth0", None), Link("br-000000000000", None)))
    foreign = proc(900, "dockerd", "-H", "unix:///run/dev.sock")
    after = Snapshot(
        procs=(foreign,),
        links=before.links
        + (
            Link("br-aaaaaaaaaaaa", None),  # a compose network of our killed engine
            Link("veth1", "br-aaaaaaaaaaaa"),
            Link("br-bbbbbbbbbbbb", None),  # the developer's engine's network
            Link("veth2", "br-bbbbbbbbbbbb"),
            Link("tun0", None),  # not Docker's
        ),
        bridges={"unix:///run/dev.sock": frozenset({"br-bbbbbbbbbbbb"})},
    )
    assert left(before, after) == ["interface br-aaaaaaaaaaaa", "interface veth1 (on br-aaaaaaaaaaaa)"]


def test_containers_on_our_engine_or_from_our_folders_are_left() -> None:
    ours = "unix:///run/chaoslab-1a2b3c4d/docker.sock"  # no live dockerd serves it: not foreign
    system = "unix:///var/run/docker.sock"
    engine = proc(1000, "dockerd")  # the system engine, started before the session
    old = Container(system, "c" * 64, "chaoslab-dev-redis-1", "chaoslab /w")
    before = Snapshot(procs=(engine,), containers=(old,))
    after = Snapshot(
        procs=(engine,),
        containers=(
            old,
            Container(ours, "a" * 64, "chaoslabab12cd-redis-1", "chaoslabab12cd /w /w/compose.yaml"),
            Container(system, "b" * 64, "chaoslab-app-1-app-1", f"chaoslab-app-1 {TMP}/t0/run/override.yaml"),
            Container(system, "d" * 64, "chaoslab99-redis-1", "chaoslab99 /w /w/compose.yaml"),  # a developer's
        ),
    )
    assert left(before, after) == [
        f"container chaoslabab12cd-redis-1 ({'a' * 12}) on {ours}",
        f"container chaoslab-app-1-app-1 ({'b' * 12}) on {system}",
    ]


def test_nothing_new_is_nothing_left() -> None:
    snap = Snapshot(
        procs=(proc(1, "init"),), mounts=frozenset({"/"}), links=(Link("lo", None),), containers=(), bridges={}
    )
    assert left(snap, snap) == []


def test_dockerd_host_reads_its_socket_flag() -> None:
    assert dockerd_host(("dockerd", "-H", "unix:///run/a.sock")) == "unix:///run/a.sock"
    assert dockerd_host(("dockerd", "--host=unix:///run/b.sock")) == "unix:///run/b.sock"
    assert dockerd_host(("dockerd",)) == "unix:///var/run/docker.sock"


def test_kept_groups_are_the_recorded_services(tmp_path: Path) -> None:
    (tmp_path / "redis.pid").write_text(json.dumps({"pid": 321}))
    (tmp_path / "broken.pid").write_text("")
    assert kept_groups([tmp_path, tmp_path / "missing"]) == frozenset({321})


def test_what_is_in_the_sessions_temp_folder_is_left_except_pytests_own(tmp_path: Path) -> None:
    (tmp_path / "cache-aside-x1y2").mkdir()
    (tmp_path / "fnwa_5cs").write_text("")
    (tmp_path / "pytest-of-root").mkdir()
    found = [lo.line() for lo in temp_left(tmp_path, skip=(str(tmp_path / "pytest-of-root"),))]
    assert found == [f"temp file {tmp_path / 'cache-aside-x1y2'}", f"temp file {tmp_path / 'fnwa_5cs'}"]
    assert temp_left(tmp_path / "gone") == []
