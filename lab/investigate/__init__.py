"""`lab investigate`: the lab pointed at a chat backend it did not write (a black box).

spec (TOML target spec) -> target (the app as a real process, given only a Toxiproxy address for
Redis) -> page (the lab's own chat page on the target's origin) -> blackbox (trials: fault x
refresh point x turns) -> the one checker (lab/checker.py) -> lab/diagnoses (pure: judged trials ->
diagnoses with evidence, one module each) -> lab/report (the same reports as `lab chaos`).
"""
