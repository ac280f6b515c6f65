"""oracle/hw3/fresh_pool.py's witnesses on the Python engine, in process: a call maps what it must on an empty pool
of FRESH_BLOCKS blocks, one-record creates after a program each map a block, and a refusal that more free blocks
undo is replayed over a pool derived from the program's own (witness_pool)."""

from oracle.hw3 import load_adapter, programs
from oracle.hw3.fresh_pool import (
    FRESH_BLOCKS, _one_block_creates, maps_on_a_fresh_pool, refused_for_want_of_blocks, witness_pool,
)
from oracle.hw3.spec import BLOCK_SIZE
from oracle.program import Step


def test_a_correct_engine_maps_what_each_call_needs_on_a_fresh_pool():
    fresh = load_adapter("engine")
    assert maps_on_a_fresh_pool(fresh, "create_sequence", 3, 40, copied=False)
    assert maps_on_a_fresh_pool(fresh, "append_kv", 3, 17, copied=False)  # the append takes a second block
    assert maps_on_a_fresh_pool(fresh, "append_kv", 3, 5, copied=True)  # a fork, then the copy-on-write
    assert not maps_on_a_fresh_pool(fresh, "create_sequence", 3, 0, copied=False)  # refused: nothing mapped


def test_one_block_creates_after_a_program_each_map_a_block_or_ask_nothing():
    fresh = load_adapter("engine")
    pool = Step("llm_init", (64 * 8,))
    assert _one_block_creates(fresh, [pool, Step("create_sequence", (0, 16))], 3) == [True, True, True]
    assert _one_block_creates(fresh, [], 2) is None  # no engine: it asks nothing of a search
    full = [pool, Step("create_sequence", (0, 16 * 8))]
    assert _one_block_creates(fresh, full, 1) is None  # no free block by its own count


def test_the_witness_pool_is_the_programs_own_with_twice_the_blocks_its_calls_can_take():
    steps = list(programs.load("free_count").steps)
    # creates of 31, 144 and 160 records (2, 9 and 10 blocks; the 144 refused, counted all the same), two appends
    assert witness_pool(steps) == 640 + 2 * (2 + 9 + 10 + 2) * BLOCK_SIZE
    assert witness_pool([Step("llm_init", (703,)), Step("create_sequence", (1, 17))]) == 703 + 2 * 2 * BLOCK_SIZE  # odd bytes kept
    assert witness_pool([Step("llm_init", (640,))]) == 640 + 2 * BLOCK_SIZE  # a program of no calls: still more blocks
    sizes = {witness_pool(steps[: n + 1]) for n in range(1, len(steps))}
    assert len(sizes) > 1 and FRESH_BLOCKS * BLOCK_SIZE not in sizes  # no one size marks the second opinion


def test_a_refusal_that_more_free_blocks_undo_is_told_from_the_calls_own():
    steps = list(programs.load("free_count").steps)
    steps = steps[: steps.index(Step("create_sequence", (4, 160))) + 1]
    short = load_adapter("tests.broken.free_count_not_incremented")
    assert refused_for_want_of_blocks(short, steps)  # create 4 160 after the frees: 10 blocks believed 0 free
    engine = load_adapter("engine")
    assert refused_for_want_of_blocks(engine, steps)  # the reference takes it on any pool
    twice = [Step("llm_init", (640,)), Step("create_sequence", (1, 16)), Step("create_sequence", (1, 16))]
    assert not refused_for_want_of_blocks(engine, twice)  # an id in use is refused on every pool
