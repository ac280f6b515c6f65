"""The second opinion on a call that left a block unmapped (oracle/hw3/fresh_pool.py): the same call on a fresh
engine over an empty pool, in a fresh process, tells a search for a free block that failed on the pool it had
(first fit is charged too) from a count of blocks that is wrong anyway (the call's own task alone)."""

from pathlib import Path

import pytest

from oracle.difference import Difference
from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from oracle.hw3.difference import BLOCKS_TAKEN, KV_COUNT, MAPPING
from oracle.hw3.fresh_pool import left_unmapped, maps_on_a_fresh_pool
from oracle.hw3.machine import Call
from oracle.hw3.rules import FIRST_FIT, TASKS, Effects, also_broken, rule_of
from tests.conftest import REFERENCE_C

FIRST_FIT_LOOP = "    for (int block = 0; block < engine->total_local_blocks; block++) {\n        if (engine->ref_count[block] == 0) {"
VARIANTS = {
    "reference": ("", ""),
    # first fit scans only up to free_local_blocks: on a pool over half full it finds nothing
    "search_bound": (FIRST_FIT_LOOP, FIRST_FIT_LOOP.replace("engine->total_local_blocks", "engine->free_local_blocks")),
    # create maps one block per whole 16 records: a partly filled last block is never mapped
    "count_floor": ("    for (int logical = 0; logical < required; logical++) {",
                    "    for (int logical = 0; logical < initial_kv_len / KV_PER_BLOCK; logical++) {"),
}


def opener(tmp_path: Path, name: str):  # noqa: ANN201
    old, new = VARIANTS[name]
    text = REFERENCE_C.read_text()
    assert not old or text.count(old) == 1, old
    (tmp_path / "llm_memory.c").write_text(text.replace(old, new) if old else text)
    driver = build(tmp_path, tmp_path / "cache").driver
    assert driver is not None
    return lambda: CAdapter(driver)


@pytest.mark.parametrize("name, maps", [("reference", True), ("search_bound", True), ("count_floor", False)])
def test_a_create_maps_every_block_on_a_fresh_pool_unless_its_count_is_wrong(name: str, maps: bool, tmp_path: Path) -> None:
    assert maps_on_a_fresh_pool(opener(tmp_path, name), "create_sequence", 1, 17, False) is maps


@pytest.mark.parametrize("copied", [False, True])
def test_an_append_is_tried_on_a_sequence_one_record_shorter_forked_when_it_copied(copied: bool, tmp_path: Path) -> None:
    fresh = opener(tmp_path, "search_bound")
    assert maps_on_a_fresh_pool(fresh, "append_kv", 1, 17, copied)  # a new block; with a fork first, a copy too
    assert maps_on_a_fresh_pool(fresh, "append_kv", 1, 20, copied)  # in place (no fork: nothing to copy)


def test_the_unmapped_entry_is_what_asks_for_a_second_opinion() -> None:
    assert left_unmapped([Difference(BLOCKS_TAKEN, "free_local_blocks", 3, 4),
                          Difference(MAPPING, "seq 1 block_table[0][1]", "a block", -1, seq=1)])
    assert not left_unmapped([Difference(MAPPING, "seq 1 block_table[0][1]", "no block", 5, seq=1)])


def test_a_failed_search_adds_first_fit_and_never_removes_the_calls_own_rule() -> None:
    """The second opinion can be fooled (a count bug that behaves on a fresh pool only): it adds first fit to
    charge, and the call's own task stays charged either way."""
    create = Call("create_sequence", (1, 17), False, True)
    taken = Difference(BLOCKS_TAKEN, "free_local_blocks", 3, 4)
    plain, searched = Effects(frozenset({1}), frozenset({0})), Effects(frozenset({1}), frozenset({0}), search_failed=True)
    assert rule_of(taken, create, plain) == rule_of(taken, create, searched) == TASKS["create_sequence"]
    assert also_broken(taken, create, plain) is None and also_broken(taken, create, searched) == FIRST_FIT
    assert also_broken(Difference(KV_COUNT, "seq 1 kv_count", 17, 16, seq=1), create, searched) is None
