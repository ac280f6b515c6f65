"""oracle/hw3/fresh_pool.py's witnesses on the Python engine, in process: a call maps what it must on an empty pool
of FRESH_BLOCKS blocks, and one-record creates after a program each map a block (a refusal's rule is decided by
graded runs alone: tests/test_refusal_rule.py)."""

from oracle.hw3 import load_adapter
from oracle.hw3.fresh_pool import _one_block_creates, maps_on_a_fresh_pool
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
