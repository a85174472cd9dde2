"""The runner: planned trials run under their faults, then judged. Groups of trials with one
fault window (runner, groups), what a run reuses -- the browser and its contexts (run_context)
-- the stand-in model's side of a trial (standin), and the client the runner drives, behind a
small protocol (client): what a system under test is asked for a trial. The built-in service's
client, white box, is lab.driver.builtin; a target the lab did not write is driven by the black
box, lab.investigate.run.client (which imports the runner, not the other way).

May import: lab.common, lab.stack, lab.faults, lab.plan, lab.model, lab.driver."""
