"""The spec's rules, and which rule a difference breaks: a table from the difference's aspect and the call that
made it (no message is parsed). Each rule belongs to one rubric item (checks.CHECKS names it)."""

from dataclasses import dataclass

from oracle.difference import Difference
from oracle.hw3.difference import (
    BLOCK_ID, BLOCKS_TAKEN, CALL_ALLOCATIONS, CONTENTS, FREE_COUNT, GUARD, HEAP_CORRUPTED, KV_COUNT, LEAK, LIST_ORDER, MAPPING, POOL,
    REF_COUNT, RETURN, CRASH, STATE_CHANGE, TABLE_SHAPE,
)
from oracle.hw3.machine import POINTER_CALLS, Call

TASKS = {
    "llm_init": "Task 1: Engine Initialization",
    "create_sequence": "Task 2: Sequence Creation & Deletion",
    "free_sequence": "Task 2: Sequence Creation & Deletion",
    "fork_sequence": "Task 3: Sequence Forking",
    "append_kv": "Task 4: Virtual Addressing, CoW & Appending",
    "llm_destroy": "Task 5: Engine Destruction",
}
POINTER_SAFETY = "Constraint 1: Pointer Safety"
CHECK_BEFORE_ALLOCATE = "Constraint 2: Check Before Allocate"
FIRST_FIT = "Constraint 3: First-Fit Allocation"
NO_PREMATURE_WRITES = "Constraint 4: No Premature Memory Modification"
FREE_BLOCK_CONSISTENCY = "Constraint 5: Free Block Consistency"
TAIL_INSERTION = "Tasks 2-3: append to the tail of active_seqs (head->prev)"
L1_TRAVERSAL = "Tasks 2-3: free_sequence and fork_sequence visit ALL 16 L1 slots"
MEMORY_SAFETY = "Compilation Standard: Valgrind-clean, 0 bytes lost"
BIG_POOL = "Block addresses in size_t: pools over 2 GiB (beyond the spec's tests)"

# Constraint 4: "You may ONLY write to the physical memory during an actual append_kv operation"
_WRITES_NOTHING = ("llm_init", "create_sequence", "fork_sequence", "free_sequence", "llm_destroy")
_PICKS_BLOCKS = ("create_sequence", "append_kv")  # first fit decides which block these map
_ONE_SEQUENCE = ("create_sequence", "append_kv", "free_sequence")  # these touch their own sequence only
WALKS = ("free_sequence", "fork_sequence")  # these walk a block table's 16 L1 slots
_WALKED = (BLOCKS_TAKEN, FREE_COUNT, REF_COUNT, TABLE_SHAPE, MAPPING, LEAK)  # what a walk that skips a slot leaves


def fails(api: str, returned: bool | int) -> bool:
    """Whether a call's return value is its failure value: NULL for the pointer calls, -1 for the others
    (0 == False in Python, so `returned in (False, -1)` would count a successful append as failing)."""
    return returned is False if api in POINTER_CALLS else returned == -1


@dataclass(frozen=True, slots=True)
class Effects:
    """What a call did to the implementation's own state, from its observations before and after."""

    moved: frozenset[int]  # the sequences whose block tables it changed
    taken: frozenset[int]  # the blocks whose ref_count it raised from 0: the blocks it allocated
    wrote: bool = True  # whether the pool's bytes changed
    picked: frozenset[int] | None = None  # the blocks the model's call newly mapped (None: unknown)
    search_failed: bool = False  # it left a block unmapped because its search for a free block failed (fresh_pool.py)
    skipped: frozenset[int] = frozenset()  # the L1 slots a free or fork left untouched while it walked others
    stray: bool = False  # an append wrote its record, and other slots of that block it did not copy
    reordered_only: bool = True  # the list's order is all that differs after the call


STRAY_WRITE = Effects(frozenset(), frozenset(), stray=True)  # all that is known of an append: it wrote astray


def rule_of(difference: Difference, call: Call, effects: Effects | None = None) -> str:
    """The rule `difference`, seen right after `call`, breaks. `effects`, when known, tells a call's own bug
    from another's: a difference in another sequence's table the call did not change is the call's own rule
    (an append that wrote in place into a block another sequence shares), and a wrong block id is first
    fit's only when the call did allocate that block where the model took one too (an append that allocated
    nothing, or copied a block it holds alone, is Task 4's)."""
    aspect, api = difference.aspect, call.api
    if aspect == CRASH and difference.location == HEAP_CORRUPTED:
        return MEMORY_SAFETY  # the heap was corrupted before: where, valgrind (the memory_safety item) says
    if call.null and api != "llm_init":
        return POINTER_SAFETY
    if aspect == GUARD:
        return MEMORY_SAFETY
    if aspect in (CALL_ALLOCATIONS, STATE_CHANGE):
        return CHECK_BEFORE_ALLOCATE
    if aspect == LEAK:
        return TASKS["llm_destroy"]
    if aspect in (POOL, CONTENTS) and api in _WRITES_NOTHING:
        if effects is not None and not effects.wrote:  # nothing written: the records it shows are another block's
            return FIRST_FIT if api in _PICKS_BLOCKS else TASKS[api]
        return NO_PREMATURE_WRITES
    if aspect == POOL and api == "append_kv" and effects is not None and effects.stray:
        return NO_PREMATURE_WRITES  # the record is right, and slots not yet appended were written too
    if api == "llm_init":
        return TASKS["llm_init"]
    if aspect not in (RETURN, CRASH) and fails(api, call.expected):
        return CHECK_BEFORE_ALLOCATE  # a call that must fail changed something on its way to failing
    if effects is not None and effects.skipped and api in WALKS and aspect in _WALKED:
        return L1_TRAVERSAL  # whole L1 slots left as they were while the others were walked: the L1 loop's bug
    if aspect == FREE_COUNT:
        return FREE_BLOCK_CONSISTENCY
    if effects is not None and effects.search_failed and aspect in (BLOCKS_TAKEN, MAPPING, REF_COUNT):
        return FIRST_FIT  # it asked for each block and its search found none, though the model found one
    if aspect == BLOCK_ID and api in _PICKS_BLOCKS and (effects is None or (
            difference.got in effects.taken and (effects.picked is None or difference.expected in effects.picked))):
        return FIRST_FIT  # both took a block there, and another one: which block is first fit's choice
    if aspect == LIST_ORDER and (api in ("create_sequence", "fork_sequence") or effects is None or effects.reordered_only):
        return TAIL_INSERTION  # the list keeps creation order, whichever call reordered it (beside another
        # difference of an append or a free, the order is that call's: a reorder planted there hides nothing)
    others_moved = effects is not None and any(seq != call.args[0] for seq in effects.moved)
    if (aspect in (TABLE_SHAPE, MAPPING, BLOCK_ID, KV_COUNT) and api in _ONE_SEQUENCE and difference.seq is not None
            and ((difference.seq != call.args[0] and (effects is None or difference.seq in effects.moved))
                 or others_moved)):
        return TASKS["fork_sequence"]  # the call changed another sequence's table: a fork shared an L2 table
    return TASKS[api]
