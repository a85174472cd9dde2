"""The runner: planned trials run under their faults, then judged. Groups of trials with one
fault window (runner), what a run observes and reuses -- backend events, Redis expiry events and
commands, the browser (run_context, observe) -- whether a trial's experiment held
(preconditions), and a failing trial's folder of artifacts (artifacts).

May import: lab.common, lab.stack, lab.faults, lab.plan, lab.model, lab.driver."""
