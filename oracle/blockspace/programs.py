"""The paper's scenarios as call programs (oracle/program.py), read from the plain-text files in programs/: one
call per line (`start`, `arrive`, `admit`, `append`, `fork`, `free`, `swap_out`, `swap_in`, `recompute`; README.md
gives their arguments), `#` starts a comment. Sequences and groups are numbered from 0 in the order they are made."""

from pathlib import Path

from oracle import checked
from oracle.blockspace.driver import Driver
from oracle.finding import Finding
from oracle.program import Program, read

FOLDER = Path(__file__).with_name("programs")
# rubric item -> the scenario programs that judge its rule
BY_ITEM = {"block_table": ("prompt_7_tokens",), "watermark": ("watermark",), "copy_on_write": ("parallel_sampling",),
           "sharing": ("beam_search", "shared_prefix"), "swap": ("swap_preemption",),
           "recompute": ("recompute_preemption",)}
SIGNATURES = {"start": "int int int float", "arrive": "int int?", "admit": "", "append": "int", "fork": "int new?",
              "free": "int", "swap_out": "int", "swap_in": "int", "recompute": "int"}
# each operation of a program: what it makes the driver do
OPERATIONS = {op: getattr(Driver, op) for op in ("start", "arrive", "admit", "append", "free", "recompute")} | {
    "swap_out": lambda driver, group: driver.swap(group, out=True),
    "swap_in": lambda driver, group: driver.swap(group, out=False),
    "fork": lambda driver, parent, *new: driver.fork(parent, new_group=new == ("new",))}


def load(name: str) -> Program:
    """The program file programs/NAME.txt; ProgramError naming the line that is not a call (oracle/program.py)."""
    return read((FOLDER / f"{name}.txt").read_text(), name, SIGNATURES)


def replay(program: Program, adapter: object, calls: list[str], rule: str | None = None) -> Finding | None:
    """The program run on the adapter and the model (oracle/checked.py): the first difference that stopped it, or
    None; `rule`: the rule it judges (another rule's refusal is read past, Finding.past)."""
    return checked.replay(program, Driver(adapter), OPERATIONS, calls, rule)
