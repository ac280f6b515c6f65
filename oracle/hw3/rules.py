"""The spec's rules, and which rule a difference breaks: RULES, a table from the difference's aspect, the call that
made it and what that call did (its facts, from the difference's structured fields and the call's Effects; no
message is parsed). Each rule belongs to one rubric item (ITEMS; item_of)."""

from collections.abc import Callable
from dataclasses import dataclass

from oracle.difference import Difference
from oracle.hw3.difference import (
    BLOCK_ID, BLOCKS_TAKEN, CALL_ALLOCATIONS, CONTENTS, CRASH, ENGINE, FREE_COUNT, GUARD, HEAP_CORRUPTED, KV_COUNT, LEAK,
    LIST_BROKEN, LIST_IDS, LIST_ORDER, MAPPING, POOL, POOL_SIZE, REF_COUNT, RETURN, STATE_CHANGE, TABLE_SHAPE, TOTAL,
)
from oracle.hw3.call import POINTER_CALLS, Call

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
COMPILATION = "Compilation Standard: gcc -std=c11 -Wall -Wextra -Wpedantic -Werror -O2"
ALL_RULES = "All rules: stateful fuzzing against the oracle"
ROBUSTNESS = "Robustness: a failed malloc leaves no trace (no crash, no leak, no half-built sequence)"

ITEMS = {  # the rubric item that enforces each rule, in the rubric's order (checks.CHECKS is built from it)
    "compiles": COMPILATION,
    "llm_init": TASKS["llm_init"],
    "create_free": TASKS["create_sequence"],
    "fork": TASKS["fork_sequence"],
    "append_cow": TASKS["append_kv"],
    "llm_destroy": TASKS["llm_destroy"],
    "big_pool": BIG_POOL,
    "null_engine": POINTER_SAFETY,
    "check_before_allocate": CHECK_BEFORE_ALLOCATE,
    "first_fit": FIRST_FIT,
    "no_premature_writes": NO_PREMATURE_WRITES,
    "free_count": FREE_BLOCK_CONSISTENCY,
    "l1_traversal": L1_TRAVERSAL,
    "tail_insertion": TAIL_INSERTION,
    "fuzz": ALL_RULES,
    "memory_safety": MEMORY_SAFETY,
    "alloc_failure": ROBUSTNESS,
}

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
    elsewhere: bool = False  # an append wrote its record at its offset into a block the model holds free, not the
    # model's: another block than first fit's (unread.py: seen in the pool where the tables are not read)
    short: bool = False  # a create or append refused for want of blocks where the model had them (fresh_pool.py)
    held: bool = False  # an append wrote its record into a block the model holds, not its own: shared, or held
    # by a sequence (unread.py: seen in the pool)
    wrong_fork: bool = False  # a fork before the call is shown wrong by a second opinion (fork_witness.py)
    fork_too: bool = False  # an append wrote a block a fork's two share in place, and the same graded run shows
    # its appends copy a block: a fork without references or a copy-on-write that copies only sometimes, the
    # fork's rule as well as Task 4's (fork_witness.py)


STRAY_WRITE = Effects(frozenset(), frozenset(), stray=True)  # all that is known of an append: it wrote astray


# What a call did that tells whose rule a difference in its state breaks, most telling first. A difference is
# charged by the first of these that both has a row in RULES for its aspect and call and holds; when none
# does, by the row for its aspect and call alone (NOTHING), else to the call's own task.
HEAP_SMASHED = "heap corrupted"  # the crash is the allocator finding its heap corrupted (by any earlier call)
NULL_ENGINE = "NULL engine"  # the call was given a NULL engine
WROTE_NOTHING = "wrote nothing"  # the pool's bytes did not change: the records it shows are another block's
WROTE_ASTRAY = "wrote astray"  # an append wrote its record, and slots of that block it did not copy
MUST_FAIL = "must fail"  # the call must fail: what it changed, it changed on its way to failing
SKIPPED_SLOTS = "skipped L1 slots"  # a free or fork left whole L1 slots as they were while it walked others
SEARCH_FAILED = "search failed"  # it asked for each block and its search found none, though the model found one
TOOK_THERE = "took a block there"  # it allocated the block it shows where the model allocated one too
REORDERED_ONLY = "reordered only"  # the list's order is all that differs after the call
WROTE_ELSEWHERE = "wrote elsewhere"  # an append wrote its record into a block the model holds free, not its own
SHORT_OF_BLOCKS = "short of blocks"  # refused though the model had the blocks, and succeeds with plenty free
AFTER_WRONG_FORK = "after a wrong fork"  # a block held or a refusal missed, after a fork a witness shows wrong
MOVED_ANOTHER = "moved another sequence"  # it changed another sequence's table: a fork shared an L2 table
NOTHING = ""  # none of these: the aspect and the call decide

