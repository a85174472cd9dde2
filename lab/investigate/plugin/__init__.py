"""`pytest --lab-target`'s pieces: a user's own pytest-playwright test recorded as a lab trial
(recorder) and the terminal summary over its repeats (summary).

May import: lab.common, lab.stack, lab.plan, lab.model, lab.diagnoses, lab.report, lab.investigate.spec, lab.investigate.evidence, lab.investigate.browser.
"""
