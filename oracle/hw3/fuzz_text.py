"""A fuzz failure told in the student's own terms: the minimal program's calls as they write them (C for a C
file, Python for a module), numbered, what each must return, and what went wrong at the failing call."""

from pathlib import Path

from oracle.hw3.checks import finding_from
from oracle.hw3.feedback import listing, went_wrong, written
from oracle.hw3.machine import Divergence


def kind_of(impl: str) -> str:
    """The language a student wrote `impl` in, as `fuzz --impl` names it: a C file (or a folder holding one)."""
    path = Path(impl)
    return "c" if path.suffix == ".c" or (path / "llm_memory.c").is_file() else "python"


def failure_in_calls(failure: BaseException | None, impl: str) -> list[str]:
    """The lines `fuzz` prints before the program for pagedcheck: nothing when the failure has no calls."""
    if not isinstance(failure, Divergence) or not failure.calls:
        return []
    finding, kind = finding_from(failure), kind_of(impl)
    call = f"`{written(finding.call, kind).rstrip(';')}`"
    words, quoted = went_wrong(finding)  # the implementation's own text on lines of its own, indented as code
    return [f"Minimal failing program, as {'C' if kind == 'c' else 'Python'} calls (`pool`: a fresh buffer of the "
            "size given to llm_init):", "", listing(finding.calls, finding.step, kind), "",
            f"Call {finding.step} {call}: {words} (rule: {finding.rule}){':' if quoted else ''}",
            *(f"    {line}" for line in quoted.splitlines())]
