import pytest

from services.chat import defects
from services.chat.defects import blind_retry, fire_and_forget, session_cookie, shared_loop_client, ttl_set_once


def test_eight_defects_registered_in_composition_order() -> None:
    assert list(defects.REGISTRY) == [
        "fire_and_forget",
        "blind_retry",
        "ttl_set_once",
        "shared_loop_client",
        "swallowed_errors",
        "save_at_stream_end",
        "session_cookie",
        "read_modify_write",
    ]


def test_no_defect_is_the_correct_profile() -> None:
    assert defects.behaviour([]) == defects.CORRECT


@pytest.mark.parametrize("name", list(defects.REGISTRY))
def test_each_defect_changes_exactly_its_own_steps(name: str) -> None:
    b = defects.behaviour([name])
    changed = {f for f in defects.Behaviour.__dataclass_fields__ if getattr(b, f) != getattr(defects.CORRECT, f)}
    expected = {
        "fire_and_forget": {"run_write"},
        "blind_retry": {"retry", "append"},
        "ttl_set_once": {"append"},
        "shared_loop_client": {"client"},
        "swallowed_errors": {"on_store_error"},
        "save_at_stream_end": {"stream_save"},
        "session_cookie": {"set_cookie"},
        "read_modify_write": {"append", "read"},
    }[name]
    assert changed == expected


def test_defects_compose() -> None:
    b = defects.behaviour(defects.INCIDENT)
    assert b.run_write is fire_and_forget.run_write
    assert b.client is shared_loop_client.shared_client
    assert b.append is ttl_set_once.append_ttl_on_create
    assert b.set_cookie is session_cookie.set_session_cookie
    both = defects.behaviour(["blind_retry", "ttl_set_once"])
    assert both.append is ttl_set_once.append_ttl_on_create and both.retry is blind_retry.BLIND_RETRY


def test_unknown_defect_names_the_valid_ones() -> None:
    with pytest.raises(defects.UnknownDefect) as err:
        defects.behaviour(["fire_and_forget", "nope"])
    assert "nope" in str(err.value) and "session_cookie" in str(err.value)
