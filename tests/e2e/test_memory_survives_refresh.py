"""The incident's test as a grid of expected outcomes, on the real stack in Chromium.

Each defect is run in the cell that exposes it (design.md, "exposed by") with the defect on,
and the same cell on the correct profile; then the incident profile and the incident minus
each of its defects. Every cell runs K trials; each expectation states the rate the mechanism
predicts. A failure keeps the trials' artifacts under test-results/<test-id>/ and ends with a
replay command.
"""

from __future__ import annotations


import pytest

from lab.expect import ALL, assert_cell, run_grid
from lab.model.outcome import CellOutcome
from lab.plan.schedule import Cell, parse_fault, parse_profile, plan_cell
from lab.stack.native import NativeStack

K = 4  # trials per cell: enough for the all-or-nothing mechanisms below, within the e2e budget
# shared_loop_client at its strongest fails every send of a trial -- more often the busier the
# machine (1 of 4 trials in a quiet CI run, 2 of 4 in one beside other work): up to half the
# cell's trials are excused so, judged for nothing; the rest must show what the test claims.
NOTHING_ACKED = ("no send was acknowledged", K // 2)

# (profile, fault, refresh, turns)
DEFECT_CELLS = {
    "fire_and_forget": ("none", "after_ack"),
    "ttl_set_once": ("ttl_elapse:ttl_ms=4000", "settled"),
    "shared_loop_client": ("none", "settled"),
    "blind_retry": ("drop:stream=downstream,one_shot=true", "settled"),
    "swallowed_errors": ("down", "settled"),
    "save_at_stream_end": ("none", "mid_stream"),
    "session_cookie": ("none", "browser_restart"),
    # 300 ms: the two tabs' requests start within one Redis round trip of each other even on a
    # loaded machine (at 100 ms, 1 of 4 trials' second request came after the first's write).
    "read_modify_write": ("latency:latency_ms=300", "two_tabs"),
}
RMW_LATENCY_MS = 300


def _cell(profile: str, fault: str, refresh: str, turns: int = 5) -> Cell:
    name, params = parse_fault(fault)
    return Cell(parse_profile(profile), name, refresh, turns, tuple(sorted(params.items())))


def _grid() -> list[Cell]:
    cells = []
    for defect, (fault, refresh) in DEFECT_CELLS.items():
        cells += [_cell(defect, fault, refresh), _cell("correct", fault, refresh)]
    cells += [
        _cell(p, "none", "after_ack")
        for p in (
            "incident",
            "incident-fire_and_forget",
            "incident-ttl_set_once",
            "incident-shared_loop_client",
            "incident-session_cookie",
        )
    ]
    cells += [_cell(p, "none", "after_ack", 15) for p in ("incident", "incident-fire_and_forget")]
    cells += [_cell("correct", "none", r) for r in ("in_flight", "reopen")]
    cells += [_cell("fire_and_forget", "none", "in_flight")]
    cells += [_cell(p, "none", "double_submit") for p in ("correct", "blind_retry")]
    return list(dict.fromkeys(cells))


@pytest.fixture(scope="module")
def grid(lab_stack: NativeStack, tmp_path_factory: pytest.TempPathFactory) -> dict[str, CellOutcome]:
    # A fresh backend process: earlier tests' requests may still be running out their store
    # deadlines (e.g. shared_loop_client waits cut at 15 s).
    lab_stack.restart_backend()
    cells = _grid()
    plans = [(c, plan_cell(c, K, 1000 + i, prefix=f"g{i:02d}-")) for i, c in enumerate(cells)]
    return run_grid(lab_stack, plans, tmp_path_factory.mktemp("grid"))


def _get(grid: dict[str, CellOutcome], profile: str, fault: str, refresh: str, turns: int = 5) -> CellOutcome:
    return grid[_cell(profile, fault, refresh, turns).cell_id]


@pytest.mark.parametrize("defect", list(DEFECT_CELLS))
def test_correct_profile_survives_the_exposing_cell(
    grid: dict[str, CellOutcome], defect: str, request: pytest.FixtureRequest
) -> None:
    """Control: nothing acknowledged is lost, duplicated or expired, and at least 80 % of the
    sends were acknowledged (otherwise the cell exercised nothing)."""
    fault, refresh = DEFECT_CELLS[defect]
    assert_cell(
        _get(grid, "correct", fault, refresh),
        request.node.nodeid,
        lost=0,
        duplicated=0,
        expired=0,
        amnesia=0,
        min_ack_ratio=0.8,
    )


def test_fire_and_forget_loses_every_reply(grid: dict[str, CellOutcome], request: pytest.FixtureRequest) -> None:
    """Under Flask the reply's task is cancelled with the view's loop: every trial loses its
    acknowledged replies (K of K), never the user rows."""
    o = _get(grid, "fire_and_forget", "none", "after_ack")
    assert_cell(o, request.node.nodeid, lost=K, duplicated=0)
    assert all(t.result.lost["user"] == [] for t in o.trials)


def test_ttl_set_once_expires_the_conversation(grid: dict[str, CellOutcome], request: pytest.FixtureRequest) -> None:
    """The conversation outlives 2 x TTL with gaps under TTL/2: a TTL set once expires in
    every trial (K of K), with the expiry event as evidence."""
    assert_cell(_get(grid, "ttl_set_once", "ttl_elapse:ttl_ms=4000", "settled"), request.node.nodeid, lost=K, expired=K)


def test_shared_loop_client_fails_requests_whose_writes_landed(
    grid: dict[str, CellOutcome], request: pytest.FixtureRequest
) -> None:
    """Requests meet a client bound to another request's closed loop: most trials see 5xx
    answers (4 of 4 in most runs; 3 of 4 once -- a trial whose requests all found a usable
    connection), and in some of them one had already stored its message (phantom_fail; which
    request breaks depends on the interleaving). Nothing acknowledged is lost. A trial whose every
    send met the broken client (seen once in a CI run: 5 of 5 sends 5xx) acknowledged nothing and
    is unknown -- the defect at its strongest, tolerated for half the trials, judged for nothing."""
    o = _get(grid, "shared_loop_client", "none", "settled")
    assert_cell(o, request.node.nodeid, phantom_fail=(1, K), lost=0, unknown_ok=NOTHING_ACKED)
    with_5xx = sum(any(s.status and s.status >= 500 for s in t.trial.sends) for t in o.trials)
    assert 2 * with_5xx >= len(o.trials) > 0, f"5xx in {with_5xx} of {len(o.trials)} trials"


def test_blind_retry_duplicates_under_a_one_shot_drop(
    grid: dict[str, CellOutcome], request: pytest.FixtureRequest
) -> None:
    """Each reply eaten after the append ran, then retried blindly: K of K trials duplicate."""
    assert_cell(
        _get(grid, "blind_retry", "drop:stream=downstream,one_shot=true", "settled"),
        request.node.nodeid,
        duplicated=K,
        lost=0,
    )


def test_swallowed_errors_acknowledge_unsaved_turns(
    grid: dict[str, CellOutcome], request: pytest.FixtureRequest
) -> None:
    """The Redis link is down for one turn; the reply still says 200: K of K trials lose it."""
    assert_cell(_get(grid, "swallowed_errors", "down", "settled"), request.node.nodeid, lost=K)


def test_save_at_stream_end_loses_turns_cut_mid_stream(
    grid: dict[str, CellOutcome], request: pytest.FixtureRequest
) -> None:
    """A refresh at the first token: the server sees the disconnect before the last token and
    never saves the turn -- K of K. (The last reply streams for ~6 s: Chromium drains a
    cancelled body for up to 5 s to reuse the socket, which let faster streams complete.)"""
    assert_cell(_get(grid, "save_at_stream_end", "none", "mid_stream"), request.node.nodeid, lost=K, duplicated=0)


def test_session_cookie_forgets_at_browser_restart(
    grid: dict[str, CellOutcome], request: pytest.FixtureRequest
) -> None:
    """Without Max-Age the cookie dies with the browser: K of K trials show an empty history;
    Redis still holds every turn (nothing lost, only unreachable)."""
    assert_cell(_get(grid, "session_cookie", "none", "browser_restart"), request.node.nodeid, amnesia=K, lost=0)


@pytest.mark.parametrize("turns", [5, 15])
def test_incident_loses_replies_and_fire_and_forget_is_why(
    grid: dict[str, CellOutcome], turns: int, request: pytest.FixtureRequest
) -> None:
    """The incident loses acknowledged replies in every trial, at 5 turns as at 15 -- the loss
    does not need a long conversation. Without fire_and_forget nothing acknowledged is lost
    (the shared client's 5xx are not acknowledgements; their user retries may duplicate).
    Both profiles keep shared_loop_client: a trial whose every send met the broken client
    acknowledged nothing (seen in a CI run: 3 of 3 sends 5xx) -- tolerated for half the trials,
    judged for nothing, as in test_shared_loop_client_fails_requests_whose_writes_landed."""
    for profile, lost in (("incident", ALL), ("incident-fire_and_forget", 0)):
        o = _get(grid, profile, "none", "after_ack", turns)
        assert_cell(o, request.node.nodeid, lost=lost, unknown_ok=NOTHING_ACKED)


@pytest.mark.parametrize("without", ["ttl_set_once", "shared_loop_client", "session_cookie"])
def test_incident_without_another_defect_still_loses(
    grid: dict[str, CellOutcome], without: str, request: pytest.FixtureRequest
) -> None:
    """Removing any defect but fire_and_forget leaves the loss in place: every trial judged
    (those that met the shared client at every send are excused while that defect stays)."""
    excuse = NOTHING_ACKED if without != "shared_loop_client" else None
    assert_cell(
        _get(grid, f"incident-{without}", "none", "after_ack"), request.node.nodeid, lost=ALL, unknown_ok=excuse
    )


@pytest.mark.parametrize("refresh", ["in_flight", "reopen"])
def test_other_refresh_points_are_reached_and_the_correct_profile_survives(
    grid: dict[str, CellOutcome], refresh: str, request: pytest.FixtureRequest
) -> None:
    """in_flight refreshes once the backend logged receipt and before the reply; reopen opens a
    new page in the same context. Every trial must reach its trigger (unknown fails)."""
    o = _get(grid, "correct", "none", refresh)
    assert_cell(o, request.node.nodeid, lost=0, duplicated=0, amnesia=0)
    if refresh == "in_flight":
        last = [t.trial.sends[-1] for t in o.trials]
        assert all(s.outcome == "info" and s.reason == "net::ERR_ABORTED" for s in last), (
            "the refresh must abort the last send in flight"
        )


def test_fire_and_forget_loses_earlier_replies_even_when_the_last_send_is_aborted(
    grid: dict[str, CellOutcome], request: pytest.FixtureRequest
) -> None:
    """in_flight aborts the last send (info: allowed either way); the four acknowledged turns
    before it still lose their replies in every trial."""
    assert_cell(_get(grid, "fire_and_forget", "none", "in_flight"), request.node.nodeid, lost=K)


def test_read_modify_write_loses_one_tabs_turn(grid: dict[str, CellOutcome], request: pytest.FixtureRequest) -> None:
    """Two tabs send the last turn at once while Redis answers 300 ms late: both GET the same
    document, the later SET drops the other's rows -- a lost update; the earlier turns, sent one
    at a time, are all kept. Every judged trial's two requests were in flight together at the
    backend (else it would be unknown). The race's window is narrower than that: the second
    request must GET before the first SETs, which the mechanism guarantees when the two arrive
    within one Redis round trip of each other -- every such trial loses, and most trials are such
    (a busy machine may start the second tab later: that trial's outcome is the race's)."""
    o = _get(grid, "read_modify_write", f"latency:latency_ms={RMW_LATENCY_MS}", "two_tabs")
    assert_cell(o, request.node.nodeid, lost=(1, K), duplicated=0)
    in_window = []
    for t in o.trials:
        c = t.trial.concurrent
        assert c is not None and c["where"] == "backend" and c["in_flight_together"], c
        last = {s.id for s in t.trial.sends if s.turn == 5}
        assert len(last) == 2 and all(s.outcome == "ok" for s in t.trial.sends if s.turn == 5)
        assert set(t.result.lost_turns) == set(t.result.lost_update), t.result.lost  # only the race's loss
        if c["spread_ms"] < RMW_LATENCY_MS:
            in_window.append(t)
            assert t.result.lost_update, (c, t.result.lost)
    assert 2 * len(in_window) >= len(o.trials), [t.trial.concurrent for t in o.trials]


def test_double_submit_with_an_id_is_absorbed_by_the_correct_profile(
    grid: dict[str, CellOutcome], request: pytest.FixtureRequest
) -> None:
    """A double click sends one message id twice, both requests in flight together: the correct
    append (idempotent by id) stores it once; blind_retry's plain RPUSH stores it twice."""
    ok = _get(grid, "correct", "none", "double_submit")
    assert_cell(ok, request.node.nodeid, duplicated=0, lost=0, min_ack_ratio=0.8)
    for t in ok.trials:
        last = [s for s in t.trial.sends if s.turn == 5]
        assert len(last) == 2 and last[0].id == last[1].id and t.trial.concurrent["in_flight_together"]
    assert_cell(_get(grid, "blind_retry", "none", "double_submit"), request.node.nodeid, duplicated=K, lost=0)
