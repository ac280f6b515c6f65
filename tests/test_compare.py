"""first_divergence: exact by default; `modulo` compares block ids up to a renaming and the active list as a
collection of ids, and still catches everything else (a bad renaming, a lost block, a write into a free
block, a wrong copy). Real implementations (the Python engine and its broken variants) make the states."""

import dataclasses
import struct

import pytest

from oracle.hw3.adapters import load_python
from oracle.hw3.compare import first_divergence, state_change
from oracle.hw3.model import Model
from oracle.hw3.observation import Observation
from oracle.hw3.pool import magic
from oracle.hw3.spec import BLOCK_SIZE
from tests.conftest import broken_python

BLOCKS = frozenset({"block_ids"})
ORDER = frozenset({"list_order"})
PROGRAM = [  # (api, args): forks, a copy-on-write, a free, reuse of freed blocks
    ("create_sequence", (1, 20)), ("append_kv", (1, 5)), ("fork_sequence", (1, 2)), ("append_kv", (2, 6)),
    ("create_sequence", (3, 40)), ("free_sequence", (1,)), ("append_kv", (3, 7)), ("create_sequence", (4, 17)),
    ("fork_sequence", (4, 5)), ("append_kv", (5, 8)), ("append_kv", (4, 9)),
]


def run(module: str, program=PROGRAM, blocks: int = 12):
    """Runs the program on the implementation and the model; yields (call, model, observation) per call."""
    adapter = load_python(module)()
    model = Model()
    engine = adapter.llm_init(blocks * BLOCK_SIZE)
    model.llm_init(blocks * BLOCK_SIZE)
    for api, args in program:
        assert getattr(adapter, api)(engine, *args) not in (None, -1)
        getattr(model, api)(False, *args)
        yield (api, args), model, adapter.observe(engine)


def at_end(module: str, program=PROGRAM) -> tuple[Model, Observation]:
    *_, (_, model, seen) = run(module, program)
    return model, seen


def test_the_reference_agrees_strictly_and_under_every_modulo() -> None:
    for _, model, seen in run("engine.llm_memory"):
        for modulo in (frozenset(), BLOCKS, ORDER, BLOCKS | ORDER):
            assert first_divergence(model, seen, False, modulo=modulo) is None


def test_last_fit_differs_strictly_and_agrees_up_to_a_renaming_of_blocks() -> None:
    strict = []
    for call, model, seen in run(broken_python("last_fit")):
        strict.append(first_divergence(model, seen, False))
        assert first_divergence(model, seen, False, modulo=BLOCKS) is None, call
    # the tables come before ref_count: the first thing a last-fit allocator shows is the block it picked
    assert strict[0] == "seq 1 block_table[0][0]: expected 0, got 11"


def test_a_destroyed_engine_leaves_its_data_in_renamed_blocks() -> None:
    """After llm_destroy no table says which block is which: the pool is compared as a multiset of blocks."""
    model, seen = at_end(broken_python("last_fit"), PROGRAM[:5])
    adapter = load_python(broken_python("last_fit"))()
    engine = adapter.llm_init(12 * BLOCK_SIZE)
    for api, args in PROGRAM[:5]:
        getattr(adapter, api)(engine, *args)
    adapter.llm_destroy(engine)
    model.llm_destroy(False)
    gone = adapter.observe(None)
    assert first_divergence(model, gone, False) is not None
    assert first_divergence(model, gone, False, modulo=BLOCKS) is None


def test_head_insertion_differs_strictly_and_agrees_as_a_set_of_ids() -> None:
    model, seen = at_end(broken_python("create_at_head"))
    assert first_divergence(model, seen, False).startswith("active list: expected [")
    assert first_divergence(model, seen, False, modulo=ORDER) is None
    assert first_divergence(model, seen, False, modulo=BLOCKS) is not None  # only the aspect named


