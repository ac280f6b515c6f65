"""What a verdict rests on, declared as data, and what a Python submission's grade may rest on.

Every white-box probe (probes.py RESTS_ON) names the kinds of fact its verdict needs:

    RETURNS  what the API calls return
    POOL     the pool's bytes: memory the grader owns and reads back itself (pool_file.py)
    STATE    the engine's objects read white-box: the counters, ref_count, the block tables, the active list
    EDIT     an edit of the engine's live objects in place (a gap made in a block table, a count set), to
             reach a state no sequence of API calls makes

A Python submission's objects live only in its own interpreter, where the grader's server (pyserve.py) runs
as `__main__`: code the submission imports can replace the server's operations, or tell the server's reads
from its own (a property that looks at the calling frame), so an edit made there is an edit the submission may
skip or fake, and a state read there is what the submission chose to say. Hence NOT_GRADED: for a Python
submission only RETURNS and POOL are evidence. A probe resting on an EDIT or on the STATE is never run on a
Python submission, and the comparisons after each call see no state of its (unread.py: the model's own stands
in for it), so its part of an item earns no point and costs none: it leaves the score and the maximum, said
once in a student's words (WORDS). C's state is read and its edits made by the grader's driver, from outside
the submission's code (oracle/hw3/c/), graded as before.

ITEMS declares, for each rubric item, what its fixed programs rest on (its probes declare their own in
probes.RESTS_ON): an item whose rule shows only in the engine's objects (the list's order, the L1 walk) is
not graded for a Python submission at all (`item_not_graded`, the one place that decides).

"Not graded" is decided by the probe's declaration, never by where a run goes, so a submission cannot steer a
graded probe into "not graded" to hide a bug.
"""

RETURNS, POOL, STATE, EDIT = "returns", "pool", "state", "edit"

NOT_GRADED: dict[str, frozenset[str]] = {"c": frozenset(), "python": frozenset({EDIT, STATE})}

WORDS = {  # why a part is not graded, as a student reads it after "Not graded for a Python submission: "
    EDIT: "this check edits your engine's tables inside your own process, where the grader cannot watch the edit",
    STATE: ("this check reads your engine's objects (free_local_blocks, ref_count, the block tables, the active "
            "list) inside your own process, where what they say is your code's word; a Python submission is "
            "graded on what its calls return and on the pool"),
}

# What each item's fixed programs (its scenarios; the fuzz item's programs) rest on. A wrong return value, a
# record in the wrong block, a block copied wrong or a write where none may be shows in RETURNS and the POOL;
# the counters, ref_count, the tables and the list are the STATE.
ITEMS: dict[str, frozenset[str]] = {
    "llm_init": frozenset({RETURNS, STATE, POOL}), "create_free": frozenset({RETURNS, STATE, POOL}),
    "fork": frozenset({RETURNS, STATE, POOL}), "append_cow": frozenset({RETURNS, STATE, POOL}),
    "llm_destroy": frozenset({RETURNS, STATE, POOL}), "null_engine": frozenset({RETURNS, STATE, POOL}),
    "check_before_allocate": frozenset({RETURNS, STATE, POOL}), "first_fit": frozenset({RETURNS, STATE, POOL}),
    "no_premature_writes": frozenset({RETURNS, POOL}), "fuzz": frozenset({RETURNS, STATE, POOL}),
    "free_count": frozenset({RETURNS, STATE}),  # free_local_blocks against ref_count; unread, a create refused
    # after calls that moved the count, unless its item's programs show that call refused alone (refusal_rule.py)
    "tail_insertion": frozenset({STATE}),  # the active list's order: no call returns or writes anything by it
    "l1_traversal": frozenset({STATE}),  # which L1 slots a free or fork left untouched: its ref counts, tables
}


def not_graded(kind: str, rests_on: frozenset[str]) -> str | None:
    """Why a verdict resting on `rests_on` is not graded for a submission of `kind` ("c", "python"), in a
    student's words; None when it is graded."""
    left_out = sorted(rests_on & NOT_GRADED.get(kind, frozenset()))
    return None if not left_out else f"Not graded for a {_LANGUAGE[kind]} submission: {WORDS[left_out[0]]}."


def item_not_graded(kind: str, item: str) -> str | None:
    """Why item `item`'s programs are not graded for a submission of `kind`, in a student's words: when all
    they rest on (ITEMS) is evidence that kind does not give; None when they are graded (or the item has no
    such programs: its probes decide for themselves)."""
    rests_on = ITEMS.get(item)
    return None if rests_on is None or not rests_on <= NOT_GRADED.get(kind, frozenset()) else not_graded(kind, rests_on)


_LANGUAGE = {"c": "C", "python": "Python"}
