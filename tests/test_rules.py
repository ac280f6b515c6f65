"""The rule a difference breaks (oracle/hw3/rules.py): a table of the difference's aspect, the call that made it
and what the call did to the implementation's state."""

from oracle.difference import Difference
from oracle.hw3.difference import (
    BLOCK_ID, BLOCKS_TAKEN, CONTENTS, CRASH, HEAP_CORRUPTED, LIST_ORDER, POOL, RETURN, TABLE_SHAPE,
)
from oracle.hw3.call import Call
from oracle.hw3.rules import (
    CHECK_BEFORE_ALLOCATE, FIRST_FIT, L1_TRAVERSAL, MEMORY_SAFETY, NO_PREMATURE_WRITES, TAIL_INSERTION, TASKS, Effects,
    rule_of,
)

APPEND = Call("append_kv", (4, 1), False, 0)


def test_a_wrong_block_the_call_took_where_the_model_took_one_is_first_fits() -> None:
    wrong = Difference(BLOCK_ID, "seq 4 block_table[0][0]", 3, 4, seq=4)
    assert rule_of(wrong, APPEND, Effects(frozenset({4}), frozenset({4}), True, picked=frozenset({3}))) == FIRST_FIT


def test_a_copy_the_model_does_not_make_is_the_appends_not_first_fits() -> None:
    """An append that copied a block it holds alone took block 4; the model took none: when to copy is Task 4's."""
    wrong = Difference(BLOCK_ID, "seq 4 block_table[0][0]", 3, 4, seq=4)
    assert rule_of(wrong, APPEND, Effects(frozenset({4}), frozenset({4}), True, picked=frozenset())) == TASKS["append_kv"]


def test_only_append_kv_may_write_the_pool() -> None:
    """Constraint 4: "You may ONLY write to the physical memory during an actual append_kv operation"."""
    scrubbed = Difference(POOL, "pool block 0 slot 0", 7, 0)
    for api, args in (("free_sequence", (1,)), ("llm_destroy", ()), ("create_sequence", (1, 5)), ("fork_sequence", (1, 2))):
        call = Call(api, args, False, 0 if api in ("free_sequence", "llm_destroy") else True)
        assert rule_of(scrubbed, call, Effects(frozenset(), frozenset(), wrote=True)) == NO_PREMATURE_WRITES, api
    assert rule_of(scrubbed, APPEND, Effects(frozenset(), frozenset(), wrote=True)) == TASKS["append_kv"]


def test_an_append_that_also_wrote_slots_of_its_block_it_did_not_copy_breaks_constraint_4() -> None:
    """Its record is right, and the other slots of the block were zeroed too: written before their records
    arrive (a copy, or a record in the wrong place, stays Task 4's: no stray write then)."""
    zeroed = Difference(POOL, "pool block 1 slot 1", 398529, 0)
    assert rule_of(zeroed, APPEND, Effects(frozenset({4}), frozenset({1}), True, stray=True)) == NO_PREMATURE_WRITES
    assert rule_of(zeroed, APPEND, Effects(frozenset({4}), frozenset({1}), True)) == TASKS["append_kv"]
    shown = Difference(CONTENTS, "seq 4 record 0", 7, 8, seq=4)  # a record wrong is the append's, stray or not
    assert rule_of(shown, APPEND, Effects(frozenset({4}), frozenset({1}), True, stray=True)) == TASKS["append_kv"]


def test_a_list_reordered_by_any_call_breaks_creation_order() -> None:
    """The active list keeps creation order: an append or a free that moves a sequence breaks it as surely as
    a create at the head (a failing call that does is Constraint 2's: it changed state)."""
    moved = Difference(LIST_ORDER, "active list", [1, 2], [2, 1])
    for call in (APPEND, Call("free_sequence", (3,), False, 0), Call("create_sequence", (3, 1), False, True)):
        assert rule_of(moved, call) == TAIL_INSERTION, call.api
    assert rule_of(moved, Call("append_kv", (9, 1), False, -1)) == CHECK_BEFORE_ALLOCATE


def test_records_that_differ_with_the_pool_untouched_are_not_a_write() -> None:
    shown = Difference(CONTENTS, "seq 1 record 0", 7, 8, seq=1)
    free = Call("free_sequence", (2,), False, 0)
    assert rule_of(shown, free, Effects(frozenset(), frozenset(), wrote=False)) == TASKS["free_sequence"]


def test_a_heap_found_corrupted_is_memory_safetys_whichever_call_showed_it() -> None:
    """malloc aborting, or a free of a pointer that is not live: the memory error may have been made by any
    earlier call (valgrind says which); a plain crash is the crashing call's."""
    create = Call("create_sequence", (3, 40), False, True)
    aborted = Difference(CRASH, HEAP_CORRUPTED, None, "malloc aborted: the heap was corrupted by an earlier memory error")
    assert rule_of(aborted, create) == MEMORY_SAFETY
    assert rule_of(aborted, Call("create_sequence", (3, 40), True, False)) == MEMORY_SAFETY  # even with a NULL engine
    assert rule_of(Difference(CRASH, "", None, "crashed with SIGSEGV"), create) == TASKS["create_sequence"]


