"""The white-box probes on Python implementations: the engine passes every one, and each bug a probe is
aimed at fails that probe, with the words of its C twin (c/probes.c)."""

from types import SimpleNamespace
from typing import Any, Callable

import pytest

from engine import llm_memory as base
from oracle.hw3.probes import PROBES
from oracle.hw3.pyprobes import C_ONLY, run_python_probes, spread_id

API = ("llm_init", "create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy")


def variant(**calls: Any) -> SimpleNamespace:
    """The engine with some calls replaced."""
    return SimpleNamespace(**{name: getattr(base, name) for name in API} | calls)


def _after(call: str, edit: Callable[..., Any]) -> Callable[..., Any]:
    """The engine's `call`, then `edit(first argument, result, other arguments)` to break what it left."""
    def broken(first, *args):
        result = getattr(base, call)(first, *args)
        edit(first, result, *args)
        return result
    return broken


def _set(obj: Any, **fields: Any) -> None:
    for name, value in fields.items():
        setattr(obj, name, value)


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


def _uncopy_past_unmapped(engine, child, *args):
    for l2_table in filter(None, child.block_table if child is not None else ()):
        hole = l2_table.index(base.UNMAPPED) if base.UNMAPPED in l2_table else len(l2_table)
        for j in range(hole, len(l2_table)):  # BUG: an unmapped entry ends the copy
            if l2_table[j] != base.UNMAPPED:
                engine.ref_count[l2_table[j]] -= 1
                l2_table[j] = base.UNMAPPED


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


def at_most_255_sharers(engine, parent_seq_id, new_seq_id):
    parent = engine.find(parent_seq_id) if engine is not None else None
    if parent is not None and engine.ref_count[parent.block_table[0][0]] >= 255:
        return None  # BUG: a ref_count kept in a byte
    return base.fork_sequence(engine, parent_seq_id, new_seq_id)


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
        (variant(fork_sequence=_after("fork_sequence", _uncopy_past_unmapped)), "l2_hole_fork",
         "fork_sequence(engine, 1, 2) of a parent whose block_table[0] maps entries 0, 2 and 5 (entry 1 is -1): "
         "the child's block_table[0][2] is -1, expected the parent's 2"),
        (variant(create_sequence=at_most_64_live), "many_sequences",
         f"create_sequence(engine, {spread_id(64)}, 1) returned NULL with 64 sequences live and 4936 free blocks"),
        (one_global_engine(), "two_engines",
         "create_sequence(b, 1, 5) failed, expected success: sequence 1 exists only in the other engine, a"),
        (variant(llm_init=at_most_1024_blocks), "init_untouched",
         "llm_init(pool, 67108864): total_local_blocks is 1024, expected 1048576"),
        (variant(llm_destroy=destroy_zeroing_the_pool), "destroy_keeps_pool",
         "llm_destroy wrote into the pool (byte 0) or freed it"),
        (variant(fork_sequence=at_most_255_sharers), "many_forks",
         "fork_sequence(engine, 0, 255) returned NULL with 254 forks of sequence 0 live, expected a sequence"),
    ],
    ids=["l2_hole_free", "l2_hole_fork", "many_sequences", "two_engines", "init_untouched", "destroy_keeps_pool",
         "many_forks"],
)
def test_a_bug_fails_the_probe_aimed_at_it(impl: SimpleNamespace, probe: str, detail: str) -> None:
    results = {r.name: r for r in run_python_probes(impl)}
    assert not results[probe].passed and results[probe].detail.startswith(detail), results[probe].detail
    assert results[probe].rule == PROBES[probe]


def test_a_create_bug_in_a_probe_set_up_leaves_the_probe_not_checked() -> None:
    """One bug costs the item of its own rule: the create bug fails create_free, not l1_traversal."""
    def one_block_too_many(engine, seq_id, initial_kv_len):
        seq = base.create_sequence(engine, seq_id, initial_kv_len)
        if seq is not None:
            engine.free_local_blocks -= 1  # BUG: a block counted as taken that no table maps
        return seq

    results = {r.name: r for r in run_python_probes(variant(create_sequence=one_block_too_many))}
    assert results["l1_gap_free"].passed and results["l1_gap_free"].detail == (
        "not checked: free_local_blocks is 6 after create_sequence(engine, 1, 528), expected 7 (another item's bug)")


def test_an_exception_in_the_implementation_fails_the_probe_with_its_name() -> None:
    def raises(engine, *args):
        raise KeyError("boom")

    results = {r.name: r for r in run_python_probes(variant(fork_sequence=raises))}
    assert results["l1_gap_fork"].detail == "raised KeyError: 'boom'" and not results["l1_gap_fork"].passed
    assert results["l1_gap_free"].passed


