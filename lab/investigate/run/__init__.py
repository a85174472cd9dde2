"""`lab investigate` and `lab window --target`: the run (investigation: bring up, check, run,
report), the contract check before any experiment (preflight), the experiments and their trial ids (experiments),
their trials group by group through the one runner, experiments sharing a fault together
(groups), the black box as the runner's client (client), black-box trials (blackbox) and their reload mid-write (mid_write), the end of a run -- judged, diagnosed,
written (reporting) -- and the window of an app the lab did not write (window).

May import: lab.common, lab.stack, lab.faults, lab.plan, lab.model, lab.driver, lab.runner, lab.diagnoses, lab.suspects, lab.report, lab.investigate.spec, lab.investigate.target, lab.investigate.evidence, lab.investigate.browser.
"""
