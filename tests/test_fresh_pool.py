"""The second opinion on a call that left a block unmapped (oracle/hw3/fresh_pool.py): witnesses in fresh
processes tell a search for a free block that failed where the call ran (first fit's bug) from a count of
blocks that is wrong (the call's own task), including a count that is wrong only on some pools."""

from pathlib import Path

import pytest

from oracle.difference import Difference
from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from oracle.hw3.difference import BLOCKS_TAKEN, KV_COUNT, MAPPING
from oracle.hw3.fresh_pool import left_unmapped, maps_on_a_fresh_pool, search_failed
from oracle.hw3.call import Call
from oracle.hw3.rules import FIRST_FIT, TASKS, Effects, rule_of
from oracle.hw3.programs import parse
from tests.conftest import REFERENCE_C, seeded_build_cache

FIRST_FIT_LOOP = "    for (int block = 0; block < engine->total_local_blocks; block++) {\n        if (engine->ref_count[block] == 0) {"
VARIANTS = {
    "reference": ("", ""),
    # first fit scans only up to free_local_blocks: on a pool over half full it finds nothing
    "search_bound": (FIRST_FIT_LOOP, FIRST_FIT_LOOP.replace("engine->total_local_blocks", "engine->free_local_blocks")),
    # create maps one block per whole 16 records: a partly filled last block is never mapped
    "count_floor": ("    for (int logical = 0; logical < required; logical++) {",
                    "    for (int logical = 0; logical < initial_kv_len / KV_PER_BLOCK; logical++) {"),
    # a count one block short, except on the count witness's 4096-block pool (an adversarial review's attack)
    "short_except_large": ("    for (int logical = 0; logical < required; logical++) {",
                           "    for (int logical = 0; logical < required - (required >= 2 && engine->total_local_blocks "
                           "!= 4096); logical++) {"),
    # the same, on every pool that is not empty: one-block creates there map nothing at all
    "short_when_used": ("    for (int logical = 0; logical < required; logical++) {",
                        "    for (int logical = 0; logical < required - (engine->free_local_blocks != "
                        "engine->total_local_blocks && engine->total_local_blocks != 4096); logical++) {"),
    # a short create that then makes every later create map nothing (an adversarial review's attack on a
    # witness made after the call): a flag the call sets
    "short_then_poisoned": ("    for (int logical = 0; logical < required; logical++) {",
                            "    static int poisoned;\n    if (engine->free_local_blocks != engine->total_local_blocks && required >= 2)\n"
                            "        poisoned = 1;\n    for (int logical = 0; logical < required - (required >= 2 && poisoned) - "
                            "(required == 1 && poisoned); logical++) {"),
}
# The second create needs 35 of the 39 free blocks; searching below free_local_blocks, it finds blocks 1 to 19
# (the 19th search has 21 free below 21) and then none.
FULL = list(parse("llm_init 2560\ncreate_sequence 1 16\ncreate_sequence 2 560\n", "full").steps)
WANTED, TOOK = 35, 19


def opener(tmp_path: Path, name: str):  # noqa: ANN201
    old, new = VARIANTS[name]
    text = REFERENCE_C.read_text()
    assert not old or text.count(old) == 1, old
    (tmp_path / "llm_memory.c").write_text(text.replace(old, new) if old else text)
    driver = build(tmp_path, seeded_build_cache(tmp_path / "cache")).driver
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


def _unmapped(seq_id: int) -> list[Difference]:
    return [Difference(MAPPING, f"seq {seq_id} block_table[1][2]", "a block", -1, seq=seq_id)]


@pytest.mark.parametrize("name, failed", [("search_bound", True), ("count_floor", False), ("short_except_large", False),
                                          ("short_when_used", False), ("short_then_poisoned", False)])
def test_a_failed_search_is_told_from_a_short_count(name: str, failed: bool, tmp_path: Path) -> None:
    """search_bound's one-block creates, made where the call ran, find blocks 1 to 19 and then none, as the call
    did. count_floor maps too few blocks on any pool; short_except_large only on pools other than the count
    witness's; short_when_used maps nothing for a one-block create on a used pool; short_then_poisoned is
    poisoned by the short call itself, which the last witness does not replay."""
    assert search_failed(opener(tmp_path, name), _unmapped(2), FULL, 35 * 16, False, WANTED, TOOK) is failed


def test_no_second_opinion_without_an_unmapped_entry_a_pool_or_a_block_not_taken(tmp_path: Path) -> None:
    fresh = opener(tmp_path, "search_bound")
    assert not search_failed(fresh, [Difference(BLOCKS_TAKEN, "free_local_blocks", 4, 20)], FULL, 35 * 16, False, WANTED, TOOK)
    assert not search_failed(fresh, _unmapped(2), list(parse("llm_init NULL 2560\ncreate_sequence 2 560\n", "null pool").steps), 35 * 16, False, WANTED, TOOK)
    assert not search_failed(fresh, _unmapped(2), FULL, 35 * 16, False, WANTED, WANTED)
    assert not search_failed(fresh, _unmapped(2), FULL, 35 * 16, False, WANTED, TOOK + 1)  # not where its searches stop


def test_an_append_whose_search_failed_is_told_the_same_way(tmp_path: Path) -> None:
    steps = list(parse("llm_init 2560\ncreate_sequence 1 560\nfork_sequence 1 2\nappend_kv 2 7\n", "append").steps)
    # blocks 0 to 19, then the append's search fails
    assert search_failed(opener(tmp_path, "search_bound"), _unmapped(2), steps, 35 * 16 + 1, True, 1, 0)


def test_a_failed_search_is_first_fits_alone() -> None:
    """What the tables show of a failed search (blocks taken, an entry, a count) is first fit's; kv_count is
    never a search's."""
    create_call = Call("create_sequence", (1, 17), False, True)
    taken = Difference(BLOCKS_TAKEN, "free_local_blocks", 3, 4)
    plain, searched = Effects(frozenset({1}), frozenset({0})), Effects(frozenset({1}), frozenset({0}), search_failed=True)
    assert rule_of(taken, create_call, plain) == TASKS["create_sequence"]
    assert rule_of(taken, create_call, searched) == FIRST_FIT
    assert rule_of(_unmapped(1)[0], create_call, searched) == FIRST_FIT
    assert rule_of(Difference(KV_COUNT, "seq 1 kv_count", 17, 16, seq=1), create_call, searched) == TASKS["create_sequence"]


def _python(**broken: object):  # noqa: ANN202
    """Fresh adapters on the Python engine, with the calls in `broken` replacing its own."""
    import types

    import engine.llm_memory as reference
    from oracle.hw3.adapters import PythonAdapter

    impl = types.SimpleNamespace(**{name: getattr(reference, name) for name in (
        "llm_init", "create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy")} | broken)
    return lambda: PythonAdapter(impl, "llm_memory")


def _raises(*args: object) -> None:
    raise RuntimeError("a bug of its own")


def test_a_witness_whose_own_calls_fail_says_the_call_maps_nothing_on_a_fresh_pool() -> None:
    """The second opinion rests on the witness's own calls: a fork, an append or a create that fails or raises
    there gives no opinion that the call's count is right (False), where the Python engine itself gives one."""
    assert maps_on_a_fresh_pool(_python(), "append_kv", 1, 17, True)
    assert not maps_on_a_fresh_pool(_python(fork_sequence=lambda *args: None), "append_kv", 1, 17, True)
    assert not maps_on_a_fresh_pool(_python(append_kv=lambda *args: -1), "append_kv", 1, 17, False)
    assert not maps_on_a_fresh_pool(_python(create_sequence=_raises), "create_sequence", 1, 17, False)
