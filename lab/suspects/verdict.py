"""Suspects judged by the experiments: each line is *proven* when the run drew one of its
diagnoses that no other kind of suspect line in the source also leaves, *one of* when the
diagnosis drawn is left alike by lines of several kinds there (a write's error swallowed, or the
write left to a task nobody awaits: acked_write_refused) -- one of them is the cause, the
evidence does not say which --, *not proven* when a diagnosis of it could have been drawn (trials held its
evidence) and was not -- with the 95 % upper bound of what those trials cannot rule out --, and
*not exercised* when no trial could draw any of them. A suspect alone is never a finding."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lab.model.stats import wilson
from lab.suspects import Scan, Suspect

PROVEN, ONE_OF, NOT_PROVEN, NOT_EXERCISED = "proven", "one of", "not proven", "not exercised"
STATUSES = (PROVEN, ONE_OF, NOT_PROVEN, NOT_EXERCISED)


def judge(scan: Scan, drawn: Iterable[tuple[str, int, int]], chances: dict[str, int]) -> dict[str, Any]:
    """``drawn``: (code, k, n) of each diagnosis drawn; ``chances``: per diagnosis, the judged
    trials that held its evidence. Returns the results.json ``suspects`` section."""
    got = {code: (k, n) for code, k, n in drawn}
    kinds: dict[str, set[str]] = {}  # per diagnosis, the kinds of line in this source it points at
    for s in scan.suspects:
        for d in s.diagnoses:
            kinds.setdefault(d, set()).add(s.check)
    lines = [_line(s, got, chances, kinds) for s in scan.suspects]
    pointed = {d for s in scan.suspects for d in s.diagnoses}
    return {**scan.as_json(), "suspects": lines, "without_suspect": sorted(code for code in got if code not in pointed)}


def _line(
    s: Suspect, got: dict[str, tuple[int, int]], chances: dict[str, int], kinds: dict[str, set[str]]
) -> dict[str, Any]:
    out = s.as_json()
    proof = sorted((d for d in s.diagnoses if d in got), key=lambda d: len(kinds[d]))
    if proof:
        d = proof[0]
        k, n = got[d]
        others = sorted(kinds[d] - {s.check})
        return {
            **out,
            "status": ONE_OF if others else PROVEN,
            "by": d,
            "k": k,
            "n": n,
            "evidence": f"{d} drawn in {k}/{n} trials"
            + (f", which {' and '.join(others)} lines here leave alike: not told apart" if others else ""),
        }
    tried = [(chances[d], d) for d in s.diagnoses if chances.get(d, 0) > 0]
    if tried:
        n, d = max(tried)
        hi = wilson(0, n)[1]
        return {
            **out,
            "status": NOT_PROVEN,
            "by": d,
            "k": 0,
            "n": n,
            "upper95": round(hi, 4),
            "evidence": f"{d} could have been drawn in {n} trials and was not: rate < {hi:.0%} at 95%",
        }
    return {
        **out,
        "status": NOT_EXERCISED,
        "by": None,
        "evidence": f"no trial held the evidence of {' or '.join(s.diagnoses) or 'any diagnosis'}",
    }


def lines_text(section: dict[str, Any], source: str) -> str:
    """The terminal's view: proven lines beside their diagnosis, then the lines the run cleared
    or could not test. Never a bare list of suspects."""
    sus = section["suspects"]
    head = (
        f"The lines ([source] {source}: {section['files']} Python files"
        + (f", {section['skipped_non_python']} other files skipped" if section["skipped_non_python"] else "")
        + f", {len(sus)} suspect lines):"
    )
    out = [head]
    for status in STATUSES:
        mine = [x for x in sus if x["status"] == status]
        if not mine:
            continue
        out.append(f"  {status} ({len(mine)}):")
        for x in mine:
            out.append(f"    {x['path']}:{x['line']}  {x['mechanism']} -- {x['evidence']}")
            out.append(f"        {x['code'][:100]}")
    if not any(x["status"] in (PROVEN, ONE_OF) for x in sus):
        out.append("  proven: none (no diagnosis of this run points at a suspect line)")
    for code in section["without_suspect"]:
        out.append(
            f"  {code}: drawn, with no suspect line in the source (a mechanism the static "
            "checks do not know, or code outside [source] paths)"
        )
    if section.get("ruff_error"):
        out.append(f"  (ruff: {section['ruff_error']}; the lab's own checks ran)")
    return "\n".join(out)


def lines_html(section: dict[str, Any]) -> str:
    """report.html's view: one row per suspect line, proven first, each with its evidence."""
    from html import escape

    rows = sorted(section["suspects"], key=lambda x: (STATUSES.index(x["status"]), x["path"], x["line"]))
    cls = {PROVEN: "proven", ONE_OF: "one-of", NOT_PROVEN: "cleared", NOT_EXERCISED: "untested"}
    body = "".join(
        f"<tr class='{cls[x['status']]}' data-suspect='{escape(x['check'])}' data-status='{escape(x['status'])}'>"
        f"<td>{escape(x['status'])}</td><td><code>{escape(x['path'])}:{x['line']}</code></td>"
        f"<td><code>{escape(x['code'][:100])}</code></td><td>{escape(x['mechanism'])}</td>"
        f"<td>{escape(x['evidence'])}</td></tr>"
        for x in rows
    )
    extra = "".join(
        f"<li>{escape(c)}: drawn, with no suspect line in the source</li>" for c in section["without_suspect"]
    )
    return (
        "<h2>The lines: suspects proven or cleared by the experiments</h2>"
        f"<p>{section['files']} Python files scanned ({section['skipped_non_python']} other files skipped). "
        "A suspect is a line that may cause a mechanism; only a diagnosis drawn by this run proves it.</p>"
        "<table class='suspects'><tr><th>status</th><th>line</th><th>code</th><th>mechanism</th>"
        f"<th>evidence</th></tr>{body}</table>" + (f"<ul>{extra}</ul>" if extra else "")
    )
