"""README and docs/ stay honest: every page is linked from README, every link and every path
they name exists, and every `lab ...` / `make ...` command they show parses against the real
CLI (lab.cli.build_parser) or Makefile (its targets and the variables it reads)."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from lab.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 250

# Where a repository path starts; a span naming one of these is checked to exist.
TOP = ("lab/", "services/", "tests/", "examples/", "docs/", "lessons/", "scripts/", "deploy/", ".ci/")
TOP_FILES = ("compose.yaml", "toxiproxy.json", "Makefile", "requirements.lock", "pyproject.toml")
# Placeholders the pages write for a value the reader picks.
PLACEHOLDERS = {"N": "1", "K": "1", "SEED": "1", "TRIALS": "1", "C": "1", "R": "1", "M": "1", "PATH": "x", "DIR": "x"}


def _code(text: str) -> list[str]:
    """Command lines: each line of a sh fence (comments cut, continuations joined) and each
    inline code span."""
    out = []
    for block in re.findall(r"```(?:sh|bash|console)\n(.*?)```", text, re.S):
        joined = block.replace("\\\n", " ")
        out += [line.split(" #")[0].strip() for line in joined.splitlines()]
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    out += re.findall(r"`([^`\n]+)`", prose)
    return [c for c in out if c]


def _commands(kind: str) -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for line in _code(page.read_text()):
            for c in _split(line):
                found += _command(kind, page.name, c)
    return found


def _split(line: str) -> list[str]:
    """A shell line cut at its operators (; & && || |) outside quotes."""
    line = re.sub(r"<[^<>\s]+>", "x", line)  # reports/<run-id>: a value the reader has
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    parts: list[list[str]] = [[]]
    try:
        for tok in lex:
            if tok and set(tok) <= set(";&|"):
                parts.append([])
            else:
                parts[-1].append(tok)
    except ValueError:  # unbalanced quotes: a fragment of prose, left whole
        return [line]
    return [shlex.join(p) for p in parts if p]


def _command(kind: str, page: str, c: str) -> list[tuple[str, str]]:
    words = c.split()
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", words[0]):  # env prefixes
        words = words[1:]
    if words and words[0] in ({"lab", ".venv/bin/lab"} if kind == "lab" else {"make"}):
        return [(page, " ".join(words))]
    return []


def _args(command: str) -> list[str] | None:
    """The arguments of a shown command, placeholders filled in; None if it is a sketch
    (an ellipsis, a <placeholder>, a | b alternatives) rather than a command to paste."""
    try:
        words = shlex.split(command.replace("[", "").replace("]", ""))[1:]  # [--opt X]: taken
    except ValueError:
        return None
    if any(w in ("...", "…") or "$" in w for w in words):
        return None
    words = [w.rstrip(".…") if w.endswith(("...", "…")) else w for w in words]  # DIR...: one DIR
    return [PLACEHOLDERS.get(w, w) for w in words]


def test_readme_is_short_and_links_every_page() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES
    pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert pages, "docs/ has pages"
    assert [p for p in pages if f"(docs/{p})" not in readme] == []


def test_every_link_and_path_named_exists() -> None:
    missing = []
    for page in PAGES:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if not re.match(r"\w+://", target) and not (page.parent / target).exists():
                missing.append(f"{page.name}: link {target}")
        for span in re.findall(r"`([^`\n]+)`", text):
            for word in span.split():
                word = word.rstrip(".,;:)")
                if not (word.startswith(TOP) or word in TOP_FILES):
                    continue
                if any(ch in word for ch in "<>*{}…$") or "NN_" in word or "…" in word:
                    pattern = re.sub(r"<[^>]*>|\{[^}]*\}|NN_|…|\*", "*", word)
                    if not list(ROOT.glob(pattern.rstrip("/"))):
                        missing.append(f"{page.name}: {word}")
                elif not (ROOT / word).exists():
                    missing.append(f"{page.name}: {word}")
    assert missing == []


@pytest.mark.parametrize("page,command", _commands("lab"))
def test_a_lab_command_shown_parses(page: str, command: str) -> None:
    args = _args(command)
    if args is None:
        pytest.skip(f"a sketch, not a command: {command}")
    if len(args) <= 1:  # the command named in prose (`lab merge`): it exists
        args = [*args, "--help"]
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            build_parser().parse_args(args)
        except SystemExit as exc:
            assert exc.code == 0, f"{page}: `{command}` does not parse: {err.getvalue().strip()}"


def _makefile() -> tuple[set[str], str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([a-z][\w-]*):", text, re.M)), text


@pytest.mark.parametrize("page,command", _commands("make"))
def test_a_make_command_shown_exists(page: str, command: str) -> None:
    args = _args(command)
    if args is None:
        pytest.skip(f"a sketch, not a command: {command}")
    targets, text = _makefile()
    for a in args:
        if "=" in a:
            var = a.split("=", 1)[0]
            assert re.search(rf"\$\({var}\)|\$\(if \$\({var}\)|^{var} \?=", text, re.M), f"{page}: make reads no {var}"
        else:
            assert a in targets, f"{page}: `{command}`: no make target {a!r} (targets: {sorted(targets)})"
