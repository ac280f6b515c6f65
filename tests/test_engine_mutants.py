"""What the mutation campaign showed the other tests left loose in engine.llm_memory.

Each test pins a behaviour a user can see and that a mutant of the engine changed without any other test
noticing: the exact text of every error (a user reads it to find the bad argument), the white-box state a
caller holding an engine or a Sequence can read after free and destroy, and the L1 walk of fork and free past
a NULL slot. `pagedcheck mutation` runs the campaign; mutation/README.md explains the triage.
"""

import pytest

from engine import llm_memory as mem
from oracle.hw3.pool import initial_pool
from oracle.hw3.spec import BLOCK_SIZE, INT32_MAX, INT32_MIN, KV_PER_BLOCK, L1_PT_SIZE, UNMAPPED


def new_engine(blocks: int = 8):
    pool = bytearray(initial_pool(blocks * BLOCK_SIZE))
    return mem.llm_init(pool, len(pool)), pool


# -- error messages, word for word -----------------------------------------------------------------------

ARGUMENT_CASES = [
    # api, args after the engine, the argument's name, a bad value of the wrong type or range
    ("create_sequence", ("{bad}", 1), "seq_id"),
    ("create_sequence", (1, "{bad}"), "initial_kv_len"),
    ("free_sequence", ("{bad}",), "seq_id"),
    ("fork_sequence", ("{bad}", 2), "parent_seq_id"),
    ("fork_sequence", (1, "{bad}"), "new_seq_id"),
    ("append_kv", ("{bad}", 1), "seq_id"),
    ("append_kv", (1, "{bad}"), "kv_data"),
]


def _with(args: tuple, bad: object) -> tuple:
    return tuple(bad if a == "{bad}" else a for a in args)


@pytest.mark.parametrize("api, args, name", ARGUMENT_CASES)
@pytest.mark.parametrize("bad, kind", [("7", "str"), (7.0, "float"), (None, "NoneType"), (False, "bool")])
def test_wrong_type_message_names_the_argument_and_the_type(api, args, name, bad, kind):
    engine, _ = new_engine()
    mem.create_sequence(engine, 1, 1)
    with pytest.raises(TypeError) as raised:
        getattr(mem, api)(engine, *_with(args, bad))
    assert str(raised.value) == f"{name} must be an int, not {kind}"


@pytest.mark.parametrize("api, args, name", ARGUMENT_CASES)
@pytest.mark.parametrize("bad", [INT32_MAX + 1, INT32_MIN - 1, 2**64])
def test_out_of_int32_message_names_the_argument_and_the_value(api, args, name, bad):
    engine, _ = new_engine()
    mem.create_sequence(engine, 1, 1)
    with pytest.raises(ValueError) as raised:
        getattr(mem, api)(engine, *_with(args, bad))
    assert str(raised.value) == f"{name}={bad} does not fit in a C int"


@pytest.mark.parametrize("edge", [INT32_MIN, INT32_MAX])
def test_int32_edges_are_accepted(edge):
    engine, pool = new_engine()
    assert mem.create_sequence(engine, edge, 1) is not None
    assert mem.append_kv(engine, edge, edge) == 0
    assert mem.fork_sequence(engine, edge, INT32_MIN if edge == INT32_MAX else INT32_MAX) is not None
    assert mem.free_sequence(engine, edge) == 0


@pytest.mark.parametrize("api", ["create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy"])
@pytest.mark.parametrize("bad, kind", [("engine", "str"), (0, "int"), (bytearray(64), "bytearray")])
def test_wrong_engine_message_names_the_type(api, bad, kind):
    args = {"free_sequence": (1,), "llm_destroy": ()}.get(api, (1, 1))
    with pytest.raises(TypeError) as raised:
        getattr(mem, api)(bad, *args)
    assert str(raised.value) == f"engine must be an LLMEngine or None, not {kind}"


@pytest.mark.parametrize("size, kind", [("64", "str"), (64.0, "float"), (None, "NoneType")])
def test_llm_init_wrong_type_message(size, kind):
    with pytest.raises(TypeError) as raised:
        mem.llm_init(bytearray(128), size)
    assert str(raised.value) == f"pool_size must be an int, not {kind}"


def test_llm_init_negative_size_message():
    with pytest.raises(ValueError) as raised:
        mem.llm_init(bytearray(128), -64)
    assert str(raised.value) == "pool_size=-64 is negative; a size_t cannot hold it"


