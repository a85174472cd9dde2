"""`lab suspects`: the terminal view of a scan -- each line with its mechanism and the
experiment that would prove or clear it."""

from __future__ import annotations

import json

from lab.suspects import REGISTRY, Scan

# The experiment of `lab investigate` whose evidence each diagnosis needs (its default plan).
EXPERIMENT = {
    "replies_not_stored": "none / settled",
    "acked_too_fast": "latency / after_ack",
    "stored_after_answer": "latency / after_ack, with [redis] key (Redis MONITOR)",
    "errors_without_fault": "none / settled",
    "phantom_failures": "none / settled",
    "history_reads_failing": "none / settled",
    "history_flapping": "none / settled",
    "session_cookie": "none / browser_restart",
    "ttl_not_renewed": "any, with [redis] key",
    "no_ttl": "any, with [redis] key",
    "ttl_skipped_on_error": "drop / settled, with [redis] key",
    "duplicates_after_drop": "drop / settled",
    "saved_at_stream_end": "none / mid_stream, with [stream]",
    "cut_turn_removed": "none / mid_stream, with [stream] and [redis] key (Redis MONITOR)",
    "acked_while_unreachable": "down / settled",
    "acked_write_refused": "write_refused / settled",
    "history_capped": "the long conversation",
    "stale_reads": "latency / after_ack",
    "history_from_copy": "latency / after_ack, with [redis] key (Redis MONITOR)",
    "writes_out_of_order": "none / settled",
}


def _n(k: int, what: str) -> str:
    return f"{k} {what}{'' if k == 1 else 's'}"


def text(scan: Scan, shown: str) -> str:
    if not scan.suspects:
        head = f"lab suspects {shown}: {_n(scan.files, 'Python file')}, no suspect line"
    else:
        head = (
            f"lab suspects {shown}: {_n(len(scan.suspects), 'suspect line')} in {_n(scan.files, 'Python file')} "
            "-- suspects, not findings: each is proven or cleared only by its experiment"
        )
    out = [head + (f" ({scan.skipped} other files skipped)" if scan.skipped else "")]
    for s in scan.suspects:
        proof = ", ".join(f"{d} ({EXPERIMENT.get(d, 'lab investigate')})" for d in s.diagnoses) or "none"
        out += [
            f"{s.where}: [{s.check}] {s.mechanism}",
            f"    {s.code[:110]}",
            f"    why: {s.detail}",
            f"    proven by: {proof}" + (f"; found by {s.by}" if s.by != "lab" else ""),
        ]
    if scan.ruff_error:
        out.append(f"(ruff: {scan.ruff_error}; the lab's own checks ran)")
    if scan.suspects:
        out.append(
            "Prove or clear them: add [source] paths = [...] to the app's target spec and run "
            "lab investigate --target SPEC (each diagnosis is shown beside its lines)."
        )
    return "\n".join(out)


def as_json(scan: Scan) -> str:
    return json.dumps(
        {
            **scan.as_json(),
            "checks": {c.name: {"mechanism": c.mechanism, "diagnoses": list(c.diagnoses)} for c in REGISTRY.values()},
        },
        indent=1,
    )
