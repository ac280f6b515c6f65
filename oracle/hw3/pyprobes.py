"""The white-box probes of c/probes.c for a Python implementation, with the same names and messages.

A probe edits the implementation's live objects (a sequence's block_table) or drives it outside what one
adapter does (two engines at once), through the field names the Python contract shares with the C structs.
big_pool, about int overflow in a C address, has no Python counterpart and passes.
"""

from typing import Any, Callable, Sequence

from oracle.hw3.probes import PROBES, ProbeResult
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, L2_PT_SIZE, UNMAPPED

C_ONLY = {"big_pool"}


class ProbeFailed(Exception):
    """What differs, in the words of the C probe."""


class NotChecked(Exception):
    """The probe's set-up met another item's bug: the probe passes, that item fails."""


def _engine(impl: Any, blocks: int) -> Any:
    engine = impl.llm_init(memoryview(bytearray(blocks * BLOCK_SIZE)), blocks * BLOCK_SIZE)
    if engine is None:
        raise ProbeFailed(f"llm_init(pool, {blocks * BLOCK_SIZE}) returned NULL")
    return engine


def _created(impl: Any, engine: Any, seq_id: int, records: int) -> Any:
    """create_sequence on an engine with nothing mapped, checked (up to block ids) before a probe edits it."""
    used, free_before = -(-records // KV_PER_BLOCK), engine.free_local_blocks
    seq = impl.create_sequence(engine, seq_id, records)
    call = f"create_sequence(engine, {seq_id}, {records})"
    if seq is None:
        raise NotChecked(f"{call} returned NULL with {free_before} free blocks")
    if engine.free_local_blocks != free_before - used:
        raise NotChecked(f"free_local_blocks is {engine.free_local_blocks} after {call}, expected {free_before - used}")
    entries = [(l1, j, block) for l1, l2 in enumerate(seq.block_table) for j, block in enumerate(l2 or ())]
    for l1, l2 in enumerate(seq.block_table):
        if (l2 is not None) != (l1 * L2_PT_SIZE < used):
            raise NotChecked(f"block_table[{l1}] is {'NULL' if l2 is None else 'an L2 table'} after {call}")
    for l1, j, block in entries:
        mapped = l1 * L2_PT_SIZE + j < used
        if not (0 <= block < engine.total_local_blocks and engine.ref_count[block] == 1) if mapped else block != UNMAPPED:
            raise NotChecked(f"block_table[{l1}][{j}] is {block} after {call}")
    if len(_mapped(seq)) != used:
        raise NotChecked(f"{call} maps {len(_mapped(seq))} distinct blocks, expected {used}")
    return seq


def _mapped(seq: Any) -> set[int]:
    return {block for l2 in seq.block_table if l2 is not None for block in l2 if block != UNMAPPED}


def _check_all_free(engine: Any, after: str) -> None:
    for block, count in enumerate(engine.ref_count):
        if count:
            raise ProbeFailed(f"ref_count[{block}] is {count} after {after}, expected 0")
    if engine.free_local_blocks != engine.total_local_blocks:
        raise ProbeFailed(f"free_local_blocks is {engine.free_local_blocks} after {after}, expected {engine.total_local_blocks}")


def _check_released(engine: Any, kept: set[int], after: str, why: str) -> None:
    held = {block for block, count in enumerate(engine.ref_count) if count}
    if held and held == kept:
        raise ProbeFailed(f"after {after}, the blocks past the gap still have ref_count 1, expected 0 ({why})")
    _check_all_free(engine, after)


def _check_forked(engine: Any, parent: Any, child: Any, edit: str, why: str) -> None:
    if child is None or len(child.block_table) != len(parent.block_table):
        got = "NULL" if child is None else f"a child with {len(child.block_table)} L1 slots"
        raise ProbeFailed(f"fork_sequence(engine, 1, 2) returned {got} for a parent whose {edit}")
    if child.kv_count != parent.kv_count:
        raise ProbeFailed(f"fork_sequence(engine, 1, 2): the child's kv_count is {child.kv_count}, expected the parent's {parent.kv_count}")
    for l1, (source, copy) in enumerate(zip(parent.block_table, child.block_table)):
        if source is None:
            if copy is not None:
                raise ProbeFailed(f"fork_sequence(engine, 1, 2) of a parent whose L1 slot {l1} is NULL: the child's "
                                  f"block_table[{l1}] is an L2 table, expected NULL")
            continue
        if copy is None:
            raise ProbeFailed(f"fork_sequence(engine, 1, 2) of a parent whose {edit}: the child's block_table[{l1}] is "
                              f"NULL, expected a copy of the parent's ({why})")
        if copy is source:
            raise ProbeFailed(f"fork_sequence(engine, 1, 2): the child's block_table[{l1}] is the parent's L2 table, expected its own copy")
        for j, (want, have) in enumerate(zip(source, copy)):
            if have != want:
                raise ProbeFailed(f"fork_sequence(engine, 1, 2) of a parent whose {edit}: the child's "
                                  f"block_table[{l1}][{j}] is {have}, expected the parent's {want} ({why})")
            if want != UNMAPPED and engine.ref_count[want] != 2:
                raise ProbeFailed(f"ref_count[{want}] is {engine.ref_count[want]} after fork_sequence(engine, 1, 2), "
                                  f"expected 2: the block is in the parent's block_table[{l1}][{j}], and the parent's "
                                  f"{edit} ({why})")


def _list_length(engine: Any, limit: int = 10_000) -> int:
    n, node = 0, engine.active_seqs.next
    while node is not engine.active_seqs and n <= limit:
        n, node = n + 1, node.next
    return n


GAP = "L1 slot 1 is NULL and slots 0, 2 and 3 are in use"
HOLE = "block_table[0] maps entries 0, 2 and 5 (entry 1 is -1)"
STOP_L1 = "the loop must not stop at a NULL slot"
STOP_L2 = "the loop over an L2 table must not stop at an unmapped entry"


def l1_gap_free(impl: Any) -> str:
    engine = _engine(impl, 40)
    seq = _created(impl, engine, 1, (2 * L2_PT_SIZE + 1) * KV_PER_BLOCK)
    kept = _mapped(seq) - set(seq.block_table[0])
    seq.block_table[3], seq.block_table[1] = seq.block_table[1], None
    if impl.free_sequence(engine, 1) != 0:
        raise ProbeFailed("free_sequence(engine, 1) did not return 0 for a sequence with L1 slots 0, 2 and 3 in use")
    _check_released(engine, kept, f"freeing a sequence whose {GAP}", STOP_L1)
    if engine.active_seqs.next is not engine.active_seqs or engine.active_seqs.prev is not engine.active_seqs:
        raise ProbeFailed("the active list is not empty after freeing its only sequence")
    return "freed a 33-block sequence with L1 slots 0, 2 and 3 in use: every block released"


def l1_gap_fork(impl: Any) -> str:
    engine = _engine(impl, 40)
    parent = _created(impl, engine, 1, (2 * L2_PT_SIZE + 1) * KV_PER_BLOCK)
    parent.block_table[3], parent.block_table[1] = parent.block_table[1], None
    _check_forked(engine, parent, impl.fork_sequence(engine, 1, 2), GAP, STOP_L1)
    if engine.free_local_blocks != 40 - 33:
        raise ProbeFailed(f"free_local_blocks is {engine.free_local_blocks} after fork_sequence(engine, 1, 2), "
                          "expected 7 (a fork takes no block)")
    return "forked a 33-block sequence with L1 slots 0, 2 and 3 in use: every L2 table copied, every block shared"


def _l2_hole(impl: Any, engine: Any) -> Any:
    seq = _created(impl, engine, 1, 3 * KV_PER_BLOCK)
    l2 = seq.block_table[0]
    l2[5], l2[1] = l2[1], UNMAPPED
    return seq


def l2_hole_free(impl: Any) -> str:
    engine = _engine(impl, 8)
    seq = _l2_hole(impl, engine)
    kept = _mapped(seq) - {seq.block_table[0][0]}
    if impl.free_sequence(engine, 1) != 0:
        raise ProbeFailed("free_sequence(engine, 1) did not return 0 for a sequence whose block_table[0] maps entries 0, 2 and 5")
    _check_released(engine, kept, f"freeing a sequence whose {HOLE}", STOP_L2)
    return "freed a sequence whose block_table[0] maps entries 0, 2 and 5: every block released"


def l2_hole_fork(impl: Any) -> str:
    engine = _engine(impl, 8)
    parent = _l2_hole(impl, engine)
    _check_forked(engine, parent, impl.fork_sequence(engine, 1, 2), HOLE, STOP_L2)
    return "forked a sequence whose block_table[0] maps entries 0, 2 and 5: every entry copied, every block shared"


def spread_id(i: int) -> int:
    """probes.c's spread_id: distinct non-negative int32 ids whose low 16 bits collide."""
    return ((i * 40503) & 0x7FFF) << 16 | i >> 8


def many_sequences(impl: Any) -> str:
    count = 5000
    engine = _engine(impl, count)
    if engine.total_local_blocks != count:
        raise NotChecked(f"llm_init counted {engine.total_local_blocks} blocks in a {count}-block pool")
    for i in range(count):
        if impl.create_sequence(engine, spread_id(i), 1) is None:
            raise ProbeFailed(f"create_sequence(engine, {spread_id(i)}, 1) returned NULL with {i} sequences live and "
                              f"{engine.free_local_blocks} free blocks, expected a sequence: no live sequence has that "
                              "id, and the spec limits sequences only by the pool")
    if engine.free_local_blocks != 0:
        raise ProbeFailed(f"free_local_blocks is {engine.free_local_blocks} with {count} one-block sequences in a "
                          f"{count}-block pool, expected 0")
    if (n := _list_length(engine, count)) != count:
        raise ProbeFailed(f"the active list holds {'more than ' if n > count else ''}{min(n, count)} sequences, expected {count}")
    for i in range(count):
        if impl.free_sequence(engine, spread_id(i)) != 0:
            raise ProbeFailed(f"free_sequence(engine, {spread_id(i)}) returned -1 with {count - i} sequences live, expected 0")
    _check_all_free(engine, "freeing all 5000 sequences")
    return "5000 sequences with ids spread up to INT_MAX live at once, then all freed"


def many_forks(impl: Any) -> str:
    forks = 300
    engine = _engine(impl, 4)
    block = _created(impl, engine, 0, 1).block_table[0][0]
    for i in range(1, forks + 1):
        if impl.fork_sequence(engine, 0, i) is None:
            raise ProbeFailed(f"fork_sequence(engine, 0, {i}) returned NULL with {i - 1} forks of sequence 0 live, expected a sequence")
    if engine.ref_count[block] != forks + 1:
        raise ProbeFailed(f"ref_count[{block}] is {engine.ref_count[block]} after 300 forks of the one-block sequence "
                          f"that maps it, expected {forks + 1}")
    for i in range(forks + 1):
        if impl.free_sequence(engine, i) != 0:
            raise ProbeFailed(f"free_sequence(engine, {i}) returned -1 with {forks + 1 - i} sequences sharing a block, expected 0")
    _check_all_free(engine, "freeing a sequence and its 300 forks")
    return "a one-block sequence and 300 forks share its block (ref_count 301), then all freed"


def _snapshot(engine: Any) -> tuple:
    return engine.free_local_blocks, _list_length(engine), list(engine.ref_count)


def _check_unchanged(engine: Any, before: tuple, name: str, calls: str) -> None:
    (free, sequences, counts), now = before, _snapshot(engine)
    if now[:2] != (free, sequences):
        raise ProbeFailed(f"{calls} on the other engine changed engine {name}: free_local_blocks {free} -> "
                          f"{now[0]}, active sequences {sequences} -> {now[1]}")
    for block, (was, count) in enumerate(zip(counts, now[2])):
        if was != count:
            raise ProbeFailed(f"{calls} on the other engine changed engine {name}: ref_count[{block}] {was} -> {count}")


def _expect(ok: bool, want: bool, call: str, why: str) -> None:
    if ok != want:
        raise ProbeFailed(f"{call} {'succeeded' if ok else 'failed'}, expected {'success' if want else 'NULL / -1'}: {why}")


def two_engines(impl: Any) -> str:
    a, b = _engine(impl, 10), _engine(impl, 6)
    _expect(impl.create_sequence(a, 1, 20) is not None, True, "create_sequence(a, 1, 20)", "a is the first of two live engines")
    _expect(impl.create_sequence(b, 1, 5) is not None, True, "create_sequence(b, 1, 5)", "sequence 1 exists only in the other engine, a")
    _expect(impl.create_sequence(b, 2, 5) is not None, True, "create_sequence(b, 2, 5)", "1 sequence is live in b")
    before = _snapshot(b)
    _expect(impl.append_kv(a, 1, 7) == 0, True, "append_kv(a, 1, 7)", "sequence 1 lives in a, with room in its block")
    _expect(impl.free_sequence(a, 1) == 0, True, "free_sequence(a, 1)", "sequence 1 lives in a")
    _expect(impl.create_sequence(a, 3, 5) is not None, True, "create_sequence(a, 3, 5)", "a has free blocks and no sequence 3")
    _expect(impl.free_sequence(a, 2) == 0, False, "free_sequence(a, 2)", "sequence 2 lives in engine b, not a")
    _expect(impl.append_kv(a, 2, 8) == 0, False, "append_kv(a, 2, 8)", "sequence 2 lives in engine b, not a")
    _check_unchanged(b, before, "b", "append_kv, free_sequence and create_sequence")
    before = _snapshot(a)
    _expect(impl.append_kv(b, 2, 9) == 0, True, "append_kv(b, 2, 9)", "sequence 2 lives in b, with room in its block")
    _expect(impl.free_sequence(b, 1) == 0, True, "free_sequence(b, 1)", "sequence 1 lives in b")
    _expect(impl.free_sequence(b, 3) == 0, False, "free_sequence(b, 3)", "sequence 3 lives in engine a, not b")
    _check_unchanged(a, before, "a", "append_kv and free_sequence")
    return "two live engines with the same sequence ids kept their sequences, blocks and counts apart"


def _pool(size: int) -> bytearray:
    """A pool whose every byte is non-zero, so a zeroing write shows."""
    return bytearray((bytes(range(1, 256)) * (size // 255 + 1))[:size])


def init_untouched(impl: Any) -> str:
    for size in (0, BLOCK_SIZE - 1, BLOCK_SIZE, BLOCK_SIZE + 1, 100, 3 * BLOCK_SIZE - 1, 6400, 64 << 20):
        pool = _pool(size)
        engine = impl.llm_init(memoryview(pool), size)
        if pool != _pool(size):
            raise ProbeFailed(f"llm_init(pool, {size}) wrote into the pool")
        if size < BLOCK_SIZE:
            if engine is not None:
                raise ProbeFailed(f"llm_init(pool, {size}) returned an engine, expected NULL: the pool is smaller than a block")
            continue
        if engine is None:
            raise ProbeFailed(f"llm_init(pool, {size}) returned NULL")
        total = size // BLOCK_SIZE
        if engine.total_local_blocks != total:
            raise ProbeFailed(f"llm_init(pool, {size}): total_local_blocks is {engine.total_local_blocks}, expected {total}")
        if engine.free_local_blocks != total:
            raise ProbeFailed(f"llm_init(pool, {size}): free_local_blocks is {engine.free_local_blocks}, expected {total}")
        _check_all_free(engine, "llm_init")
        if engine.active_seqs.next is not engine.active_seqs or engine.active_seqs.prev is not engine.active_seqs:
            raise ProbeFailed(f"llm_init(pool, {size}): the empty active_seqs head must point to itself both ways")
    if impl.llm_init(None, 6400) is not None:
        raise ProbeFailed("llm_init(NULL, 6400) returned an engine, expected NULL")
    return "llm_init of 0 bytes to 64 MiB writes nothing, counts whole blocks, starts empty; a NULL pool is refused"


def destroy_keeps_pool(impl: Any) -> str:
    pool = _pool(10 * BLOCK_SIZE)
    engine = impl.llm_init(memoryview(pool), len(pool))
    if engine is None:
        raise ProbeFailed(f"llm_init(pool, {len(pool)}) returned NULL")
    if (impl.create_sequence(engine, 1, 20) is None or impl.fork_sequence(engine, 1, 2) is None
            or impl.append_kv(engine, 2, 7) != 0 or impl.append_kv(engine, 1, 8) != 0
            or impl.create_sequence(engine, 3, 16) is None):
        raise ProbeFailed("a create, fork or append failed on a pool with room for it")
    before = bytes(pool)
    if impl.llm_destroy(engine) != 0:
        raise ProbeFailed("llm_destroy(engine) did not return 0")
    if pool != before:
        at = next(i for i, (a, b) in enumerate(zip(pool, before)) if a != b)
        raise ProbeFailed(f"llm_destroy wrote into the pool (byte {at}) or freed it")
    return "llm_destroy with three live sequences left the caller's pool allocated and unchanged"


PY_PROBES: dict[str, Callable[[Any], str]] = {
    "init_untouched": init_untouched,
    "destroy_keeps_pool": destroy_keeps_pool,
    "l1_gap_free": l1_gap_free,
    "l1_gap_fork": l1_gap_fork,
    "l2_hole_free": l2_hole_free,
    "l2_hole_fork": l2_hole_fork,
    "many_sequences": many_sequences,
    "many_forks": many_forks,
    "two_engines": two_engines,
}


def run_python_probes(impl: Any, only: Sequence[str] = tuple(PROBES)) -> list[ProbeResult]:
    """Each probe of PROBES (or of `only`) on a Python implementation (a module or object with the six calls)."""
    results = []
    for name, rule in ((name, PROBES[name]) for name in only):
        if name in C_ONLY:
            results.append(ProbeResult(name, rule, True, "not applicable to a Python implementation"))
            continue
        try:
            results.append(ProbeResult(name, rule, True, PY_PROBES[name](impl)))
        except NotChecked as why:
            results.append(ProbeResult(name, rule, True, f"not checked: {why} (another item's bug)"))
        except ProbeFailed as failure:
            results.append(ProbeResult(name, rule, False, str(failure)))
        except Exception as exc:  # the implementation's bug, or a field the contract names is missing
            results.append(ProbeResult(name, rule, False, f"raised {type(exc).__name__}: {exc}"))
    return results
