"""The directed programs (oracle/hw3/programs/) as the documentation quotes them: every `PROGRAM: step N CALL`
(or `PROGRAM step N CALL`, as a message says "not checked past PROGRAM step N CALL") in a Markdown file of the
repository names step N of that program as it is now. Adding a call to a program moves every later step: a
quote written before is then wrong (fork-refs added calls to eleven programs; unseen/README.md quoted
llm_destroy.txt's destroy as step 6, now step 9)."""

import re
import subprocess
from pathlib import Path

import pytest

from oracle.hw3 import programs
from oracle.hw3.programs import FOLDER
from oracle.program import Program

ROOT = Path(__file__).resolve().parents[1]
# a program's name, `step N`, and the call as a message writes it: `append_kv(engine, 4, 31)`, `llm_init(pool, 768)`
QUOTE = re.compile(r"\b([A-Za-z0-9_]+):? step (\d+) ([a-z_]+)\((?:engine|NULL|pool)((?:, -?\d+)*)\)")


def _program(name: str) -> Program | None:
    for path in (FOLDER / f"{name}.txt", FOLDER / "battery" / f"{name}.txt"):
        if path.is_file():
            return programs.read_file(path)
    return None


def _documents() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:  # not a git checkout: every Markdown file but the environment's
        return [p for p in ROOT.rglob("*.md") if ".venv" not in p.parts]
    return [ROOT / line for line in listed.stdout.splitlines()]


def quotes(text: str) -> list[tuple[str, int, str, tuple[int, ...]]]:
    """Each quote of a step of a shipped program in `text`: (program, step, op, args)."""
    found = []
    for match in QUOTE.finditer(text):
        name, step, op, args = match.groups()
        if _program(name) is not None:
            found.append((name, int(step), op, tuple(int(a) for a in args.split(", ")[1:])))
    return found


def misquoted(text: str) -> list[str]:
    """The quotes in `text` whose step N is not that call, each with where the program makes it."""
    wrong = []
    for name, number, op, args in quotes(text):
        steps = _program(name).steps  # type: ignore[union-attr]
        if number <= len(steps) and (steps[number - 1].op, steps[number - 1].args) == (op, args):
            continue
        at = [i for i, s in enumerate(steps, 1) if (s.op, s.args) == (op, args)]
        wrong.append(f"{name}: step {number} {op}{args}: the program makes that call at step(s) {at}")
    return wrong


def test_a_quote_is_read_as_the_program_step_it_names() -> None:
    text = ("`first_fit: step 17 append_kv(engine, 9, 1)`, `create_free: create_sequence: step 28 "
            "create_sequence(engine, 6, 576)`, not checked past first_fit step 10 append_kv(engine, 4, 9), "
            "`llm_destroy: step 9 llm_destroy(engine)`, `unknown_program: step 3 llm_destroy(engine)`")
    assert quotes(text) == [("first_fit", 17, "append_kv", (9, 1)), ("create_sequence", 28, "create_sequence", (6, 576)),
                            ("first_fit", 10, "append_kv", (4, 9)), ("llm_destroy", 9, "llm_destroy", ())]
    assert misquoted(text) == []
    assert misquoted("`llm_destroy: step 6 llm_destroy(engine): crashed`") == [
        "llm_destroy: step 6 llm_destroy(): the program makes that call at step(s) [9]"]


@pytest.mark.parametrize("document", _documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_quoted_step_is_that_step_of_its_program(document: Path) -> None:
    assert misquoted(document.read_text()) == []
