"""The chaos lab for LLM chat memory: stack, faults, driver, schedule, checker, report."""

__version__ = "0.1.0"
