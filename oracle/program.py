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


class ProgramError(ValueError):
    """A program file that is not one: the message names the file and the line."""


def read(text: str, name: str, arity: Mapping[str, tuple[int, int]]) -> Program:
    """A program written one call per line, `OP ARG...` (`#` starts a comment): each argument an int, a float or
    a word. `arity` gives each operation's fewest and most arguments; the operation it names first starts the
    program, once."""
    steps, first = [], next(iter(arity))
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#")[0].split()
        low, high = arity.get(words[0], (-1, -1)) if words else (0, 0)
        if not low <= len(words[1:]) <= high:
            raise ProgramError(f"{name}, line {number}: not a call: {line.strip()!r}")
        steps += [Step(words[0], tuple(map(_value, words[1:])))] if words else []
    if not steps or steps[0].op != first or any(step.op == first for step in steps[1:]):
        raise ProgramError(f"{name}: a program starts with one `{first}` line")
    return Program(name, tuple(steps))


def _value(word: str) -> int | float | str:
    for kind in (int, float):
        try:
            return kind(word)
        except ValueError:
            pass
    return word
