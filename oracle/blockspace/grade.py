"""Grade one blockspace submission against a rubric (rubric.toml): each rule's scenario programs (programs.py),
then the state machine against the model (fuzz), on the core's grader of served Python submissions
(oracle/grading/python_family.py, ServedGrader). A submission is `engine` (ours), `pkg.module[:Class]`, a .py
file `path/block_manager.py[:Class]` or a folder holding block_manager.py (Class: BlockSpaceManager by default).
It runs in a sandboxed child with our adapter as its server (oracle/served.py); the grader never imports it. An
item whose program meets another rule's difference reads past it where the model can follow (a refusal), or stops
there and passes, excused: that bug costs the other rule's item (oracle/grading/settlement.py); what it could not
check past, the fuzz item checks, and a fuzz failure charges the item of the rule it breaks."""

from pathlib import Path

from oracle.blockspace.adapter import Failure
from oracle.blockspace.programs import BY_ITEM, load as load_program, replay
from oracle.blockspace.rules import RULES, also
from oracle.grading.python_family import ServedGrader
from oracle.reply_shape import COUNT, Int, OneOf
from oracle.pylocate import locate

# what each method of the served adapter (adapter.py) answers; the others answer null. A block id is any int (a
# negative one is a wrong table, judged as such); a sequence, a position, a count is not negative.
REPLIES = {
    "ask": OneOf(bool, str),  # True/False, or an AllocStatus's name
    "append_slots": [(Int(), Int())],  # copy-on-write (src, dst) pairs
    "swap": [(Int(), Int())],  # (src, dst) pairs
    "observe": {"tables": [(COUNT, [Int()])], "free": (COUNT, COUNT), "ref_counts": [(COUNT, COUNT, Int())]},
}
GRADER = ServedGrader(
    "blockspace", RULES, {item: tuple(map(load_program, names)) for item, names in BY_ITEM.items()},
    # rubric item -> the calls that exercise its rule
    judged={"block_table": {"admit", "append"}, "watermark": {"admit"}, "copy_on_write": {"append"},
            "sharing": {"fork", "free"}, "swap": {"swap_out", "swap_in"}, "recompute": {"recompute"}},
    replay=replay, server=Path(__file__).with_name("adapter.py"), failure=Failure, renew="start", replies=REPLIES,
    default_rubric=Path(__file__).with_name("rubric.toml"), engine="engine.blockspace", module_file="block_manager.py",
    locate=locate, also=also)