def test_list_order_still_counts_the_ids_and_checks_integrity() -> None:
    model, seen = at_end("engine.llm_memory")
    engine = seen.engine
    dropped = dataclasses.replace(seen, engine=dataclasses.replace(engine, sequences=engine.sequences[1:]))
    assert first_divergence(model, dropped, False, modulo=ORDER) == (
        "active list: expected the ids [2, 3, 4, 5] in any order, got [3, 4, 5]"
    )
    doubled = dataclasses.replace(seen, engine=dataclasses.replace(engine, sequences=engine.sequences + engine.sequences[:1]))
    assert "in any order, got [2, 2, 3, 4, 5]" in first_divergence(model, doubled, False, modulo=ORDER)
    broken = dataclasses.replace(seen, engine=dataclasses.replace(engine, list_error="position 1 (seq 2): prev does not point to the node before it"))
    assert first_divergence(model, broken, False, modulo=ORDER).startswith("active list broken: position 1 (seq 2)")


def _with_table(seen: Observation, seq_index: int, l1: int, l2: int, block: int) -> Observation:
    engine = seen.engine
    seq = engine.sequences[seq_index]
    table = list(seq.block_table)
    row = list(table[l1])
    row[l2] = block
    table[l1] = tuple(row)
    sequences = list(engine.sequences)
    sequences[seq_index] = dataclasses.replace(seq, block_table=tuple(table))
    return dataclasses.replace(seen, engine=dataclasses.replace(engine, sequences=tuple(sequences)))


def test_an_inconsistent_renaming_is_a_divergence() -> None:
    model, seen = at_end(broken_python("last_fit"), PROGRAM[:3])  # seq 2 shares seq 1's blocks
    (shared, *_) = seen.engine.sequences[0].block_table[0]
    free = next(b for b, count in enumerate(seen.engine.ref_count) if count == 0)
    moved = _with_table(seen, 1, 0, 0, free)  # the child names another block where the parent's is shared
    assert first_divergence(model, moved, False, modulo=BLOCKS) == f"seq 2 block_table[0][0]: expected {shared}, got {free}"
    other = seen.engine.sequences[0].block_table[0][1]
    merged = _with_table(seen, 0, 0, 0, other)  # two of the model's blocks named by one
    assert first_divergence(model, merged, False, modulo=BLOCKS) == (
        f"seq 1 block_table[0][1]: expected a block other than {other} (seq 1 block_table[0][0] holds {other} "
        f"for different data), got {other}"
    )
    outside = _with_table(seen, 0, 0, 0, 12)
    assert first_divergence(model, outside, False, modulo=BLOCKS) == "seq 1 block_table[0][0]: expected a block id in 0..11, got 12"
    unmapped = _with_table(seen, 0, 0, 1, -1)
    assert first_divergence(model, unmapped, False, modulo=BLOCKS) == "seq 1 block_table[0][1]: expected a block, got -1"


def test_a_lost_block_is_a_divergence() -> None:
    model, seen = at_end(broken_python("last_fit"))
    engine = seen.engine
    lost = dataclasses.replace(seen, engine=dataclasses.replace(engine, free_local_blocks=engine.free_local_blocks - 1))
    assert first_divergence(model, lost, False, modulo=BLOCKS) == (
        f"free_local_blocks: expected {engine.free_local_blocks}, got {engine.free_local_blocks - 1}"
    )
    free = next(b for b, count in enumerate(engine.ref_count) if count == 0)
    counts = list(engine.ref_count)
    counts[free] = 1
    held = dataclasses.replace(seen, engine=dataclasses.replace(engine, ref_count=tuple(counts)))
    assert first_divergence(model, held, False, modulo=BLOCKS) == f"ref_count[{free}]: expected 0, got 1"
    shared = engine.sequences[-1].block_table[0][0]  # seq 5's first block, shared with seq 4
    counts = list(engine.ref_count)
    counts[shared] -= 1
    under = dataclasses.replace(seen, engine=dataclasses.replace(engine, ref_count=tuple(counts)))
    assert first_divergence(model, under, False, modulo=BLOCKS) == f"ref_count[{shared}]: expected 2, got 1"
    # the broken variant that never gives a block back
    *_, (_, model, seen) = run(broken_python("free_count_not_incremented"), PROGRAM[:6])
    assert first_divergence(model, seen, False, modulo=BLOCKS).startswith("free_local_blocks: expected ")