ANY = "*"  # any aspect, or any call
OWN_TASK = "the call's own task"  # TASKS[the call]

# the calls on a live engine: llm_init builds every fact of the engine, so whatever it gets wrong but the pool,
# the guards and the heap is its own task (it has no row below)
ENGINE_CALLS = ("create_sequence", "free_sequence", "fork_sequence", "append_kv", "llm_destroy")
# the aspects of the engine's state a call that must fail may not change (a return value or a crash is how it
# fails; guard, heap and state_change differences have rules of their own, as have the pool and the records of
# the calls that must write nothing)
_STATE = (ENGINE, POOL_SIZE, TOTAL, FREE_COUNT, BLOCKS_TAKEN, REF_COUNT, LIST_BROKEN, LIST_IDS, LIST_ORDER, KV_COUNT,
          TABLE_SHAPE, BLOCK_ID, MAPPING)
_TABLES = (TABLE_SHAPE, MAPPING, BLOCK_ID, KV_COUNT)  # a sequence's table: what a shared L2 table changes

# (aspect, call, what the call did) -> the rule it breaks
RULES: dict[tuple[str, str, str], str] = {
    (CRASH, ANY, HEAP_SMASHED): MEMORY_SAFETY,  # where the heap was corrupted, valgrind (memory_safety) says
    (ANY, ANY, NULL_ENGINE): POINTER_SAFETY,
    (GUARD, ANY, NOTHING): MEMORY_SAFETY,
    (CALL_ALLOCATIONS, ANY, NOTHING): CHECK_BEFORE_ALLOCATE,
    (STATE_CHANGE, ANY, NOTHING): CHECK_BEFORE_ALLOCATE,
    (LEAK, ANY, NOTHING): TASKS["llm_destroy"],
    # only append_kv writes the pool; a call that wrote nothing shows another block's records: the block it
    # picked (first fit's, for a create) or its own task's
    **{(aspect, api, WROTE_NOTHING): FIRST_FIT if api in _PICKS_BLOCKS else OWN_TASK
       for aspect in (POOL, CONTENTS) for api in _WRITES_NOTHING},
    **{(aspect, api, NOTHING): NO_PREMATURE_WRITES for aspect in (POOL, CONTENTS) for api in _WRITES_NOTHING},
    (POOL, "append_kv", WROTE_ASTRAY): NO_PREMATURE_WRITES,  # the record is right, slots not yet appended written
    **{(aspect, api, MUST_FAIL): CHECK_BEFORE_ALLOCATE for aspect in _STATE for api in ENGINE_CALLS},
    (POOL, "append_kv", MUST_FAIL): CHECK_BEFORE_ALLOCATE,
    (CONTENTS, "append_kv", MUST_FAIL): CHECK_BEFORE_ALLOCATE,
    **{(aspect, api, SKIPPED_SLOTS): L1_TRAVERSAL for aspect in _WALKED if aspect != LEAK for api in WALKS},
    **{(FREE_COUNT, api, NOTHING): FREE_BLOCK_CONSISTENCY for api in ENGINE_CALLS},
    **{(aspect, api, SEARCH_FAILED): FIRST_FIT for aspect in (BLOCKS_TAKEN, MAPPING, REF_COUNT) for api in ENGINE_CALLS},
    **{(BLOCK_ID, api, TOOK_THERE): FIRST_FIT for api in _PICKS_BLOCKS},  # which block: first fit's choice
    # where the tables are not read (unread.py): the record found in a block the model holds free is first fit's
    # choice (made by this append, or by the create or fork that mapped the block), and a refusal that more free
    # blocks undo is the engine's belief of how many are free, its free count's
    **{(aspect, "append_kv", WROTE_ELSEWHERE): FIRST_FIT for aspect in (POOL, CONTENTS)},
    **{(RETURN, api, SHORT_OF_BLOCKS): FREE_BLOCK_CONSISTENCY for api in _PICKS_BLOCKS},
    # ... and a record written into a block the model holds (shared, or a sequence's), or a create or append
    # granted where the model had no block free, after a fork its second opinion shows giving the child no
    # reference of its blocks (fork_witness.py), is the fork's: the block was never held twice
    **{(aspect, "append_kv", AFTER_WRONG_FORK): TASKS["fork_sequence"] for aspect in (POOL, CONTENTS, RETURN)},
    (RETURN, "create_sequence", AFTER_WRONG_FORK): TASKS["fork_sequence"],
    # the list keeps creation order, whichever call reordered it (beside another difference of an append or a
    # free, the order is that call's: a reorder planted there hides nothing)
    **{(LIST_ORDER, api, REORDERED_ONLY): TAIL_INSERTION for api in ENGINE_CALLS},
    **{(LIST_ORDER, api, NOTHING): TAIL_INSERTION for api in ("create_sequence", "fork_sequence")},
    **{(aspect, api, MOVED_ANOTHER): TASKS["fork_sequence"] for aspect in _TABLES for api in _ONE_SEQUENCE},
}


