"""The HW3 family's aspects of a Difference (oracle/difference.py), and its wordings of the few that do not read
`location: expected E, got G`. The rule a difference breaks is a function of its aspect and the call that made
it (rules.py)."""

from oracle.difference import CRASH, Difference, word  # noqa: F401  (CRASH is every family's, importable from here)
from oracle.hw3.observation import ImplementationFailure

# The facts an observation holds, one aspect each.
ENGINE = "engine"  # a live engine or NULL
POOL_SIZE = "pool_size"  # the caller's pool present, its length
TOTAL = "total_local_blocks"
FREE_COUNT = "free_count"  # free_local_blocks disagrees with the implementation's own ref_count array
BLOCKS_TAKEN = "blocks_taken"  # free_local_blocks agrees with its own ref_count: the call took the wrong number
REF_COUNT = "ref_count"
LIST_BROKEN = "list_integrity"  # prev/next, circularity
LIST_IDS = "list_ids"  # which sequences are on the active list
LIST_ORDER = "list_order"  # the same ids in another order
KV_COUNT = "kv_count"
TABLE_SHAPE = "table_shape"  # which L1 slots hold an L2 table, how long it is
BLOCK_ID = "block_id"  # two valid block ids where the exact comparison wants one: which block first fit picks
MAPPING = "block_mapping"  # an entry mapped where it must not be (or not where it must), out of range, merged
CONTENTS = "contents"  # a sequence's records read through its table
POOL = "pool"  # the pool byte for byte (magic numbers of untouched slots included)
GUARD = "guard"  # the guard zones either side of the pool
CALL_ALLOCATIONS = "call_allocations"  # a failing call allocated
LEAK = "leak"  # heap blocks live with no engine
STATE_CHANGE = "state_change"  # a failing call changed the implementation's own state
RETURN = "return"
HEAP_CORRUPTED = "heap"  # a crash's location when the allocator found its heap corrupted (a double free,
# malloc aborting): a memory error that may have been made by any earlier call
FACTS = (ENGINE, POOL_SIZE, TOTAL, FREE_COUNT, BLOCKS_TAKEN, REF_COUNT, LIST_BROKEN, LIST_IDS, LIST_ORDER, KV_COUNT,
         TABLE_SHAPE, BLOCK_ID, MAPPING, CONTENTS, POOL, GUARD, CALL_ALLOCATIONS, LEAK, STATE_CHANGE, RETURN)


def _list_broken(d: Difference) -> str:
    return f"active list broken: {d.got}"


def _guard(d: Difference) -> str:
    return f"{d.location} overwritten with {d.got}"


def _call_allocations(d: Difference) -> str:
    return f"heap: a failing call must allocate nothing, it allocated {d.got} time(s)"


def _state_change(d: Difference) -> str:
    return f"a failing call changed the state: {d.location}: before {d.expected}, after {d.got}"


# the aspects worded otherwise than `location: expected E, got G (note)`
word({LIST_BROKEN: _list_broken, GUARD: _guard, CALL_ALLOCATIONS: _call_allocations, STATE_CHANGE: _state_change})


def crash(failure: ImplementationFailure) -> Difference:
    """The difference a call that did not return normally makes: located on the heap when the allocator found
    it corrupted (the rule is then memory safety's, whichever call showed it)."""
    return Difference(CRASH, HEAP_CORRUPTED if failure.heap_corrupted else "", None, str(failure))
