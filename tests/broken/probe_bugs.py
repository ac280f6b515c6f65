"""The engine with one call replaced, one object per bug a white-box probe must find (tests/test_pyprobes.py).

Graded submissions run in a child process, so a variant is named `tests.broken.probe_bugs:<name>` and lives
in a file, not in the test: each is a namespace holding the six calls, the engine's but for its bug.
"""

from types import SimpleNamespace
from typing import Any, Callable

from engine import llm_memory as base

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


def one_block_too_many(engine, seq_id, initial_kv_len):
    seq = base.create_sequence(engine, seq_id, initial_kv_len)
    if seq is not None:
        engine.free_local_blocks -= 1  # BUG: a block counted as taken that no table maps
    return seq


def raises(engine, *args):
    raise KeyError("boom")


engine = variant()

# each aimed at one probe
l2_hole_free = variant(free_sequence=free_stops_at_unmapped)
l2_hole_fork = variant(fork_sequence=_after("fork_sequence", _uncopy_past_unmapped))
many_sequences = variant(create_sequence=at_most_64_live)
two_engines = one_global_engine()
init_untouched = variant(llm_init=at_most_1024_blocks)
destroy_keeps_pool = variant(llm_destroy=destroy_zeroing_the_pool)
many_forks = variant(fork_sequence=at_most_255_sharers)
create_miscounts = variant(create_sequence=one_block_too_many)
fork_raises = variant(fork_sequence=raises)

# each check of a probe
create_returns_null = variant(create_sequence=lambda *a: None)
create_leaves_0 = variant(create_sequence=_after("create_sequence", lambda e, s, *a: s.block_table[2].__setitem__(1, 0)))
create_adds_l2 = variant(create_sequence=_after("create_sequence", lambda e, s, *a: s.block_table.__setitem__(15, [-1] * 16)))
create_leaves_wild = variant(create_sequence=_after("create_sequence", lambda e, s, *a: s and s.block_table.__setitem__(
    1, [-(1 << 63)])))  # an L2 table that reads as a C wild pointer's sentinel: the set-up repairs it only by an edit
create_maps_twice = variant(create_sequence=_after("create_sequence", lambda e, s, *a: s and (
    s.block_table[0].__setitem__(1, s.block_table[0][0]), e.ref_count.__setitem__(1, 0),
    e.ref_count.__setitem__(s.block_table[0][2], 1))))
init_returns_null = variant(llm_init=lambda *a: None)
free_returns_minus_1 = variant(free_sequence=lambda e, i: (base.free_sequence(e, i), -1)[1])
free_keeps_node = variant(free_sequence=lambda e, i: (lambda s: (base.free_sequence(e, i), s and s.node.add_tail(e.active_seqs))[0])(e.find(i)))
fork_returns_null = variant(fork_sequence=lambda *a: None)
fork_shares_l2 = variant(fork_sequence=_after("fork_sequence", lambda e, c, p, n: c and _set(c, block_table=e.find(p).block_table)))
fork_zeroes_kv_count = variant(fork_sequence=_after("fork_sequence", lambda e, c, *a: c and _set(c, kv_count=0)))
fork_adds_l2 = variant(fork_sequence=_after("fork_sequence", lambda e, c, *a: c and c.block_table.__setitem__(1, [-1] * 16)))
fork_adds_mapped_l2 = variant(fork_sequence=_after("fork_sequence", lambda e, c, *a: c and c.block_table.__setitem__(1, list(c.block_table[0]))))
fork_takes_block = variant(fork_sequence=_after("fork_sequence", lambda e, c, *a: c and _set(e, free_local_blocks=e.free_local_blocks - 1)))
fork_shares_no_block = variant(fork_sequence=_after("fork_sequence", lambda e, c, *a: c and [
    e.ref_count.__setitem__(b, e.ref_count[b] - 1) for t in c.block_table if t for b in t if b != -1]))
init_writes_pool = variant(llm_init=_after("llm_init", lambda pool, e, size: size and pool.__setitem__(0, 0)))
init_takes_63 = variant(llm_init=lambda pool, size: base.llm_init(pool, size) if size != 63 else base.llm_init(bytearray(64), 64))
init_refuses_65 = variant(llm_init=lambda pool, size: base.llm_init(pool, size) if size % 64 == 0 else None)
init_free_one_short = variant(llm_init=_after("llm_init", lambda pool, e, size: e and _set(e, free_local_blocks=e.free_local_blocks - 1)))
init_head_open = variant(llm_init=_after("llm_init", lambda pool, e, size: e and _set(e.active_seqs, next=None)))
init_takes_null = variant(llm_init=lambda pool, size: base.llm_init(pool if pool is not None else bytearray(size), size))
destroy_returns_minus_1 = variant(llm_destroy=lambda e: -1)
create_takes_no_block = variant(create_sequence=_after("create_sequence", lambda e, s, *a: s and _set(e, free_local_blocks=e.free_local_blocks + 1)))
init_counts_100 = variant(llm_init=lambda pool, size: base.llm_init(pool, min(size, 6400) if pool is not None else size))
