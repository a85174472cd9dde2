from lab.faults import Targets, make


def test_none_changes_nothing(targets: Targets, via_proxy) -> None:
    with make("none").on(targets) as evidence:
        assert evidence.startswith("control")
        assert via_proxy().ping() is True