def _poke(seen: Observation, block: int, slot: int, value: int) -> Observation:
    pool = bytearray(seen.pool)
    struct.pack_into("<i", pool, (block * 16 + slot) * 4, value)
    return dataclasses.replace(seen, pool=bytes(pool))


def test_the_pool_is_compared_through_the_renaming() -> None:
    model, seen = at_end(broken_python("last_fit"))
    engine = seen.engine
    mapped = engine.sequences[0].block_table[0][0]  # seq 2's first block
    free = next(b for b, count in enumerate(engine.ref_count) if count == 0)
    written = _poke(seen, mapped, 3, 12345)
    assert first_divergence(model, written, False, modulo=BLOCKS) == f"seq 2 record 3 (block {mapped}): expected {magic(mapped * 16 + 3)}, got 12345"
    stray = _poke(seen, free, 5, 777)  # a write into a block nobody maps
    problem = first_divergence(model, stray, False, modulo=BLOCKS)
    assert problem.startswith(f"pool block {free} slot 5 (byte {(free * 16 + 5) * 4}; a free block") and problem.endswith("got 777")
    # a magic number from the wrong block is not the same as the right one
    wrong = _poke(seen, mapped, 3, magic(free * 16 + 3))
    assert first_divergence(model, wrong, False, modulo=BLOCKS) is not None


def test_modulo_still_catches_copy_on_write_bugs() -> None:
    model, seen = at_end(broken_python("cow_copies_written_only"), PROGRAM[:4])
    assert first_divergence(model, seen, False, modulo=BLOCKS | ORDER).startswith("pool block ")
    model, seen = at_end(broken_python("no_cow"), PROGRAM[:4])  # the append writes into the shared block
    assert first_divergence(model, seen, False, modulo=BLOCKS | ORDER) == (
        "free_local_blocks: expected 9, got 10 (it matches your ref_count array: the call took or released the wrong "
        "number of blocks)")


def test_a_free_count_out_of_step_with_ref_count_is_reported_plainly() -> None:
    """Constraint 5 itself broken: free_local_blocks no longer counts the blocks whose ref_count is 0."""
    model, seen = at_end(broken_python("free_count_not_incremented"), PROGRAM[:6])
    assert first_divergence(model, seen, False) == "free_local_blocks: expected 7, got 6"


def test_unknown_aspects_are_refused() -> None:
    model, seen = at_end("engine.llm_memory", PROGRAM[:1])
    with pytest.raises(ValueError, match="unknown aspect"):
        first_divergence(model, seen, False, modulo=frozenset({"pool"}))


def test_state_change_compares_the_implementation_with_itself() -> None:
    model, seen = at_end("engine.llm_memory", PROGRAM[:3])
    assert state_change(seen, seen) is None
    engine = seen.engine
    reordered = dataclasses.replace(seen, engine=dataclasses.replace(engine, sequences=engine.sequences[::-1]))
    assert state_change(seen, reordered) == "a failing call changed the state: active list: before [1, 2], after [2, 1]"
    assert state_change(seen, _poke(seen, 11, 0, 1)) == (
        f"a failing call changed the state: pool block 11 slot 0 (byte {11 * 64}): before {magic(11 * 16)}, after 1"
    )
    moved = _with_table(seen, 1, 0, 0, 9)
    assert state_change(seen, moved) == "a failing call changed the state: seq 2 block_table[0][0]: before 0, after 9"
