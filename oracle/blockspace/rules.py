"""The rules of a paged block manager (seed 002, the PagedAttention paper; vLLM v0's interface) the rubric
grades, and which rule a difference breaks: its aspect, or for the aspects every call checks, the call."""

from oracle.block_tables import FREE_BLOCKS, MOVE, REF_COUNTS, SHARED_WRITE, SHARING, TABLE_SIZE
from oracle.checked import rule_table
from oracle.difference import located, word
from oracle.kv_worker import KV_CONTENTS

# rubric item -> the rule, in the paper's words
RULES = {
    "block_table": "a sequence's block table holds ceil(len / block_size) blocks: only the last is partly filled, "
                   "and a new physical block is taken only when the last one is full (the paper's 7-token prompt)",
    "watermark": "can_allocate says OK when the prompt's blocks leave at least the watermark free, NEVER when they "
                 "could not even on an empty GPU, else LATER",
    "copy_on_write": "a write into a block with ref count > 1 copies it to a new block first and append_slots "
                     "returns exactly that (src, dst) pair; a block held once is written in place (parallel sampling)",
    "sharing": "the sequences of a group share their prompt's blocks and fork shares a whole table (ref count + 1); "
               "free drops one holder and a block is free again only when its last holder frees it (beam search, "
               "a shared system prompt)",
    "swap": "swap_out and swap_in move every block of a group's sequences or none, each shared block once, only "
            "when the other device has the free blocks (can_swap_out, can_swap_in), and a round trip restores "
            "every sequence's contents",
    "recompute": "preemption by recomputation frees every block of the group (nothing leaks on either device); its "
                 "prompt and generated tokens are allocated again later as one new prompt",
    "fuzz": "after every call of a random program the manager agrees with the model of the paper's block manager",
}

_BY_ASPECT = {TABLE_SIZE: "block_table", "can_allocate": "watermark", "can_append_slots": "block_table",
              SHARING: "sharing", REF_COUNTS: "sharing", "cow pairs": "copy_on_write", SHARED_WRITE: "copy_on_write",
              MOVE: "swap", "can_swap_out": "swap", "can_swap_in": "swap"}
# free blocks (conservation), contents, a query that changed the state, a crash: the rule of the call that made them
# (a query that crashes: the query's own rule, not the step's)
_BY_OP = {"admit": "block_table", "append": "copy_on_write", "fork": "sharing", "free": "sharing",
          "swap_out": "swap", "swap_in": "swap", "recompute": "recompute",
          "can_allocate": "watermark", "can_append_slots": "block_table", "can_swap_out": "swap", "can_swap_in": "swap"}
ASPECTS = (*_BY_ASPECT, FREE_BLOCKS, KV_CONTENTS, "unchanged")  # prefix words "conservation"; hw3 owns "contents"

rule_of = rule_table(_BY_ASPECT, _BY_OP, "block_table")  # oracle/checked.py
# an aspect another rule's bug may make too: can_allocate's answer counts the prompt's blocks (a table too long asks
# for a block more), so a fuzz failure there charges the watermark item only where block_table's did not fail
ALSO = {"can_allocate": frozenset({"block_table"})}


def also(failure: BaseException) -> frozenset[str]:
    """The other rules whose bug may make a fuzz failure (grading/python_family.py fuzz_check)."""
    return ALSO.get(getattr(getattr(failure, "difference", None), "aspect", ""), frozenset())
word(dict.fromkeys(ASPECTS, located))