def _moved_another(d: Difference, call: Call, e: Effects | None) -> bool:
    own = call.args[0]
    return d.seq is not None and ((d.seq != own and (e is None or d.seq in e.moved))
                                  or (e is not None and any(seq != own for seq in e.moved)))


# each fact of a call, in the order they are asked, and whether it holds of a difference right after the call
_FACTS: tuple[tuple[str, Callable[[Difference, Call, Effects | None], bool]], ...] = (
    (HEAP_SMASHED, lambda d, call, e: d.location == HEAP_CORRUPTED),
    (NULL_ENGINE, lambda d, call, e: call.null and call.api != "llm_init"),
    (WROTE_NOTHING, lambda d, call, e: e is not None and not e.wrote),
    (WROTE_ASTRAY, lambda d, call, e: e is not None and e.stray),
    (MUST_FAIL, lambda d, call, e: fails(call.api, call.expected)),
    (SKIPPED_SLOTS, lambda d, call, e: e is not None and bool(e.skipped)),
    (SEARCH_FAILED, lambda d, call, e: e is not None and e.search_failed),
    (TOOK_THERE, lambda d, call, e: e is None or (d.got in e.taken and (e.picked is None or d.expected in e.picked))),
    (AFTER_WRONG_FORK, lambda d, call, e: e is not None and e.wrong_fork),
    (WROTE_ELSEWHERE, lambda d, call, e: e is not None and e.elsewhere),
    (SHORT_OF_BLOCKS, lambda d, call, e: e is not None and e.short),
    (REORDERED_ONLY, lambda d, call, e: e is None or e.reordered_only),
    (MOVED_ANOTHER, _moved_another),
    (NOTHING, lambda d, call, e: True),
)


def row_of(aspect: str, api: str, fact: str) -> str | None:
    """The rule RULES gives a difference in `aspect` after a call of `api` that did `fact`: its own row, else
    its aspect's for any call, else any aspect's; None when no row has it."""
    for key in ((aspect, api, fact), (aspect, ANY, fact), (ANY, ANY, fact)):
        if key in RULES:
            return RULES[key]
    return None


def rule_of(difference: Difference, call: Call, effects: Effects | None = None) -> str:
    """The rule `difference`, seen right after `call`, breaks: the first fact of the call that has a row for
    the difference's aspect and holds. `effects`, when known, tells a call's own bug from another's: a
    difference in another sequence's table the call did not change is the call's own rule (an append that
    wrote in place into a block another sequence shares), and a wrong block id is first fit's only when the
    call did allocate that block where the model took one too (an append that allocated nothing, or copied a
    block it holds alone, is Task 4's)."""
    for fact, holds in _FACTS:
        rule = row_of(difference.aspect, call.api, fact)
        if rule is not None and holds(difference, call, effects):
            return TASKS[call.api] if rule == OWN_TASK else rule
    return TASKS[call.api]


def rules_of(difference: Difference, call: Call, effects: Effects | None = None) -> tuple[str, ...]:
    """The rules `difference`, seen right after `call`, breaks: rule_of's, and the fork's too where the call is
    an append that wrote a block a fork's two share in place and its engine copies blocks elsewhere in the same
    graded run (Effects.fork_too): charged to both items, each once."""
    rule = rule_of(difference, call, effects)
    fork = TASKS["fork_sequence"]
    also = (effects is not None and effects.fork_too and call.api == "append_kv" and rule == TASKS["append_kv"]
            and difference.aspect in (POOL, CONTENTS))
    return (rule, fork) if also else (rule,)


def item_of(rule: str) -> str | None:
    """The rubric item that enforces `rule` (None for a rule no item grades)."""
    return next((item for item, its_rule in ITEMS.items() if its_rule == rule), None)
