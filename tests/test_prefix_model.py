"""The prefix model under each policy, and the comparison's differences and their one-line text."""

from dataclasses import replace

from oracle.prefix.compare import ContentTracker, changed, exact_difference, universal_difference
from oracle.difference import Difference
from oracle.prefix.model import PrefixModel
from oracle.prefix.observation import Observation
from oracle.prefix.policy import LAB, MINI_YAIE, MINIVLLM, NANOVLLM, VLLM_V1, universal


def test_lab_model_reuses_a_warm_block_from_the_middle_and_caps_hits():
    model = PrefixModel(LAB, 6, 2)
    assert model.admit(0, [1, 2, 3, 4, 5]).table == [1, 2, 3]
    model.free_request(0)
    assert model.free == [4, 5, 3, 2, 1]
    assert model.lookup([1, 2, 3, 4]) == [1]  # capped: one token left to compute
    assert model.admit(1, [1, 2, 3, 4, 9]).table == [1, 2, 4] and model.free == [5, 3]
    assert model.ref_count(1) == 1 and model.indexed() == [1, 2]


def test_vllm_model_puts_unhashed_blocks_first_and_keeps_duplicates_first_wins():
    model = PrefixModel(VLLM_V1, 8, 2)
    model.admit(0, [1, 2, 3])
    model.admit(1, [1, 2])  # capped at 0 hits: block 3 duplicates block 1
    assert model.index[(1, 2)] == [1, 3] and model.lookup([1, 2, 5]) == [1]
    model.free_request(0)
    assert model.free[:1] == [2] and model.free[-1] == 1  # the unhashed tail first, the hashed block last


def test_minivllm_model_gives_a_duplicate_back_and_forgets_freed_blocks():
    model = PrefixModel(MINIVLLM, 5, 2)
    assert model.free == [4, 3, 2, 1, 0]
    model.admit(0, [1, 2, 3])  # blocks 4 ([1, 2], indexed) and 3
    model.admit(1, [1])  # block 2
    assert model.append(1, 2)  # [1, 2] is full and already indexed: block 4 is shared, block 2 given back
    assert model.requests[1].table == [4] and model.free == [2, 1, 0] and model.ref_count(4) == 2
    assert model.admit(2, [1, 2]).table == [4]  # no hit cap: the whole prompt hits
    for rid in (0, 1, 2):
        model.free_request(rid)
    assert model.index == {} and model.block_hash == {} and model.free == [4, 3, 2, 1, 0]


def test_nanovllm_model_leaves_entries_stale_and_verifies_block_tokens():
    model = PrefixModel(NANOVLLM, 2, 2)
    model.admit(0, [1, 1])
    model.free_request(0)
    model.admit(1, [7, 7, 1, 1])
    assert model.index[(1, 1)] == [0] and model.lookup([1, 1, 2]) == [0]  # a stale entry hits: the bug
    model.free_request(1)
    model.admit(2, [9, 9, 9])
    assert model.lookup([7, 7, 1, 1]) == []  # block 1's tokens changed: the check refuses it


def test_yaie_model_sorts_the_free_list_and_caches_nothing():
    model = PrefixModel(MINI_YAIE, 4, 2)
    model.admit(0, [1, 2, 3])
    model.admit(1, [1, 2])
    model.free_request(0)
    assert model.free == [0, 1, 3] and model.lookup([1, 2, 3]) == []
    assert model.admit(2, [1] * 9) is None


def test_publish_after_compute_hides_blocks_until_commit():
    model = PrefixModel(replace(LAB, publish="compute"), 6, 2)
    model.admit(0, [1, 2, 3])
    assert model.lookup([1, 2, 3]) == []
    model.commit(0)
    assert model.lookup([1, 2, 3]) == [1]


def test_model_fork_copies_a_shared_block_and_refuses_without_a_free_one():
    model = PrefixModel(LAB, 4, 2)
    model.admit(0, [1, 2, 3])
    assert model.fork(0, 0) == 1
    model.admit(1, [1, 2, 4])
    assert model.fork(1, 0) is None  # the pool is full
    model.free_request(0)
    model.admit(2, [5])
    model.free_request(2)
    assert model.fork(1, 0) == 1  # no longer shared


