import pytest

from lab.common.errors import UsageError
from lab.plan.schedule import Cell, fault_text, parse_fault, parse_profile, plan_cell, plan_trial, profile_name


def test_same_seed_same_plan() -> None:
    c = Cell(("fire_and_forget",), "none", "after_ack")
    assert plan_trial(c, 42, "a") == plan_trial(c, 42, "a")
    assert plan_trial(c, 42, "a").messages != plan_trial(c, 43, "a").messages


def test_plan_is_a_conversation_that_tests_memory() -> None:
    p = plan_trial(Cell((), "none", "settled", turns=5), 1, "t")
    assert len(p.messages) == 5
    assert p.messages[0].startswith("Hi, my name is") and p.messages[-1] == "What is my name?"
    assert p.headers["X-Lab-Defects"] == "" and p.headers["X-Lab-Trial"] == "t"


def test_one_send_faults_hit_the_same_earlier_turn_in_every_trial_of_a_cell() -> None:
    c = Cell((), "down", "settled", turns=5)
    plans = plan_cell(c, 6, seed=3)
    turns = {p.fault_turn for p in plans}
    assert len(turns) == 1 and 1 <= turns.pop() <= 4
    assert plan_cell(Cell((), "latency", "after_ack"), 2, 3)[0].fault_turn == 0


def test_ttl_elapse_paces_turns_under_half_the_ttl() -> None:
    p = plan_trial(Cell((), "ttl_elapse", "settled", 5, (("ttl_ms", 1000),)), 1, "t")
    assert p.headers["X-Lab-Ttl-Ms"] == "1000" and (p.llm_latency_ms, p.think_ms) == (300, 250)
    # Planned: 5 turns of model time and 4 think times span 2.5 TTL, past 2 x TTL with room;
    # a turn's gaps (think, or model) stay under TTL/2.
    assert 5 * p.llm_latency_ms + 4 * p.think_ms == 2500 and max(p.llm_latency_ms, p.think_ms) < 500


def test_replay_command_is_self_contained() -> None:
    p = plan_trial(Cell(("blind_retry",), "drop", "settled", 5, (("one_shot", True),)), 99, "t", 2)
    assert p.replay_command() == (
        ".venv/bin/lab replay --profile blind_retry --fault "
        "drop:one_shot=true --refresh settled --turns 5 --seed 99 "
        "--fault-turn 2 --runs 5"
    )
    # A trial run on compose replays on compose.
    assert p.replay_command(mode="compose").startswith(".venv/bin/lab replay --mode compose --profile")


@pytest.mark.parametrize(
    "text, names",
    [
        ("correct", ()),
        ("incident", ("fire_and_forget", "ttl_set_once", "shared_loop_client", "session_cookie")),
        ("incident-ttl_set_once", ("fire_and_forget", "shared_loop_client", "session_cookie")),
        ("session_cookie,blind_retry", ("blind_retry", "session_cookie")),
    ],
)
def test_profiles_round_trip(text: str, names: tuple[str, ...]) -> None:
    assert parse_profile(text) == names
    assert parse_profile(profile_name(names)) == names


@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: parse_profile("nope"), "valid: fire_and_forget"),
        (lambda: parse_profile("incident-blind_retry"), "not in the incident profile"),
        (lambda: parse_fault("latency:latency_ms"), "is not key=value"),
        (lambda: parse_fault("warp"), "unknown fault 'warp'"),
        (lambda: Cell((), "none", "later"), "valid: in_flight, after_ack"),
        (lambda: Cell((), "ttl_elapse", "settled", turns=3), "turns >= 5"),
        (lambda: Cell((), "down", "settled", turns=1), "needs turns >= 2"),
        (lambda: plan_trial(Cell((), "down", "settled"), 1, "t", fault_turn=5), "out of range"),
    ],
)
def test_bad_input_names_the_valid_values(call, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UsageError) as err:
        call()
    assert fragment in str(err.value)


def test_mid_stream_streams() -> None:
    assert Cell((), "none", "mid_stream").stream is True
    assert Cell((), "none", "settled").stream is False


def test_fault_text_round_trips() -> None:
    name, params = parse_fault("drop:stream=upstream,one_shot=false")
    assert (name, params) == ("drop", {"stream": "upstream", "one_shot": False})
    assert parse_fault(fault_text(name, params)) == (name, params)