def test_a_call_that_changed_another_sequences_table_shows_a_shared_l2_table_forks() -> None:
    """An append on seq 2 changed seq 1's table too: the two share an L2 table, which only a fork can have
    made; the difference shows on seq 2 itself."""
    from oracle.hw3.difference import MAPPING

    append = Call("append_kv", (2, 10), False, 0)
    wrong = Difference(MAPPING, "seq 2 block_table[0][1]", "a block other than 2", 2, seq=2)
    assert rule_of(wrong, append, Effects(frozenset({1, 2}), frozenset({5}), True)) == TASKS["fork_sequence"]
    assert rule_of(wrong, append, Effects(frozenset({2}), frozenset({5}), True)) == TASKS["append_kv"]


def test_a_free_or_fork_that_left_whole_l1_slots_untouched_breaks_the_l1_walk() -> None:
    """A free that dropped no reference of slot 15's blocks while it released every other slot's, or a fork whose
    child lacks slot 15's table: the L1 loop's bug (l1_traversal), whatever fact shows it."""
    walked = Effects(frozenset(), frozenset(), skipped=frozenset({15}))
    free, fork = Call("free_sequence", (1,), False, 0), Call("fork_sequence", (1, 2), False, True)
    assert rule_of(Difference(BLOCKS_TAKEN, "free_local_blocks", 256, 240), free, walked) == L1_TRAVERSAL
    assert rule_of(Difference(TABLE_SHAPE, "seq 2 block_table[15]", "an L2 table", "NULL", seq=2), fork, walked) == L1_TRAVERSAL
    assert rule_of(Difference(BLOCKS_TAKEN, "free_local_blocks", 256, 240), free, Effects(frozenset(), frozenset())) == TASKS["free_sequence"]
    create = Call("create_sequence", (1, 17), False, True)
    assert rule_of(Difference(BLOCKS_TAKEN, "free_local_blocks", 3, 4), create, walked) == TASKS["create_sequence"]
    assert rule_of(Difference(RETURN, "return value", 0, -1), free, walked) == TASKS["free_sequence"]


def test_every_row_of_the_table_names_a_known_aspect_call_fact_and_rule() -> None:
    """RULES is the whole judge: each key is (an aspect the HW3 family observes, an API call, a fact of the call
    rule_of asks), each value a rule some rubric item owns, or the call's own task."""
    from oracle.hw3.checks import CHECKS
    from oracle.hw3.difference import FACTS
    from oracle.hw3.rules import _FACTS, ANY, OWN_TASK, RULES

    owned = {check.rule for check in CHECKS.values()}
    facts = {fact for fact, _ in _FACTS}
    for (aspect, api, fact), rule in RULES.items():
        assert aspect in (*FACTS, CRASH, ANY), aspect
        assert api in (*TASKS, ANY), api
        assert fact in facts, fact
        assert rule == OWN_TASK or rule in owned, rule


def test_a_fact_without_a_row_for_the_aspect_passes_the_difference_to_the_next_fact() -> None:
    """A free that skipped an L1 slot and also reordered the list: the skip has no row for the list's order, so
    the order is judged by the next fact that has one (reordered only: tail insertion)."""
    moved = Difference(LIST_ORDER, "active list", [1, 2], [2, 1])
    free = Call("free_sequence", (3,), False, 0)
    assert rule_of(moved, free, Effects(frozenset(), frozenset(), skipped=frozenset({15}))) == TAIL_INSERTION
    assert rule_of(moved, free, Effects(frozenset(), frozenset(), skipped=frozenset({15}), reordered_only=False)) \
        == TASKS["free_sequence"]


def test_whatever_llm_init_gets_wrong_of_the_engine_is_task_1s() -> None:
    """llm_init builds every fact of the engine: its difference in any of them is Task 1's, even where the call
    must fail (a 63-byte pool); only the pool's bytes (Constraint 4), the guards and the heap are other rules'."""
    from oracle.hw3.difference import FREE_COUNT, GUARD, LEAK

    for expected in (True, False):
        init = Call("llm_init", (4096,), False, expected)
        for aspect in (FREE_COUNT, BLOCKS_TAKEN, LIST_ORDER, TABLE_SHAPE, RETURN, CRASH):
            assert rule_of(Difference(aspect, "", 1, 2), init) == TASKS["llm_init"], (aspect, expected)
        assert rule_of(Difference(POOL, "pool block 0 slot 0", 7, 0), init) == NO_PREMATURE_WRITES
        assert rule_of(Difference(GUARD, "guard zone before", 0, 1), init) == MEMORY_SAFETY
        assert rule_of(Difference(LEAK, "heap", 0, 1), init) == TASKS["llm_destroy"]


def test_a_null_engine_is_pointer_safetys_whatever_differs() -> None:
    from oracle.hw3.difference import FREE_COUNT, GUARD
    from oracle.hw3.rules import POINTER_SAFETY

    for aspect in (FREE_COUNT, GUARD, POOL, RETURN, CRASH):
        assert rule_of(Difference(aspect, "", 1, 2), Call("free_sequence", (1,), True, -1)) == POINTER_SAFETY, aspect
