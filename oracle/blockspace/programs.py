"""The paper's scenarios as call programs (oracle/program.py), read from the plain-text files in programs/: one
call per line (`start`, `arrive`, `admit`, `append`, `fork`, `free`, `swap_out`, `swap_in`, `recompute`; README.md
gives their arguments), `#` starts a comment. Sequences and groups are numbered from 0 in the order they are made."""

from pathlib import Path

from oracle import checked
from oracle.blockspace.driver import Driver
from oracle.finding import Finding
from oracle.program import Program, Step, read

FOLDER = Path(__file__).with_name("programs")
# rubric item -> the scenario programs that judge its rule
BY_ITEM = {"block_table": ("prompt_7_tokens",), "watermark": ("watermark",), "copy_on_write": ("parallel_sampling",),
           "sharing": ("beam_search", "shared_prefix"), "swap": ("swap_preemption",),
           "recompute": ("recompute_preemption",)}
SIGNATURES = {"start": "int int int float", "arrive": "int int?", "admit": "", "append": "int", "fork": "int new?",
              "free": "int", "swap_out": "int", "swap_in": "int", "recompute": "int"}


def parse(text: str, name: str) -> Program:
    """The program in `text`; ProgramError naming the line that is not a call (oracle/program.py)."""
    return read(text, name, SIGNATURES)


def load(name: str) -> Program:
    return parse((FOLDER / f"{name}.txt").read_text(), name)


def run(driver: Driver, step: Step) -> None:
    if step.op in ("swap_out", "swap_in"):
        driver.swap(step.args[0], out=step.op == "swap_out")
    elif step.op == "fork":
        driver.fork(step.args[0], new_group=step.args[1:] == ("new",))
    else:
        getattr(driver, step.op)(*step.args)


def replay(program: Program, adapter: object, calls: list[str]) -> Finding | None:
    """The program run on the adapter and the model (oracle/checked.py): the first difference, or None."""
    return checked.replay(program, Driver(adapter), run, calls)
