"""Directed tests of engine.llm_memory, one spec rule each, named after the rule they pin down.

The state machine finds disagreements with the model; these say, rule by rule, what the spec demands, so a
failure here names the rule without a shrunk program to read. White-box where the spec is (block tables,
ref_count, the intrusive list), and byte-exact on the caller's pool.
"""

import importlib
import struct

import pytest

from engine import llm_memory as mem
from oracle.hw3.pool import initial_pool, magic
from oracle.hw3.spec import BLOCK_SIZE, INT32_MAX, INT32_MIN, KV_PER_BLOCK, L1_PT_SIZE, L2_PT_SIZE, MAX_KV, UNMAPPED
from tests.conftest import broken_python


def new_engine(blocks: int = 8, extra: int = 0, impl=mem):
    """An engine over a fresh magic-filled pool of `blocks` blocks plus `extra` trailing bytes."""
    pool = bytearray(initial_pool(blocks * BLOCK_SIZE + extra))
    return impl.llm_init(pool, len(pool)), pool


def ids(engine) -> list[int]:
    return [seq.seq_id for seq in engine.sequences()]


def record(pool: bytearray, block: int, slot: int) -> int:
    return struct.unpack_from("<i", pool, block * BLOCK_SIZE + slot * 4)[0]


def snapshot(engine, pool) -> tuple:
    """Everything a failing call must leave as it was."""
    return (
        engine.total_local_blocks,
        engine.free_local_blocks,
        tuple(engine.ref_count),
        tuple((s.seq_id, s.kv_count, tuple(None if t is None else tuple(t) for t in s.block_table)) for s in engine.sequences()),
        bytes(pool),
    )


def mapped(seq) -> list[int]:
    return [b for table in seq.block_table if table is not None for b in table if b != UNMAPPED]


# -- llm_init ------------------------------------------------------------------------------------------


def test_llm_init_null_pool_returns_null():
    assert mem.llm_init(None, 4096) is None


@pytest.mark.parametrize("size, total", [(0, None), (1, None), (63, None), (64, 1), (65, 1), (127, 1), (128, 2)])
def test_llm_init_pool_size_below_block_size_returns_null_else_size_div_64(size, total):
    """pool_size < BLOCK_SIZE is refused; 63/64/65 sit on the edge."""
    engine, _ = new_engine(0, size)
    assert (engine and engine.total_local_blocks) == total


def test_llm_init_non_multiple_of_64_rounds_down_and_never_uses_the_tail():
    engine, pool = new_engine(3, 63)
    assert (engine.total_local_blocks, engine.free_local_blocks) == (3, 3)
    assert mem.create_sequence(engine, 1, 3 * KV_PER_BLOCK + 1) is None  # a 4th block would be the partial tail


def test_llm_init_writes_nothing_into_the_pool():
    engine, pool = new_engine(5, 7)
    assert engine is not None and bytes(pool) == initial_pool(5 * BLOCK_SIZE + 7)


def test_llm_init_empty_active_list_head_points_to_itself():
    engine, _ = new_engine()
    head = engine.active_seqs
    assert head.next is head and head.prev is head


def test_llm_init_ref_count_all_zero_one_per_block():
    engine, _ = new_engine(9)
    assert list(engine.ref_count) == [0] * 9 and engine.free_local_blocks == 9


# -- create_sequence -------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [0, -1, INT32_MIN])
def test_create_refuses_length_le_zero_and_changes_nothing(length):
    engine, pool = new_engine()
    before = snapshot(engine, pool)
    assert mem.create_sequence(engine, 1, length) is None
    assert snapshot(engine, pool) == before


def test_create_refuses_duplicate_id_and_changes_nothing():
    engine, pool = new_engine()
    assert mem.create_sequence(engine, 7, 1) is not None
    before = snapshot(engine, pool)
    assert mem.create_sequence(engine, 7, 1) is None
    assert snapshot(engine, pool) == before


@pytest.mark.parametrize("length, blocks", [(1, 1), (15, 1), (16, 1), (17, 2), (32, 2), (33, 3)])
def test_create_uses_ceiling_division_for_required_blocks(length, blocks):
    engine, _ = new_engine()
    seq = mem.create_sequence(engine, 1, length)
    assert mapped(seq) == list(range(blocks)) and seq.kv_count == length
    assert engine.free_local_blocks == 8 - blocks


def test_create_refuses_more_than_256_blocks_even_with_room():
    engine, pool = new_engine(300)
    before = snapshot(engine, pool)
    assert mem.create_sequence(engine, 1, MAX_KV + 1) is None
    assert snapshot(engine, pool) == before
    assert len(mapped(mem.create_sequence(engine, 1, MAX_KV))) == 256


