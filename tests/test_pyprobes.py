"""The white-box probes on Python implementations: the engine passes every one, and each bug a probe is
aimed at fails that probe, with the words of its C twin (c/probes.c)."""

from types import SimpleNamespace
from typing import Any

import pytest

from engine import llm_memory as base
from oracle.hw3.probes import PROBES
from oracle.hw3.pyprobes import C_ONLY, run_python_probes, spread_id

API = ("llm_init", "create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy")


def variant(**calls: Any) -> SimpleNamespace:
    """The engine with some calls replaced."""
    return SimpleNamespace(**{name: getattr(base, name) for name in API} | calls)


def free_stops_at_unmapped(engine, seq_id):
    seq = engine.find(seq_id) if engine is not None else None
    if seq is None:
        return -1
    seq.node.unlink()
    for l2_table in filter(None, seq.block_table):
        for block in l2_table:
            if block == base.UNMAPPED:
                break  # BUG: an unmapped entry does not end the table
            engine.release_block(block)
    return 0


def fork_stops_at_unmapped(engine, parent_seq_id, new_seq_id):
    parent = engine.find(parent_seq_id)
    if parent is None or engine.find(new_seq_id) is not None:
        return None
    child = base.Sequence(new_seq_id, parent.kv_count)
    for l1, l2_table in enumerate(parent.block_table):
        if l2_table is None:
            continue
        child.block_table[l1] = [base.UNMAPPED] * len(l2_table)
        for j, block in enumerate(l2_table):
            if block == base.UNMAPPED:
                break  # BUG: an unmapped entry does not end the table
            child.block_table[l1][j] = block
            engine.ref_count[block] += 1
    child.node.add_tail(engine.active_seqs)
    return child


def at_most_64_live(engine, seq_id, initial_kv_len):
    if engine is not None and sum(1 for _ in engine.sequences()) >= 64:
        return None  # BUG: a fixed-size table of sequences
    return base.create_sequence(engine, seq_id, initial_kv_len)


def one_global_engine() -> SimpleNamespace:
    """Sequences are looked up in the engine made last, whatever engine a call names."""
    last: list[Any] = []

    def llm_init(pool, size):
        engine = base.llm_init(pool, size)
        last[:] = [engine]
        return engine

    def on_last(call):
        return lambda engine, *args: call(last[0] if engine is not None else None, *args)

    return variant(llm_init=llm_init, **{name: on_last(getattr(base, name)) for name in API[1:5]})


def at_most_1024_blocks(pool, size):
    return base.llm_init(pool, min(size, 1024 * base.BLOCK_SIZE))  # BUG: a cap the spec does not set


def destroy_zeroing_the_pool(engine):
    if engine is not None:
        engine.pool_base_ptr[:] = bytes(len(engine.pool_base_ptr))  # BUG: the pool is the caller's
    return base.llm_destroy(engine)


def test_the_engine_passes_every_probe() -> None:
    results = run_python_probes(base)
    assert [r.name for r in results] == list(PROBES)
    assert all(r.passed for r in results), [(r.name, r.detail) for r in results]
    assert {r.name for r in results if r.detail.startswith("not applicable")} == C_ONLY


@pytest.mark.parametrize(
    "impl, probe, detail",
    [
        (variant(free_sequence=free_stops_at_unmapped), "l2_hole_free",
         "after freeing a sequence whose block_table[0] maps entries 0, 2 and 5 (entry 1 is -1), the blocks past the "
         "gap still have ref_count 1, expected 0 (the loop over an L2 table must not stop at an unmapped entry)"),
        (variant(fork_sequence=fork_stops_at_unmapped), "l2_hole_fork",
         "fork_sequence(engine, 1, 2) of a parent whose block_table[0] maps entries 0, 2 and 5 (entry 1 is -1): "
         "the child's block_table[0][2] is -1, expected the parent's 2"),
        (variant(create_sequence=at_most_64_live), "many_sequences",
         f"create_sequence(engine, {spread_id(64)}, 1) returned NULL with 64 sequences live and 4936 free blocks"),
        (one_global_engine(), "two_engines",
         "create_sequence(b, 1, 5) returned NULL: sequence 1 exists only in the other engine, a"),
        (variant(llm_init=at_most_1024_blocks), "init_untouched",
         "llm_init(pool, 67108864): total_local_blocks is 1024, expected 1048576"),
        (variant(llm_destroy=destroy_zeroing_the_pool), "destroy_keeps_pool",
         "llm_destroy wrote into the pool (byte 0) or freed it"),
    ],
    ids=["l2_hole_free", "l2_hole_fork", "many_sequences", "two_engines", "init_untouched", "destroy_keeps_pool"],
)
def test_a_bug_fails_the_probe_aimed_at_it(impl: SimpleNamespace, probe: str, detail: str) -> None:
    results = {r.name: r for r in run_python_probes(impl)}
    assert not results[probe].passed and results[probe].detail.startswith(detail), results[probe].detail
    assert results[probe].rule == PROBES[probe]


def test_a_create_bug_is_named_before_the_probe_edits_anything() -> None:
    def one_block_too_many(engine, seq_id, initial_kv_len):
        seq = base.create_sequence(engine, seq_id, initial_kv_len)
        if seq is not None:
            engine.free_local_blocks -= 1  # BUG: a block counted as taken that no table maps
        return seq

    results = {r.name: r for r in run_python_probes(variant(create_sequence=one_block_too_many))}
    assert results["l1_gap_free"].detail == (
        "free_local_blocks is 6 after create_sequence(engine, 1, 528), expected 7 "
        "(before the probe's edit; a create_sequence bug, see the create_free item)")


def test_an_exception_in_the_implementation_fails_the_probe_with_its_name() -> None:
    def raises(engine, *args):
        raise KeyError("boom")

    results = {r.name: r for r in run_python_probes(variant(fork_sequence=raises))}
    assert results["l1_gap_fork"].detail == "raised KeyError: 'boom'" and not results["l1_gap_fork"].passed
    assert results["l1_gap_free"].passed
