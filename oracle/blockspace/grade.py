"""Grade one blockspace submission against a rubric (rubric.toml): each rule's scenario programs
(programs.py), then the state machine against the model (fuzz), on the core's Python grader
(oracle/grading/python_family.py). A submission is `engine` (ours), `pkg.module[:Class]`, a .py file
`path/block_manager.py[:Class]` or a folder holding block_manager.py (Class: BlockSpaceManager by default). It
runs in a sandboxed child (oracle/served.py); the grader never imports it. An item whose program meets another rule's
difference first stops there and passes, excused: that bug costs the other rule's item (grader.py, Excuse)."""

from pathlib import Path
from typing import Any

from oracle.blockspace.programs import BY_ITEM, load as load_program, replay
from oracle.blockspace.rules import RULES
from oracle.grading import python_family
from oracle.grading.grader import GraderError, rubric_for
from oracle.grading.rubric import Rubric

DEFAULT_RUBRIC = Path(__file__).with_name("rubric.toml")
SERVER = Path(__file__).with_name("adapter.py")  # the adapter is the child's server too
# rubric item -> the calls that exercise its rule: a program stopped by another rule's bug before any of them
# checked nothing of the item's own rule, and earns nothing
JUDGED = {"block_table": {"admit", "append"}, "watermark": {"admit"}, "copy_on_write": {"append"},
          "sharing": {"fork", "free"}, "swap": {"swap_out", "swap_in"}, "recompute": {"recompute"}}
CHECKS = {item: python_family.scenario_check(item, RULES[item], [load_program(n) for n in names], replay, JUDGED[item])
          for item, names in BY_ITEM.items()} | {"fuzz": python_family.fuzz_check("blockspace", RULES["fuzz"])}


def load(path: Path | str | None = None) -> Rubric:
    return rubric_for(CHECKS, path or DEFAULT_RUBRIC)


def resolve(submission: str) -> str:
    """The `pkg.module[:Class]` or `file.py[:Class]` a submission names (a folder: its block_manager.py)."""
    name, colon, attr = ("engine.blockspace" if submission == "engine" else submission).partition(":")
    return f"{Path(name) / 'block_manager.py' if Path(name).is_dir() else name}{colon}{attr}"


def grade(submission: str, rubric: Rubric, out_dir: Path, **options: Any) -> python_family.GradeReport:
    from oracle.blockspace.adapter import Failure
    from oracle.hw3.pylocate import locate
    from oracle.served import Served

    try:
        target = locate(resolve(submission))
    except ValueError as exc:
        raise GraderError(f"{submission}: {exc}") from None
    def serve(target: Any, sandbox: Any, timeout: float) -> Served:
        return Served(target, sandbox, server=SERVER, failure=Failure, renew="start", timeout=timeout)

    return python_family.grade("blockspace", CHECKS, submission, target, serve, rubric, out_dir, **options)
