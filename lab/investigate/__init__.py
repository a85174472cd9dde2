"""`lab investigate`: the lab pointed at a chat backend it did not write (a black box).

spec (TOML target spec) -> target (the app as a real process, given only a Toxiproxy address for
Redis) -> page (the lab's own chat page on the target's origin) -> blackbox (trials: fault x
refresh point x turns) -> diagnose (pure: trial records -> diagnoses with evidence) -> report.
"""
