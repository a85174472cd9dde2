"""The target as a real process (process: its group, pidfile, log), the half of the native stack
it is given (link: Redis and Toxiproxy, no built-in backend), and what a command that starts
it keeps secret (redaction).

May import: lab.common, lab.stack, lab.investigate.spec.
"""
