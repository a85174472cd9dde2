"""`lab investigate`: the lab pointed at a chat backend it did not write (a black box).

spec (TOML target spec) -> target (the app as a real process, given only a Toxiproxy address for
Redis) -> page (the lab's own chat page on the target's origin) -> blackbox (trials: fault x
refresh point x turns) -> the one checker (lab/model/checker.py) -> lab/diagnoses (pure: judged trials ->
diagnoses with evidence, one module each) -> lab/report (the same reports as `lab chaos`).

May import: lab.common, lab.stack, lab.faults, lab.plan, lab.model, lab.driver, lab.diagnoses, lab.suspects, lab.report.
"""
