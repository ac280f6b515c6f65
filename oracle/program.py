"""A call program as data, for every family: a name and its steps, each an operation's name and its
arguments. A family's replay makes each step's call on an implementation and on its model together, and
compares them after every call (each family's replay.py)."""

from dataclasses import dataclass
from typing import Mapping


@dataclass(frozen=True, slots=True)
class Step:
    op: str  # the operation, in the family's terms: "create_sequence", "admit", ...
    args: tuple = ()
    null: bool = False  # the call gets NULL where its handle goes (an engine, a pool)
    judge: bool = False  # a step that exercises the program's own rule (an item stopped before any checked nothing)


@dataclass(frozen=True, slots=True)
class Program:
    name: str  # its name in messages
    steps: tuple[Step, ...]

    @property
    def ops(self) -> set[str]:
        return {step.op for step in self.steps}


NULL = "NULL"  # the word, right after the operation, of a call made with a NULL handle


class ProgramError(ValueError):
    """A program file that is not one: the message names the file and the line."""


def read(text: str, name: str, signatures: Mapping[str, str], opens: bool = True) -> Program:
    """A program written one call per line, `OP ARG...` (`#` starts a comment); `OP NULL ARG...` makes the call
    with NULL where its handle goes (Step.null), and a line that starts with `*` is a judged step (Step.judge).
    `signatures` gives each operation's arguments, in order: `int`, `float` (an int or a float) or a word that
    must appear as written; `?` ends one that may be left out (at the end), and `int...` (last) takes any number
    of ints, where `A..B` stands for A, A + 1, ..., B. With `opens`, the operation it names first starts the
    program, once."""
    steps, first = [], next(iter(signatures))
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#")[0].split()
        judge = bool(words) and words[0] == "*"
        words = words[judge:]
        null = len(words) > 1 and words[1] == NULL
        args = _values(words[1 + null:]) if words else None
        if words and (args is None or not _fits(args, signatures.get(words[0]))):
            raise ProgramError(f"{name}, line {number}: not a call: {line.strip()!r}")
        steps += [Step(words[0], args, null, judge)] if words else []
    if opens and (not steps or steps[0].op != first or any(step.op == first for step in steps[1:])):
        raise ProgramError(f"{name}: a program starts with one `{first}` line")
    if not steps:
        raise ProgramError(f"{name}: no call in it")
    return Program(name, tuple(steps))


def write(program: Program) -> str:
    """The program as `read` reads it back, one call per line."""
    return "".join(" ".join([*(["*"] if step.judge else []), step.op, *([NULL] if step.null else []),
                             *map(str, step.args)]) + "\n"
                   for step in program.steps)


def _fits(args: tuple, signature: str | None) -> bool:
    kinds = signature.split() if signature is not None else None
    if kinds and kinds[-1] == "int...":
        return _fits(args[:len(kinds) - 1], " ".join(kinds[:-1])) and all(type(a) is int for a in args[len(kinds) - 1:])
    if kinds is None or not sum(not k.endswith("?") for k in kinds) <= len(args) <= len(kinds):
        return False
    return all(type(arg) is int if kind == "int" else type(arg) in (int, float) if kind == "float" else arg == kind
               for arg, kind in zip(args, (k.removesuffix("?") for k in kinds)))


def _values(words: list[str]) -> tuple | None:
    """The words as values, each `A..B` (ints, A <= B) as its run; None when a run is not one."""
    values: list = []
    for word in words:
        low, dots, high = word.partition("..")
        if not dots:
            values.append(_value(word))
        elif type(_value(low)) is int and type(_value(high)) is int and int(low) <= int(high):
            values += range(int(low), int(high) + 1)
        else:
            return None
    return tuple(values)


def _value(word: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(word)
        except ValueError:
            pass
    return word
