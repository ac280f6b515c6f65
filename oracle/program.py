"""A call program as data, for every family: a name and its steps, each an operation's name and its
arguments. A family's replay makes each step's call on an implementation and on its model together, and
compares them after every call (each family's replay.py)."""

from dataclasses import dataclass


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
