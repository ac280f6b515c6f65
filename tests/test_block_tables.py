"""oracle/block_tables.py on tables written by hand: an implementation's own ids pass when they have the model's
shape, and each check names its aspect at the first place the shape differs."""

from oracle.block_tables import (FREE_BLOCKS, MOVE, REF_COUNTS, SHARED_WRITE, SHARING, TABLE_SIZE, Held, difference,
                                 moved, shared_write)

# seq 0 and seq 1 share their first block (a prompt of 4 tokens in blocks of 4), each holds one more of its own
MODEL = {0: Held("gpu", [0, 1], 5), 1: Held("gpu", [0, 2], 6)}
TOTALS = {"gpu": 10, "cpu": 4}


def checked(tables, free=None, refs=()):
    return difference(MODEL, tables, free or {"gpu": 7, "cpu": 4}, list(refs), TOTALS, 4)


def test_ids_of_the_implementations_own_pass_when_the_shape_is_the_models():
    assert checked({0: [9, 3], 1: [9, 5]}, refs=[(0, 0, 2), (1, 1, 1)]) is None


def test_a_table_of_another_length_is_its_size():
    found = checked({0: [9, 3, 4], 1: [9, 5]})
    assert (found.aspect, found.location, found.expected, found.got) == (TABLE_SIZE, "seq 0 (5 tokens)",
                                                                         "2 blocks (ceil(5 / 4))", 3)


def test_sharing_differs_where_one_side_shares_and_the_other_does_not():
    unshared = checked({0: [9, 3], 1: [8, 5]})
    assert (unshared.aspect, unshared.location, unshared.got) == (SHARING, "seq 1 block_table[0]", 8)
    assert unshared.expected == "block 9, shared with seq 0 block_table[0]"
    overshared = checked({0: [9, 3], 1: [9, 3]})
    assert (overshared.aspect, overshared.location) == (SHARING, "seq 1 block_table[1]")
    assert overshared.expected == "a block of its own, not seq 0 block_table[1]'s"
    outside = checked({0: [9, 10], 1: [9, 5]})
    assert (outside.aspect, outside.expected, outside.got) == (SHARING, "a gpu block id in 0..9", 10)


def test_free_blocks_and_ref_counts_are_counted_from_the_live_tables():
    leak = checked({0: [9, 3], 1: [9, 5]}, free={"gpu": 6, "cpu": 4})
    assert (leak.aspect, leak.expected, leak.got) == (FREE_BLOCKS, "7 (10 - 3 held by live tables)", 6)
    refs = checked({0: [9, 3], 1: [9, 5]}, refs=[(1, 0, 1)])
    assert (refs.aspect, refs.location, refs.expected, refs.got) == (REF_COUNTS, "seq 1 block_table[0]",
                                                                     "2 (the live tables holding it)", 1)


def test_a_written_block_must_be_held_by_its_writer_alone():
    assert shared_write(MODEL, {0: [9, 3], 1: [9, 5]}, 1) is None
    found = shared_write(MODEL, {0: [9, 3], 1: [9, 3]}, 1)
    assert (found.aspect, found.got) == (SHARED_WRITE, "gpu block 3, held by seq 0 too")


def test_a_move_takes_each_block_once_to_a_free_block_and_maps_the_tables():
    before = {0: [9, 3], 1: [9, 5]}
    parts = {0: {9: 0, 3: 1, 5: 2}, 1: {9: 0, 3: 1, 5: 2}}
    after = {0: [0, 1], 1: [0, 2]}
    pairs = [(9, 0), (3, 1), (5, 2)]
    assert moved("swap_out(group 0)", pairs, [9, 3, 5], set(), "gpu", "cpu", before, parts, after) is None
    twice = moved("swap_out(group 0)", [(9, 0), (9, 3), (3, 1), (5, 2)], [9, 3, 5], set(), "gpu", "cpu", before,
                  parts, after)
    assert (twice.aspect, twice.location) == (MOVE, "swap_out(group 0)'s return")
    taken = moved("swap_out(group 0)", pairs, [9, 3, 5], {2}, "gpu", "cpu", before, parts, after)
    assert taken.aspect == MOVE and "distinct free cpu blocks" in taken.expected
    unmapped = moved("swap_out(group 0)", pairs, [9, 3, 5], set(), "gpu", "cpu", before, parts, {0: [0, 1], 1: [0, 1]})
    assert (unmapped.aspect, unmapped.location, unmapped.got) == (MOVE, "seq 1's block table", [0, 1])
