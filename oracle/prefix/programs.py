"""The directed call programs of the prefix family's rubric, one per rule of the lab (seed 001), read from the
plain-text files in programs/ (oracle/program.py): programs/ITEM.txt judges the rubric item ITEM, and
programs/without_fork/ITEM.txt is the one for a target without fork.

One call per line: `start BLOCKS BLOCK_SIZE` makes the pool (first, once); `admit TOKEN...` and
`lookup TOKEN...` (`A..B` is a run of token ids); `free RID`; `fork RID POSITION` (copy-on-write of that entry
of its table); `append RID TOKEN`. Request ids are given in admission order (the first `admit` is request 0).
A line starting with `*` is a judged step, one that exercises the program's own rule: an item whose program
another rule's bug stops before any of them earns nothing (it checked nothing of its own). Each program keeps
clear of the other rules' edge cases, so another rule's bug rarely reaches it.
"""

from pathlib import Path

from oracle.program import Program, read

FOLDER = Path(__file__).with_name("programs")
SIGNATURES = {"start": "int int", "admit": "int...", "lookup": "int...", "free": "int", "fork": "int int",
              "append": "int int"}


def load(path: Path) -> Program:
    """The program file at `path`, named by its file (`no_false_hit` is "no false hit"); ProgramError."""
    return read(path.read_text(), path.stem.replace("_", " "), SIGNATURES)


BY_ITEM = {path.stem: load(path) for path in sorted(FOLDER.glob("*.txt"))}
WITHOUT_FORK = {path.stem: load(path) for path in sorted((FOLDER / "without_fork").glob("*.txt"))}


def program_for(item: str, supports: frozenset[str] | set[str]) -> Program:
    """The directed program of `item` for a target with the optional operations `supports`: its own, or the one
    that does without an operation the target lacks."""
    program = BY_ITEM[item]
    lacking = program.ops - {"start", "admit", "free", "lookup"} - set(supports)
    return WITHOUT_FORK[item] if lacking == {"fork"} and item in WITHOUT_FORK else program