# Each bug, the probe that meets it, whether that probe fails (False) or passes as not checked (True), and the
# start of what it says.
BUGS = [
    ("create returns NULL", variant(create_sequence=lambda *a: None), "l1_gap_free", True,
     "not checked: create_sequence(engine, 1, 528) returned NULL with 40 free blocks"),
    ("create leaves 0, not -1", variant(create_sequence=_after("create_sequence", lambda e, s, *a: s.block_table[2].__setitem__(1, 0))),
     "l1_gap_free", True, "not checked: block_table[2][1] is 0 after create_sequence(engine, 1, 528)"),
    ("create adds an L2 table", variant(create_sequence=_after("create_sequence", lambda e, s, *a: s.block_table.__setitem__(15, [-1] * 16))),
     "l2_hole_free", True, "not checked: block_table[15] is an L2 table after create_sequence(engine, 1, 48)"),
    ("create maps a block twice", variant(create_sequence=_after("create_sequence", lambda e, s, *a: s and (
        s.block_table[0].__setitem__(1, s.block_table[0][0]), e.ref_count.__setitem__(1, 0), e.ref_count.__setitem__(s.block_table[0][2], 1)))),
     "l2_hole_fork", True, "not checked: create_sequence(engine, 1, 48) maps 2 distinct blocks, expected 3"),
    ("llm_init returns NULL", variant(llm_init=lambda *a: None), "l1_gap_fork", False, "llm_init(pool, 2560) returned NULL"),
    ("free returns -1", variant(free_sequence=lambda e, i: (base.free_sequence(e, i), -1)[1]),
     "l1_gap_free", False, "free_sequence(engine, 1) did not return 0 for a sequence with L1 slots 0, 2 and 3 in use"),
    ("free keeps the node linked", variant(free_sequence=lambda e, i: (lambda s: (base.free_sequence(e, i), s and s.node.add_tail(e.active_seqs))[0])(e.find(i))),
     "l1_gap_free", False, "the active list is not empty after freeing its only sequence"),
    ("fork returns NULL", variant(fork_sequence=lambda *a: None), "l1_gap_fork", False,
     "fork_sequence(engine, 1, 2) returned NULL for a parent whose L1 slot 1 is NULL"),
    ("fork shares L2 tables", variant(fork_sequence=_after("fork_sequence", lambda e, c, p, n: c and _set(c, block_table=e.find(p).block_table))),
     "l1_gap_fork", False, "fork_sequence(engine, 1, 2): the child's block_table[0] is the parent's L2 table"),
    ("fork zeroes kv_count", variant(fork_sequence=_after("fork_sequence", lambda e, c, *a: c and _set(c, kv_count=0))),
     "l2_hole_fork", False, "fork_sequence(engine, 1, 2): the child's kv_count is 0, expected the parent's 48"),
    ("fork adds an L2 table", variant(fork_sequence=_after("fork_sequence", lambda e, c, *a: c and c.block_table.__setitem__(1, [-1] * 16))),
     "l1_gap_fork", False, "fork_sequence(engine, 1, 2) of a parent whose L1 slot 1 is NULL: the child's block_table[1] is an L2 table"),
    ("fork takes a block", variant(fork_sequence=_after("fork_sequence", lambda e, c, *a: c and _set(e, free_local_blocks=e.free_local_blocks - 1))),
     "l1_gap_fork", False, "free_local_blocks is 6 after fork_sequence(engine, 1, 2), expected 7 (a fork takes no block)"),
    ("fork shares no block", variant(fork_sequence=_after("fork_sequence", lambda e, c, *a: c and [
        e.ref_count.__setitem__(b, e.ref_count[b] - 1) for t in c.block_table if t for b in t if b != -1])),
     "many_forks", False, "ref_count[0] is 1 after 300 forks of the one-block sequence that maps it, expected 301"),
    ("init writes the pool", variant(llm_init=_after("llm_init", lambda pool, e, size: size and pool.__setitem__(0, 0))),
     "init_untouched", False,
     "llm_init(pool, 63) wrote into the pool"),
    ("init takes 63 bytes", variant(llm_init=lambda pool, size: base.llm_init(pool, size) if size != 63 else base.llm_init(bytearray(64), 64)),
     "init_untouched", False, "llm_init(pool, 63) returned an engine, expected NULL"),
    ("init refuses 65 bytes", variant(llm_init=lambda pool, size: base.llm_init(pool, size) if size % 64 == 0 else None),
     "init_untouched", False, "llm_init(pool, 65) returned NULL"),
    ("init counts one free block too few", variant(llm_init=_after("llm_init", lambda pool, e, size: e and _set(e, free_local_blocks=e.free_local_blocks - 1))),
     "init_untouched", False, "llm_init(pool, 64): free_local_blocks is 0, expected 1"),
    ("init leaves the list head open", variant(llm_init=_after("llm_init", lambda pool, e, size: e and _set(e.active_seqs, next=None))),
     "init_untouched", False, "llm_init(pool, 64): the empty active_seqs head must point to itself both ways"),
    ("init takes a NULL pool", variant(llm_init=lambda pool, size: base.llm_init(pool if pool is not None else bytearray(size), size)),
     "init_untouched", False, "llm_init(NULL, 6400) returned an engine, expected NULL"),
    ("destroy returns -1", variant(llm_destroy=lambda e: -1), "destroy_keeps_pool", False, "llm_destroy(engine) did not return 0"),
    ("create takes no block", variant(create_sequence=_after("create_sequence", lambda e, s, *a: s and _set(e, free_local_blocks=e.free_local_blocks + 1))),
     "many_sequences", False, "free_local_blocks is 5000 with 5000 one-block sequences in a 5000-block pool, expected 0"),
    ("init counts 100 blocks", variant(llm_init=lambda pool, size: base.llm_init(pool, min(size, 6400) if pool is not None else size)),
     "many_sequences", True, "not checked: llm_init counted 100 blocks in a 5000-block pool"),
]


@pytest.mark.parametrize("impl, probe, passes, detail", [b[1:] for b in BUGS], ids=[b[0] for b in BUGS])
def test_each_check_of_a_probe_names_what_it_found(impl: SimpleNamespace, probe: str, passes: bool, detail: str) -> None:
    (result,) = run_python_probes(impl, only=[probe])
    assert result.passed == passes and result.detail.startswith(detail), result.detail
