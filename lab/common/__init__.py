"""Helpers every room may use, none of them about chat memory: the lab's configuration and
ports (config), its errors (errors), a bounded HTTP GET (http), one-run-per-folder locks (locks),
signal handling that turns SIGINT/SIGTERM/SIGHUP into a clean stop (signals), waiting on a
condition with a deadline (wait), a trial's time per phase (phases) and the messages of a
server-rendered page (html_select).

May import: nothing else of the lab."""
