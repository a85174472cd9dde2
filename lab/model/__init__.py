"""The trial model and its checker, pure (no browser, no network): what a trial recorded
(history), where each sent message's rows are in a read (placement), whether two sends really
overlapped (concurrency), the one checker -- a trial's history to its anomalies and
valid / invalid / unknown (checker) -- a trial's outcome with its plan (outcome), Wilson intervals
(stats) and the cell statistics and verdicts: which defect causes what (attribution).

May import: lab.plan."""
