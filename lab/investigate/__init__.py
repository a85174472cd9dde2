"""`lab investigate`: the lab pointed at a chat backend it did not write (a black box).

Its rooms, lowest first (each one's docstring says what it may import): spec (the TOML target
spec) -> target (the app as a real process, given only a Toxiproxy address for Redis) ->
evidence (its answers, its key, the store's record) -> browser (the lab's page or the app's own,
pooled contexts) -> run (preflight, experiments, black-box trials, the one checker
lab/model/checker.py, lab/diagnoses, lab/report: the same reports as `lab chaos`) -> draft
(`lab init`) and plugin (`pytest --lab-target`).

May import: lab.common, lab.stack, lab.faults, lab.plan, lab.model, lab.driver, lab.diagnoses, lab.suspects, lab.report.
"""
