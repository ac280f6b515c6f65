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


def read(text: str, name: str, signatures: Mapping[str, str]) -> Program:
    """A program written one call per line, `OP ARG...` (`#` starts a comment). `signatures` gives each
    operation's arguments, in order: `int`, `float` (an int or a float) or a word that must appear as written;
    `?` ends one that may be left out (at the end), and `int...` (last) takes any number of ints, where `A..B`
    stands for A, A + 1, ..., B. A line that starts with `*` is a judged step (Step.judge). The operation it names
    first starts the program, once."""
    steps, first = [], next(iter(signatures))
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#")[0].split()
        judge = bool(words) and words[0] == "*"
        words = words[judge:]
        args = _values(words[1:]) if words else None
        if words and (args is None or not _fits(args, signatures.get(words[0]))):
            raise ProgramError(f"{name}, line {number}: not a call: {line.strip()!r}")
        steps += [Step(words[0], args, judge=judge)] if words else []
    if not steps or steps[0].op != first or any(step.op == first for step in steps[1:]):
        raise ProgramError(f"{name}: a program starts with one `{first}` line")
    return Program(name, tuple(steps))


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
