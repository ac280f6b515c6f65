"""Each message of compare.py, under the exact and the lenient (modulo) comparison: the wording names what
differs and both values. The states are real (the Python engine and the model run the same calls); one field
of the observation is then changed the way a broken implementation would change it."""

import dataclasses
import struct

import pytest

from oracle.hw3.adapters import load_python
from oracle.hw3.compare import first_divergence, state_change
from oracle.hw3.model import Model
from oracle.hw3.pool import GUARD, magic
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, KV_SIZE

EXACT = frozenset()
BLOCKS = frozenset({"block_ids"})
ORDER = frozenset({"list_order"})
TAIL = 6  # bytes past the last whole block
POOL = 8 * BLOCK_SIZE + TAIL


def _run(program, pool_size=POOL, observe_every=False):
    adapter = load_python("engine.llm_memory")()
    model = Model()
    engine = adapter.llm_init(pool_size)
    model.llm_init(pool_size)
    seen = []
    for api, args in program:
        getattr(adapter, api)(engine, *args)
        getattr(model, api)(False, *args)
        seen.append(adapter.observe(engine))
    return model, seen, adapter, engine


def _state(program=(("create_sequence", (1, 20)), ("create_sequence", (2, 3)))):
    model, seen, _, _ = _run(program)
    assert all(first_divergence(model, seen[-1], False, modulo=m) is None for m in (EXACT, BLOCKS, ORDER))
    return model, seen[-1]


def _poke(pool: bytes, slot: int, value: int) -> bytes:
    return pool[: slot * KV_SIZE] + struct.pack("<i", value) + pool[(slot + 1) * KV_SIZE :]


ALL = [EXACT, BLOCKS, ORDER, BLOCKS | ORDER]


@pytest.mark.parametrize("modulo", ALL)
def test_no_engine_where_the_model_has_one(modulo):
    model, seen = _state()
    assert first_divergence(model, dataclasses.replace(seen, engine=None), False, modulo=modulo) == \
        "engine: expected a live engine, got none"


@pytest.mark.parametrize("modulo", ALL)
def test_a_live_engine_where_the_model_has_none(modulo):
    model, seen = _state()
    model.llm_destroy(False)
    assert first_divergence(model, seen, False, modulo=modulo) == "engine: expected NULL, got a live engine"


@pytest.mark.parametrize("modulo", ALL)
def test_a_ref_count_array_of_the_wrong_length(modulo):
    model, seen = _state()
    engine = dataclasses.replace(seen.engine, ref_count=seen.engine.ref_count + (0,))
    assert first_divergence(model, dataclasses.replace(seen, engine=engine), False, modulo=modulo) == \
        "ref_count: expected 8 entries, got 9"


@pytest.mark.parametrize("modulo", ALL)
def test_no_pool_where_the_caller_gave_one(modulo):
    model, seen = _state()
    assert first_divergence(model, dataclasses.replace(seen, pool=None), False, modulo=modulo) == \
        "pool: expected the caller's pool, got none"


@pytest.mark.parametrize("modulo", ALL)
def test_a_pool_of_the_wrong_size(modulo):
    model, seen = _state()
    # the contents of the mapped blocks are read from the short pool too: cut only the tail
    assert first_divergence(model, dataclasses.replace(seen, pool=seen.pool[:-1]), False, modulo=modulo) == \
        f"pool: expected {POOL} bytes, got {POOL - 1}"


@pytest.mark.parametrize("modulo", ALL)
def test_a_write_past_the_last_block(modulo):
    model, seen = _state()
    at = 8 * BLOCK_SIZE + 5
    pool = bytearray(seen.pool)
    want = pool[at]
    pool[at] ^= 0xFF
    assert first_divergence(model, dataclasses.replace(seen, pool=bytes(pool)), False, modulo=modulo) == \
        f"pool byte {at} (past the last block): expected {want:#04x}, got {pool[at]:#04x}"