def test_ttl_elapse_pacing_check() -> None:
    from lab.faults import make

    f = make("ttl_elapse", ttl_ms=1000)
    assert f.check_pacing([0.0, 0.4, 0.8, 1.2, 1.6, 2.0, 2.4]) is None
    assert "reached TTL/2" in f.check_pacing([0.0, 0.4, 1.0, 2.5])
    assert "under 2 x TTL" in f.check_pacing([0.0, 0.4, 0.8])
    # The conversation lasts until the lab's final read: writes that ended early (requests that
    # failed fast) still span 2 x TTL with it.
    assert f.check_pacing([0.0, 0.4, 0.8, 1.2, 1.6, 1.9], read_at_s=2.05) is None
    assert "under 2 x TTL" in f.check_pacing([0.0, 0.4, 0.8, 1.2, 1.6, 1.9], read_at_s=1.95)
    # Expired during the conversation (a TTL set once): evidence. Expired a TTL after the last
    # write (renewed, read too late): no evidence either way.
    assert f.check_pacing([0.0, 0.4, 0.8, 1.2, 1.6, 2.0, 2.4], expired_at_s=1.05) is None
    assert "a renewed TTL explains it" in f.check_pacing([0.0, 0.4, 0.8, 1.2, 1.6, 2.0, 2.4], expired_at_s=3.45)


def test_ttl_elapse_span_pct_holds_the_age_and_never_crosses_the_ttl() -> None:
    """A window sweep's point of age: the conversation spans span_pct % of the TTL, not less (the
    point would claim an age not reached) and at most 20 % more (a later read would count a loss
    at the wrong age) -- just under the TTL, only up to 5 % under it."""
    from lab.faults import make

    f = make("ttl_elapse", ttl_ms=1000, span_pct=85)
    assert f.check_pacing([0.0, 0.2, 0.4, 0.6], read_at_s=0.9) is None
    assert "not 85 % of the TTL (850-950 ms)" in f.check_pacing([0.0, 0.2, 0.4, 0.6], read_at_s=0.8)
    assert "not 85 % of the TTL" in f.check_pacing([0.0, 0.2, 0.4, 0.6], read_at_s=0.96)
    half = make("ttl_elapse", ttl_ms=1000, span_pct=50)
    assert half.check_pacing([0.0, 0.2, 0.4], read_at_s=0.69) is None  # 69 %: within 50-70 %
    assert "(500-700 ms)" in half.check_pacing([0.0, 0.2, 0.4], read_at_s=0.71)
    assert make("ttl_elapse", ttl_ms=1000, span_pct=150).check_pacing([0.0, 0.3, 0.6, 0.9, 1.2], read_at_s=1.69) is None


def test_a_restart_is_armed_after_a_stored_turn() -> None:
    """A restart before any write loses nothing and would exercise nothing: redis_restart is
    armed before turn 2 or later, in every planned trial; an explicit earlier turn is refused."""
    import pytest

    from lab.common.errors import UsageError
    from lab.plan.schedule import Cell, plan_cell, plan_trial

    cell = Cell((), "redis_restart", "settled", 3)
    assert {p.fault_turn for s in range(40) for p in plan_cell(cell, 2, s)} == {2}
    with pytest.raises(UsageError, match=r"out of range \[2, 2\]"):
        plan_trial(cell, 1, "x", fault_turn=1)
    with pytest.raises(UsageError, match="needs turns >= 3"):
        Cell((), "redis_restart", "settled", 2)


def test_a_plan_on_the_stand_in_carries_its_trial_in_every_message() -> None:
    from lab.plan.schedule import tagged

    c = Cell((), "latency", "two_tabs", 4, (("latency_ms", 100),))
    a, b = (tagged(plan_trial(c, 7, tid)) for tid in ("c001-000", "c001-001"))
    assert plan_trial(c, 7, "c001-000").messages[-1] == "What is my name?"  # the same seed ...
    assert a.messages[-1] == "What is my name? (chaoslab probe c001-000)"  # ... unique per trial
    assert not set(a.messages) & set(b.messages)
    assert a.other_tab.endswith("(chaoslab probe c001-000)")
    assert tagged(a) == a  # once
    assert "--model" in a.replay_command(model=True) and "--model" not in a.replay_command()