@pytest.mark.parametrize("pool, size", [(bytes(128), 128), (bytes(128), 64), (bytearray(64), 128), (bytearray(127), 128)])
def test_llm_init_read_only_or_short_pool_message(pool, size):
    """Read-only refused even when big enough; short refused even when writable."""
    with pytest.raises(ValueError) as raised:
        mem.llm_init(pool, size)
    assert str(raised.value) == f"pool must be a writable buffer of at least pool_size={size} bytes"


def test_llm_init_accepts_a_writable_pool_exactly_pool_size_long_or_longer():
    assert mem.llm_init(bytearray(128), 128).total_local_blocks == 2
    assert mem.llm_init(bytearray(200), 128).total_local_blocks == 2
    assert mem.llm_init(memoryview(bytearray(64)), 64).total_local_blocks == 1


def test_allocate_block_with_no_free_block_is_an_internal_error_with_its_message():
    """Callers probe free_local_blocks first; if one did not, the failure says so rather than corrupting."""
    engine, _ = new_engine(1)
    mem.create_sequence(engine, 1, 1)
    with pytest.raises(AssertionError) as raised:
        engine.allocate_block()
    assert str(raised.value) == "allocate_block called with no free block"
    assert engine.ref_count == [1] and engine.free_local_blocks == 0


# -- the pool view -------------------------------------------------------------------------------------


def test_pool_base_ptr_reads_the_callers_bytes_as_unsigned_bytes():
    """pool_base_ptr is the caller's pool itself, byte for byte (a view, not a copy), as uint8_t."""
    engine, pool = new_engine(2)
    view = engine.pool_base_ptr
    assert view.format == "B" and view.nbytes == 2 * BLOCK_SIZE
    pool[5], pool[70] = 0xFF, 0x80  # bytes a signed view would read as negative
    assert list(view) == list(pool) and (view[5], view[70]) == (0xFF, 0x80)


# -- what a caller holding the objects sees after free and destroy -----------------------------------------


def test_unlinking_a_node_leaves_it_self_linked_so_a_second_unlink_is_harmless():
    engine, _ = new_engine()
    a, b, c = (mem.create_sequence(engine, i, 1) for i in (1, 2, 3))
    assert mem.free_sequence(engine, 2) == 0
    assert b.node.next is b.node and b.node.prev is b.node
    b.node.unlink()
    assert [s.seq_id for s in engine.sequences()] == [1, 3] and a.node.next is c.node


def test_a_freed_sequence_keeps_no_block_ids_its_handle_could_leak():
    """The blocks now belong to the free pool (or to a sharer): the old handle's table is all NULL."""
    engine, _ = new_engine()
    seq = mem.create_sequence(engine, 1, 2 * KV_PER_BLOCK)
    mem.free_sequence(engine, 1)
    assert seq.block_table == [None] * L1_PT_SIZE
    live = mem.create_sequence(engine, 2, 1)
    mem.llm_destroy(engine)
    assert live.block_table == [None] * L1_PT_SIZE


def test_a_destroyed_engine_holds_no_block_state_and_no_view_of_the_callers_pool():
    engine, pool = new_engine(4)
    mem.create_sequence(engine, 1, 3)
    assert mem.llm_destroy(engine) == 0
    assert engine.ref_count == [] and engine.pool_base_ptr.nbytes == 0
    assert list(engine.sequences()) == []
    pool.extend(b"\0" * 64)  # no view of the caller's buffer is left: it can be resized again


# -- L1 walks past a NULL slot (white-box: through the API the L2 tables are contiguous) -------------------


def test_fork_copies_every_non_null_l2_table_even_after_a_null_l1_slot():
    engine, _ = new_engine(40)
    parent = mem.create_sequence(engine, 1, 2 * 256 + 1)  # L1 slots 0, 1, 2
    for block in parent.block_table[1]:
        engine.ref_count[block] -= 1
        engine.free_local_blocks += 1
    parent.block_table[1] = None
    child = mem.fork_sequence(engine, 1, 2)
    assert child.block_table[1] is None
    assert child.block_table[2] == parent.block_table[2] == [32] + [UNMAPPED] * 15
    assert child.block_table[2] is not parent.block_table[2]
    assert engine.ref_count[32] == 2 and engine.ref_count[0] == 2