def test_reset_refused_while_in_use_and_append_refused_without_a_block():
    model = PrefixModel(LAB, 3, 2)
    model.admit(0, [1, 2, 3, 4])
    assert not model.reset() and not model.append(0, 5)
    model.free_request(0)
    model.free_request(0)
    assert model.reset() and model.index == {} and model.block_hash == {}


def seen(tables, free, **rest):
    return Observation(tables=tables, free=free, **rest)


def test_universal_differences_name_the_invariant():
    model = PrefixModel(LAB, 4, 2)
    model.admit(0, [1, 2, 3])
    ok = seen({0: (1, 2)}, (3,), ref_counts={0: 0, 1: 1, 2: 1, 3: 0}, hashes={1: "h"})
    assert universal_difference(model, ok) is None
    cases = {
        "null block": seen({0: (1, 2)}, (3, 0)),
        "live requests": seen({}, (3,)),
        "table length": seen({0: (1,)}, (2, 3)),
        "conservation": seen({0: (1, 2)}, (3, 3)),
        "ref count": seen({0: (1, 2)}, (3,), ref_counts={1: 2, 2: 1}),
    }
    for aspect, observation in cases.items():
        assert universal_difference(model, observation).aspect == aspect
    assert universal_difference(model, seen({0: (1, 2)}, (2, 3))).got == "both free and held"
    assert universal_difference(model, seen({0: (1, 2)}, ())).got == "neither (leaked)"
    assert universal_difference(model, seen({0: (1, 2)}, (3,), hashes={0: "h"})).got == "found in the hashed blocks"


def test_exact_differences_and_atomic_failure():
    model = PrefixModel(LAB, 4, 2)
    model.admit(0, [1, 2, 3])
    exact = seen({0: (1, 2)}, (3,), hashes={1: "h"}, indexed=(1,))
    assert exact_difference(model, exact) is None
    assert exact_difference(model, replace(exact, tables={0: (2, 1)})) == Difference("block_table", "req 0 block_table[0]", 1, 2)
    assert exact_difference(model, replace(exact, free=(3, 3))).aspect == "free order"
    assert exact_difference(model, replace(exact, hashes={})).aspect == "hashed blocks"
    assert exact_difference(model, replace(exact, indexed=())).aspect == "index"
    assert changed(exact, exact) is None and changed(exact, replace(exact, free=())).aspect == "atomic failure"


def test_content_tracker_catches_a_false_hit_and_equal_hashes_for_different_prefixes():
    model = PrefixModel(universal(LAB), 6, 2)
    tracker = ContentTracker()
    model.admit(0, [1, 2, 3])
    assert tracker.after(model, seen({0: (1, 2)}, None), 0, set(), set()) is None
    model.admit(1, [5, 6, 7])
    problem = tracker.after(model, seen({0: (1, 2), 1: (1, 3)}, None), 1, {0}, set())
    assert problem.aspect == "no false hit" and problem.location == "req 1 block_table[0] (block 1)"
    tracker = ContentTracker()
    tracker.after(model, seen({0: (1, 2)}, None), 0, set(), set())
    assert tracker.after(model, seen({0: (1, 2), 1: (3, 4)}, None), 1, set(), set()) is None
    problem = tracker.chaining(seen({0: (1, 2), 1: (3, 4)}, None, hashes={1: "h", 3: "h"}))
    assert problem.aspect == "hash chaining" and problem.location == "blocks 1 and 3"


def test_difference_renders_one_line_after_the_call():
    assert Difference("block_table", "req 2 block_table[1]", 5, 3).render("allocate_slots(req 2, 17 tokens)") == (
        "allocate_slots(req 2, 17 tokens): req 2 block_table[1]: expected 5, got 3")
    assert Difference("block_table", "block_table[1]", 5, 3).render("s") == "s: block_table[1]: expected 5, got 3"
    assert Difference("free order", "", [1], [2]).render("s") == "s: free order: expected [1], got [2]"
    assert Difference("ref count", "block 3", 1, 2).render("s") == "s: ref count: block 3: expected 1, got 2"