def test_create_refuses_more_blocks_than_free_and_changes_nothing():
    engine, pool = new_engine(4)
    mem.create_sequence(engine, 1, 1)
    before = snapshot(engine, pool)
    assert mem.create_sequence(engine, 2, 3 * KV_PER_BLOCK + 1) is None
    assert snapshot(engine, pool) == before


def test_create_exact_fit_takes_every_free_block():
    engine, _ = new_engine(4)
    seq = mem.create_sequence(engine, 1, 4 * KV_PER_BLOCK)
    assert mapped(seq) == [0, 1, 2, 3] and engine.free_local_blocks == 0 and engine.ref_count == [1] * 4


def test_create_allocates_l2_tables_only_as_needed_filled_with_minus_one():
    engine, _ = new_engine(20)
    seq = mem.create_sequence(engine, 1, 17 * KV_PER_BLOCK)  # 17 blocks: one full L2 table and one entry
    assert len(seq.block_table) == L1_PT_SIZE
    assert seq.block_table[0] == list(range(16))
    assert seq.block_table[1] == [16] + [UNMAPPED] * (L2_PT_SIZE - 1)
    assert seq.block_table[2:] == [None] * (L1_PT_SIZE - 2)


def test_create_first_fit_picks_lowest_free_ids_including_holes_left_by_free():
    engine, _ = new_engine(8)
    mem.create_sequence(engine, 1, 2 * KV_PER_BLOCK)  # blocks 0, 1
    mem.create_sequence(engine, 2, KV_PER_BLOCK)  # block 2
    mem.create_sequence(engine, 3, KV_PER_BLOCK)  # block 3
    mem.free_sequence(engine, 1)  # holes 0, 1
    mem.free_sequence(engine, 3)  # hole 3
    assert mapped(mem.create_sequence(engine, 4, 4 * KV_PER_BLOCK)) == [0, 1, 3, 4]


def test_create_sets_ref_count_1_and_decrements_free_per_block():
    engine, _ = new_engine(8)
    mem.create_sequence(engine, 1, 3 * KV_PER_BLOCK)
    assert engine.ref_count == [1, 1, 1, 0, 0, 0, 0, 0] and engine.free_local_blocks == 5


def test_create_writes_nothing_into_the_pool():
    """No memset: the blocks keep the grader's magic numbers."""
    engine, pool = new_engine(8)
    mem.create_sequence(engine, 1, 5 * KV_PER_BLOCK)
    assert bytes(pool) == initial_pool(8 * BLOCK_SIZE)


def test_create_appends_at_the_tail_of_active_seqs():
    engine, _ = new_engine()
    seqs = [mem.create_sequence(engine, i, 1) for i in (5, 3, 9)]
    assert ids(engine) == [5, 3, 9] and engine.active_seqs.prev is seqs[-1].node


# -- free_sequence ---------------------------------------------------------------------------------------


def test_free_unknown_id_returns_minus_one_and_changes_nothing():
    engine, pool = new_engine()
    mem.create_sequence(engine, 1, 1)
    before = snapshot(engine, pool)
    assert mem.free_sequence(engine, 2) == -1
    assert snapshot(engine, pool) == before


def test_free_decrements_ref_counts_and_frees_blocks_only_at_zero():
    engine, _ = new_engine(4)
    mem.create_sequence(engine, 1, 2 * KV_PER_BLOCK)
    mem.fork_sequence(engine, 1, 2)
    assert mem.free_sequence(engine, 2) == 0
    assert engine.ref_count == [1, 1, 0, 0] and engine.free_local_blocks == 2  # still shared by 1: not freed
    assert mem.free_sequence(engine, 1) == 0
    assert engine.ref_count == [0] * 4 and engine.free_local_blocks == 4


def test_free_leaves_the_pool_untouched():
    engine, pool = new_engine(4)
    mem.create_sequence(engine, 1, 1)
    mem.append_kv(engine, 1, 42)
    before = bytes(pool)
    mem.free_sequence(engine, 1)
    assert bytes(pool) == before


def free_with_null_l1_gap(impl) -> list[int]:
    """White-box: a live sequence with L1 slots 0 and 2 mapped and slot 1 NULL; returns ref_count after free.

    Through the API L2 tables are always contiguous, so only an edited block table shows whether free
    visits all 16 L1 slots.
    """
    engine, _ = new_engine(40, impl=impl)
    seq = impl.create_sequence(engine, 1, 2 * 256 + 1)  # L1 slots 0, 1, 2: blocks 0..31 and 32
    for block in seq.block_table[1]:  # release slot 1's blocks by hand, then NULL the slot
        engine.ref_count[block] -= 1
        engine.free_local_blocks += 1
    seq.block_table[1] = None
    assert impl.free_sequence(engine, 1) == 0
    assert engine.free_local_blocks == sum(1 for r in engine.ref_count if r == 0)
    return list(engine.ref_count)