@pytest.mark.parametrize("modulo", ALL)
@pytest.mark.parametrize("side", ["before", "after"])
def test_an_overwritten_guard_zone(modulo, side):
    model, seen = _state()
    guard = bytearray(GUARD)
    guard[9] = 0x00
    guards = {"guard_before": GUARD, "guard_after": GUARD, f"guard_{side}": bytes(guard)}
    seen = dataclasses.replace(seen, **guards)
    assert first_divergence(model, seen, False, modulo=modulo) == f"guard zone {side} the pool: byte 9 overwritten with 0x00"


@pytest.mark.parametrize("modulo", ALL)
def test_a_block_table_with_extra_l1_slots(modulo):
    model, seen = _state()
    first, *rest = seen.engine.sequences
    longer = dataclasses.replace(first, block_table=first.block_table + (None,))
    engine = dataclasses.replace(seen.engine, sequences=(longer, *rest))
    assert first_divergence(model, dataclasses.replace(seen, engine=engine), False, modulo=modulo) == \
        "seq 1 block_table: expected 16 L1 slots, got 17"


@pytest.mark.parametrize("modulo", ALL)
@pytest.mark.parametrize("entries", [15, 17])
def test_an_l2_table_of_the_wrong_length(modulo, entries):
    model, seen = _state()
    first, *rest = seen.engine.sequences
    l2 = (first.block_table[0] + (-1,) * 16)[:entries]
    odd = dataclasses.replace(first, block_table=(l2, *first.block_table[1:]))
    engine = dataclasses.replace(seen.engine, sequences=(odd, *rest))
    assert first_divergence(model, dataclasses.replace(seen, engine=engine), False, modulo=modulo) == \
        f"seq 1 block_table[0]: expected 16 L2 entries, got {entries}"


@pytest.mark.parametrize("modulo", ALL)
def test_a_wrong_record_names_the_written_value(modulo):
    model, seen = _state()
    block = seen.engine.sequences[0].block_table[0][0]
    pool = _poke(seen.pool, block * KV_PER_BLOCK + 3, 12345)
    message = first_divergence(model, dataclasses.replace(seen, pool=pool), False, modulo=modulo)
    assert message == f"seq 1 record 3 (block {block}): expected {model.sequences[1].values[3]}, got 12345"


@pytest.mark.parametrize("modulo", ALL)
def test_a_wrong_appended_record_names_the_value_appended(modulo):
    model, seen, _, _ = _run([("create_sequence", (1, 3)), ("append_kv", (1, 5))])
    block = seen[-1].engine.sequences[0].block_table[0][0]
    pool = _poke(seen[-1].pool, block * KV_PER_BLOCK + 3, 12345)
    assert first_divergence(model, dataclasses.replace(seen[-1], pool=pool), False, modulo=modulo) == \
        f"seq 1 record 3 (block {block}): expected 5, got 12345"


def test_under_block_ids_a_copy_of_a_now_free_block_is_named_as_such():
    """seq 2 copies seq 1's second block on write, then seq 1 is freed: the copy's untouched slots hold the
    magic numbers of a block nothing maps, which a renaming cannot place."""
    program = [("create_sequence", (1, 20)), ("fork_sequence", (1, 2)), ("append_kv", (2, 9)), ("free_sequence", (1,))]
    model, seen, _, _ = _run(program)
    seen = seen[-1]
    assert first_divergence(model, seen, False, modulo=BLOCKS) is None
    (state,) = seen.engine.sequences
    copy = state.block_table[0][1]
    slot = copy * KV_PER_BLOCK + 10  # past the 5 records of the copy
    pool = _poke(seen.pool, slot, 4242)
    assert first_divergence(model, dataclasses.replace(seen, pool=pool), False, modulo=BLOCKS) == \
        f"pool block {copy} slot 10 (byte {slot * KV_SIZE}): expected a magic number of slot 10 of a block that is now free, got 4242"
    # exactly, the slot must hold what it held (the copied block's number)
    (held,) = struct.unpack_from("<i", seen.pool, slot * KV_SIZE)
    freed = [b for b in range(8) if seen.engine.ref_count[b] == 0]
    assert [b for b in freed if held == magic(b * KV_PER_BLOCK + 10)], (held, freed)  # a now-free block's number
    assert first_divergence(model, dataclasses.replace(seen, pool=pool), False) == \
        f"pool block {copy} slot 10 (byte {slot * KV_SIZE}): expected {held}, got 4242"


