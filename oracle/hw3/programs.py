"""HW3's directed programs as data: plain-text files in programs/ read by oracle/program.read, one call per line,
`OP [NULL] ARG...` (`#` starts a comment):

    llm_init POOL_BYTES            # llm_init NULL POOL_BYTES: a NULL pool
    create_sequence SEQ_ID INITIAL_KV_LEN
    fork_sequence PARENT_SEQ_ID NEW_SEQ_ID
    append_kv SEQ_ID KV_DATA
    free_sequence SEQ_ID
    llm_destroy

`NULL` right after the call passes NULL where its engine (or llm_init's pool) goes; a call made while there is
no engine (before llm_init, after a refused one or after llm_destroy) passes NULL too. Each directed rubric
item runs the programs BY_ITEM names (its `programs` option: a course names its own, found first in the
`programs/` folder beside its rubric, then here); memory_safety runs battery/ in BATTERY's order."""

import dataclasses
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from oracle.program import Program, ProgramError, Step, read

FOLDER = Path(__file__).with_name("programs")
SIGNATURES = {"llm_init": "int", "create_sequence": "int int", "fork_sequence": "int int", "append_kv": "int int",
              "free_sequence": "int", "llm_destroy": ""}
INT_RANGE = (-(2**31), 2**31 - 1)  # a C int
POOL_RANGE = (0, 2**26)  # llm_init's bytes: up to a 64 MiB pool (the model holds a copy of it)

# rubric item -> the programs (file stems) it runs by default, in order
BY_ITEM: dict[str, tuple[str, ...]] = {
    "llm_init": ("llm_init_refuses", "llm_init"),
    "create_free": ("create_sequence", "create_sequence_cap"),
    "fork": ("fork_sequence", "fork_references", "fork_shares_blocks"),
    "append_cow": ("append_kv", "append_kv_shared_by_four", "append_kv_oom_cow", "append_kv_cap"),
    "llm_destroy": ("llm_destroy", "llm_destroy_empty", "llm_destroy_after_free"),
    "null_engine": ("null_engine",),
    "check_before_allocate": ("failing_calls", "oom_append_needs_l2", "oom_append_new_page", "cap_with_free_blocks",
                              *(f"first_call_{i}" for i in range(5)), "after_destroy_and_init",
                              "failing_calls_as_sequences_grow"),
    "first_fit": ("first_fit", "first_fit_after_destroy_and_init", "first_fit_many_holes",
                  "first_fit_holes_of_many_blocks",
                  *(f"first_fit_frees_{order}" for order in ("123", "132", "213", "231", "312", "321"))),
    "no_premature_writes": ("no_premature_writes", "no_premature_writes_partial_block"),
    "free_count": ("free_count",),
    "tail_insertion": ("tail_insertion",),
    "l1_traversal": ("all_16_l1_slots",),
}
# memory_safety's battery (programs/battery/): between them every API and every path of the spec
BATTERY = ("init_destroy_empty", "init_refused", "odd_pool_sizes", "create_free_first_fit", "fork_and_cow",
           "append_to_the_cap", "oom_on_create", "oom_on_append", "oom_on_cow", "failing_calls",
           "destroy_with_shared_blocks", "null_engine", "reinit")
ALLOCATING = "allocation_failure"  # alloc_failure's program
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")  # a program's name: its file's stem


def parse(text: str, name: str) -> Program:
    """A program written as a program file is; ProgramError "NAME, line N: what is wrong"."""
    program = read(text, name, SIGNATURES, opens=False)
    for number, step in _numbered(text, program):
        low, high = POOL_RANGE if step.op == "llm_init" else INT_RANGE
        wrong = next((arg for arg in step.args if not low <= arg <= high), None)
        if wrong is not None:
            raise ProgramError(f"{name}, line {number}: {wrong} is outside {step.op}'s range {low} to {high}")
    return program


def read_file(path: Path) -> Program:
    """The program in `path`, named by its stem; ProgramError "FILE, line N: what is wrong"."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise ProgramError(f"{path}: cannot read it: {getattr(exc, 'strerror', None) or exc}") from None
    return dataclasses.replace(parse(text, str(path)), name=path.stem)


def load(name: str, folders: Iterable[Path] = ()) -> Program:
    """The program NAME.txt from the first of `folders` that holds it, else from programs/; ProgramError."""
    if not NAME.fullmatch(name):
        raise ProgramError(f"{name!r} is no program name (letters, digits, _ . -)")
    for folder in (*folders, FOLDER):
        if (folder / f"{name}.txt").is_file():
            return read_file(folder / f"{name}.txt")
    where = " or ".join(str(folder) for folder in (*folders, FOLDER))
    raise ProgramError(f"no program {name!r}: no {name}.txt in {where}")


def for_item(item: str, options: Mapping[str, Any]) -> list[Program]:
    """The programs a directed item runs: its `programs` option as loaded with the rubric (hw3/grade.load), else
    the shipped ones BY_ITEM names."""
    return [name if isinstance(name, Program) else load(name) for name in options.get("programs", BY_ITEM[item])]


def battery_program(name: str) -> Program:
    """One of memory_safety's battery: programs/battery/NAME.txt."""
    return read_file(FOLDER / "battery" / f"{name}.txt")


def _numbered(text: str, program: Program) -> Iterable[tuple[int, Step]]:
    """Each step with the number of the line it was read from."""
    lines = (number for number, line in enumerate(text.splitlines(), 1) if line.split("#")[0].split())
    return zip(lines, program.steps)