def test_free_visits_all_16_l1_slots_past_a_null_one():
    assert free_with_null_l1_gap(mem) == [0] * 40


def test_free_visits_all_16_l1_slots_catches_a_free_that_breaks_early():
    """The check above has teeth: the break-at-NULL variant leaves block 32 (behind the gap) allocated."""
    free_breaks_at_null_l1 = importlib.import_module(broken_python("free_breaks_at_null_l1"))
    assert free_with_null_l1_gap(free_breaks_at_null_l1)[32] == 1


def test_free_unlinks_the_sequence_from_active_seqs():
    engine, _ = new_engine()
    a, b, c = (mem.create_sequence(engine, i, 1) for i in (1, 2, 3))
    assert mem.free_sequence(engine, 2) == 0
    assert ids(engine) == [1, 3] and a.node.next is c.node and c.node.prev is a.node
    assert mem.free_sequence(engine, 2) == -1
    mem.free_sequence(engine, 1)
    mem.free_sequence(engine, 3)
    head = engine.active_seqs
    assert head.next is head and head.prev is head


# -- fork_sequence ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("parent, child", [(9, 2), (1, 1), (1, 3)], ids=["unknown_parent", "child_is_parent", "duplicate_new_id"])
def test_fork_refuses_unknown_parent_or_duplicate_new_id_and_changes_nothing(parent, child):
    engine, pool = new_engine()
    mem.create_sequence(engine, 1, 1)
    mem.create_sequence(engine, 3, 1)
    before = snapshot(engine, pool)
    assert mem.fork_sequence(engine, parent, child) is None
    assert snapshot(engine, pool) == before


def test_fork_increments_ref_count_of_every_inherited_block_and_allocates_none():
    engine, pool = new_engine(20)
    mem.create_sequence(engine, 1, 17 * KV_PER_BLOCK)
    free, image = engine.free_local_blocks, bytes(pool)
    mem.fork_sequence(engine, 1, 2)
    mem.fork_sequence(engine, 2, 3)
    assert engine.ref_count == [3] * 17 + [0] * 3
    assert engine.free_local_blocks == free and bytes(pool) == image


def test_fork_works_with_no_free_block():
    """Fork needs no physical block, so it has no OOM case."""
    engine, _ = new_engine(2)
    mem.create_sequence(engine, 1, 2 * KV_PER_BLOCK)
    assert mem.fork_sequence(engine, 1, 2) is not None and engine.ref_count == [2, 2]


def test_fork_gives_the_child_its_own_l1_and_l2_copies():
    engine, _ = new_engine(20)
    parent = mem.create_sequence(engine, 1, 17 * KV_PER_BLOCK)
    child = mem.fork_sequence(engine, 1, 2)
    assert child.block_table == parent.block_table and child.block_table is not parent.block_table
    assert all(c is not p for c, p in zip(child.block_table, parent.block_table) if p is not None)
    assert child.block_table[2:] == [None] * 14


def test_fork_copies_kv_count():
    engine, _ = new_engine()
    mem.create_sequence(engine, 1, 21)
    mem.append_kv(engine, 1, 5)
    assert mem.fork_sequence(engine, 1, 2).kv_count == 22


def test_fork_appends_the_child_at_the_tail():
    engine, _ = new_engine()
    for i in (1, 2, 3):
        mem.create_sequence(engine, i, 1)
    child = mem.fork_sequence(engine, 1, 4)
    assert ids(engine) == [1, 2, 3, 4] and engine.active_seqs.prev is child.node


# -- append_kv -------------------------------------------------------------------------------------------


def test_append_worked_example_record_613_goes_to_block_table_2_6_offset_5():
    """The spec's translation: 613 -> logical 38, offset 5 -> block_table[2][6]."""
    engine, pool = new_engine(48)
    mem.create_sequence(engine, 9, 3 * KV_PER_BLOCK)  # blocks 0..2, so the target is not block 38
    seq = mem.create_sequence(engine, 1, 613)  # blocks 3..41
    physical = seq.block_table[2][6]
    assert physical == 41
    image = bytearray(pool)
    assert mem.append_kv(engine, 1, 0x0BADF00D) == 0
    struct.pack_into("<i", image, physical * BLOCK_SIZE + 5 * 4, 0x0BADF00D)
    assert bytes(pool) == bytes(image) and seq.kv_count == 614