# ---- state_change: a failing call must leave no trace ----------------------------------------------------


def _two():
    model, seen = _state()
    return seen


def test_state_change_engine_appears_or_vanishes():
    seen = _two()
    assert state_change(seen, dataclasses.replace(seen, engine=None)) == \
        "a failing call changed the state: engine: before live, after NULL"
    assert state_change(dataclasses.replace(seen, engine=None), seen) == \
        "a failing call changed the state: engine: before NULL, after live"


@pytest.mark.parametrize("field, value, words", [
    ("total_local_blocks", 9, "total_local_blocks: before 8, after 9"),
    ("free_local_blocks", 0, "free_local_blocks: before 5, after 0"),
])
def test_state_change_counters(field, value, words):
    seen = _two()
    after = dataclasses.replace(seen, engine=dataclasses.replace(seen.engine, **{field: value}))
    assert state_change(seen, after) == f"a failing call changed the state: {words}"


def test_state_change_ref_count():
    seen = _two()
    rc = seen.engine.ref_count
    longer = dataclasses.replace(seen, engine=dataclasses.replace(seen.engine, ref_count=rc + (0,)))
    assert state_change(seen, longer) == "a failing call changed the state: ref_count: before 8 entries, after 9"
    bumped = dataclasses.replace(seen, engine=dataclasses.replace(seen.engine, ref_count=(rc[0] + 1,) + rc[1:]))
    assert state_change(seen, bumped) == f"a failing call changed the state: ref_count[0]: before {rc[0]}, after {rc[0] + 1}"


def test_state_change_list_integrity_order_and_kv_count():
    seen = _two()
    broken = dataclasses.replace(seen, engine=dataclasses.replace(seen.engine, list_error="prev of seq 2 is not seq 1"))
    assert state_change(seen, broken) == \
        "a failing call changed the state: active list: before intact, after prev of seq 2 is not seq 1"
    a, b = seen.engine.sequences
    swapped = dataclasses.replace(seen, engine=dataclasses.replace(seen.engine, sequences=(b, a)))
    assert state_change(seen, swapped) == "a failing call changed the state: active list: before [1, 2], after [2, 1]"
    grown = dataclasses.replace(seen, engine=dataclasses.replace(seen.engine, sequences=(a, dataclasses.replace(b, kv_count=4))))
    assert state_change(seen, grown) == "a failing call changed the state: seq 2 kv_count: before 3, after 4"


def test_state_change_block_table_and_pool():
    seen = _two()
    a, b = seen.engine.sequences
    table = (None,) + b.block_table[1:]
    moved = dataclasses.replace(seen, engine=dataclasses.replace(seen.engine, sequences=(a, dataclasses.replace(b, block_table=table))))
    assert state_change(seen, moved) == \
        "a failing call changed the state: seq 2 block_table[0]: before an L2 table, after NULL"
    pool = _poke(seen.pool, 17, 99)
    old = struct.unpack_from("<i", seen.pool, 17 * KV_SIZE)[0]
    assert state_change(seen, dataclasses.replace(seen, pool=pool)) == \
        f"a failing call changed the state: pool block 1 slot 1 (byte 68): before {old}, after 99"
    tail = bytearray(seen.pool)
    tail[-1] ^= 0xFF
    assert state_change(seen, dataclasses.replace(seen, pool=bytes(tail))) == \
        f"a failing call changed the state: pool block 8 slot 1 (byte {POOL - 1}): before {seen.pool[-1]}, after {tail[-1]}"
    assert state_change(seen, seen) is None