def test_append_maps_a_new_block_at_a_block_boundary():
    engine, pool = new_engine(4)
    seq = mem.create_sequence(engine, 1, KV_PER_BLOCK)
    assert mem.append_kv(engine, 1, 77) == 0
    assert seq.block_table[0][:3] == [0, 1, UNMAPPED]
    assert engine.ref_count == [1, 1, 0, 0] and engine.free_local_blocks == 2 and record(pool, 1, 0) == 77


def test_append_allocates_an_l2_table_at_a_256_record_boundary():
    engine, pool = new_engine(20)
    seq = mem.create_sequence(engine, 1, 256)
    assert seq.block_table[1] is None
    assert mem.append_kv(engine, 1, -5) == 0
    assert seq.block_table[1] == [16] + [UNMAPPED] * 15 and record(pool, 16, 0) == -5


def test_append_copy_on_write_copies_exactly_64_bytes_including_unwritten_magic_slots():
    engine, pool = new_engine(4)
    mem.create_sequence(engine, 1, 3)  # block 0: slots 0..2 magic, kv_count 3
    mem.append_kv(engine, 1, 100)  # slot 3 written
    child = mem.fork_sequence(engine, 1, 2)
    free = engine.free_local_blocks
    image = bytearray(pool)
    assert mem.append_kv(engine, 2, 200) == 0  # shared block 0 -> copy to block 1, write slot 4
    assert child.block_table[0][0] == 1 and engine.ref_count == [1, 1, 0, 0]
    assert engine.free_local_blocks == free - 1
    image[BLOCK_SIZE : 2 * BLOCK_SIZE] = image[:BLOCK_SIZE]
    struct.pack_into("<i", image, BLOCK_SIZE + 4 * 4, 200)
    assert bytes(pool) == bytes(image)  # block 1 = block 0 byte for byte (magic slots 5..15 too), block 2.. untouched
    assert record(pool, 1, 15) == magic(15)


def test_append_copy_on_write_leaves_the_parents_block_and_mapping_alone():
    engine, pool = new_engine(4)
    parent = mem.create_sequence(engine, 1, 1)
    mem.fork_sequence(engine, 1, 2)
    mem.append_kv(engine, 2, 5)
    assert parent.block_table[0][0] == 0 and record(pool, 0, 1) == magic(1)


def test_append_writes_in_place_into_an_exclusive_block():
    engine, pool = new_engine(4)
    seq = mem.create_sequence(engine, 1, 1)
    assert mem.append_kv(engine, 1, 9) == 0
    assert seq.block_table[0][:2] == [0, UNMAPPED] and engine.free_local_blocks == 3 and record(pool, 0, 1) == 9


def test_append_after_the_child_freed_is_exclusive_again():
    """ref_count back to 1 after the sharer leaves: no copy."""
    engine, _ = new_engine(4)
    seq = mem.create_sequence(engine, 1, 1)
    mem.fork_sequence(engine, 1, 2)
    mem.free_sequence(engine, 2)
    mem.append_kv(engine, 1, 1)
    assert seq.block_table[0][0] == 0 and engine.free_local_blocks == 3


def test_append_cap_4096_records_returns_minus_one_and_changes_nothing():
    engine, pool = new_engine(260)
    seq = mem.create_sequence(engine, 1, MAX_KV - 1)
    assert mem.append_kv(engine, 1, 1) == 0 and seq.kv_count == MAX_KV
    before = snapshot(engine, pool)
    assert mem.append_kv(engine, 1, 2) == -1
    assert snapshot(engine, pool) == before


def test_append_unknown_id_returns_minus_one_and_changes_nothing():
    engine, pool = new_engine()
    mem.create_sequence(engine, 1, 1)
    before = snapshot(engine, pool)
    assert mem.append_kv(engine, 2, 1) == -1
    assert snapshot(engine, pool) == before


def test_append_oom_on_new_page_returns_minus_one_and_changes_nothing():
    engine, pool = new_engine(1)
    mem.create_sequence(engine, 1, KV_PER_BLOCK)
    before = snapshot(engine, pool)
    assert mem.append_kv(engine, 1, 1) == -1
    assert snapshot(engine, pool) == before


def test_append_oom_on_cow_returns_minus_one_and_changes_nothing():
    engine, pool = new_engine(1)
    mem.create_sequence(engine, 1, 1)
    mem.fork_sequence(engine, 1, 2)
    before = snapshot(engine, pool)
    assert mem.append_kv(engine, 2, 1) == -1
    assert snapshot(engine, pool) == before


def test_append_oom_needing_l2_returns_minus_one_without_allocating_the_l2_table():
    engine, pool = new_engine(16)
    seq = mem.create_sequence(engine, 1, 256)
    before = snapshot(engine, pool)
    assert mem.append_kv(engine, 1, 1) == -1
    assert seq.block_table[1] is None and snapshot(engine, pool) == before


@pytest.mark.parametrize("value", [0, 1, -1, -2, 0x01020304, INT32_MIN, INT32_MAX])
def test_append_stores_little_endian_int32_including_negative(value):
    engine, pool = new_engine(1)
    mem.create_sequence(engine, 1, 1)
    mem.append_kv(engine, 1, value)
    assert bytes(pool[4:8]) == (value & 0xFFFFFFFF).to_bytes(4, "little")


# -- llm_destroy -----------------------------------------------------------------------------------------


def test_destroy_returns_0_and_leaves_the_pool_untouched():
    engine, pool = new_engine(4)
    mem.create_sequence(engine, 1, 2)
    mem.fork_sequence(engine, 1, 2)
    mem.append_kv(engine, 2, 3)
    before = bytes(pool)
    assert mem.llm_destroy(engine) == 0
    assert bytes(pool) == before
    pool[0:4] = b"\0\0\0\0"  # the caller's buffer is still the caller's, and still writable


def test_destroy_null_engine_returns_minus_one():
    assert mem.llm_destroy(None) == -1


# -- NULL engine, argument types ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: mem.create_sequence(None, 1, 1), None),
        (lambda: mem.fork_sequence(None, 1, 2), None),
        (lambda: mem.append_kv(None, 1, 1), -1),
        (lambda: mem.free_sequence(None, 1), -1),
        (lambda: mem.llm_destroy(None), -1),
    ],
    ids=["create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy"],
)
def test_null_engine_returns_null_or_minus_one_on_every_api(call, expected):
    assert call() == expected


@pytest.mark.parametrize(
    "api, args, error, name",
    [
        ("create_sequence", ("1", 1), TypeError, "seq_id"),
        ("create_sequence", (1, 1.0), TypeError, "initial_kv_len"),
        ("create_sequence", (1, True), TypeError, "initial_kv_len"),
        ("create_sequence", (2**31, 1), ValueError, "seq_id"),
        ("create_sequence", (1, -(2**31) - 1), ValueError, "initial_kv_len"),
        ("fork_sequence", (1, None), TypeError, "new_seq_id"),
        ("fork_sequence", (2**40, 2), ValueError, "parent_seq_id"),
        ("append_kv", (1, 2**31), ValueError, "kv_data"),
        ("append_kv", (1, -(2**31) - 1), ValueError, "kv_data"),
        ("append_kv", (1.5, 1), TypeError, "seq_id"),
        ("free_sequence", ("1",), TypeError, "seq_id"),
        ("free_sequence", (2**31,), ValueError, "seq_id"),
    ],
)
def test_wrong_type_or_out_of_int32_argument_raises_with_the_argument_named(api, args, error, name):
    """Python ints are unbounded; a value C's int cannot hold is an error, not silently wrapped."""
    engine, pool = new_engine()
    mem.create_sequence(engine, 1, 1)
    before = snapshot(engine, pool)
    with pytest.raises(error, match=name):
        getattr(mem, api)(engine, *args)
    assert snapshot(engine, pool) == before


@pytest.mark.parametrize("api", ["create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy"])
def test_engine_argument_of_the_wrong_type_raises_type_error(api):
    args = {"free_sequence": (1,), "llm_destroy": ()}.get(api, (1, 1))
    with pytest.raises(TypeError, match="engine"):
        getattr(mem, api)("engine", *args)


@pytest.mark.parametrize("size", ["64", 64.0, None])
def test_llm_init_pool_size_of_the_wrong_type_raises_type_error(size):
    with pytest.raises(TypeError, match="pool_size"):
        mem.llm_init(bytearray(128), size)


def test_llm_init_negative_pool_size_is_refused_with_an_error():
    """size_t cannot be negative: an error naming pool_size, never a silent NULL."""
    with pytest.raises(ValueError, match="pool_size"):
        mem.llm_init(bytearray(128), -1)


def test_llm_init_read_only_or_short_pool_raises_value_error():
    with pytest.raises(ValueError, match="writable"):
        mem.llm_init(bytes(128), 128)
    with pytest.raises(ValueError, match="pool_size"):
        mem.llm_init(bytearray(64), 128)
