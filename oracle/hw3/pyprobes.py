"""The white-box probes of c/probes.c for a Python implementation, with the same names and messages.

A probe edits the implementation's live objects (a sequence's block_table) or drives it outside what one
adapter does (two engines at once). The implementation runs in its child process (pyremote.py): the probe
does its edits there through the adapter's calls and judges here what the child observed, with the field
names the Python contract shares with the C structs. big_pool, about int overflow in a C address, has no
Python counterpart and passes.
"""

import functools
import hashlib
from contextlib import closing
from typing import Callable, Sequence

from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.probes import PROBES, ProbeResult
from oracle.hw3.pyremote import Counts, Handle, RemotePythonAdapter, SequenceView
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, L2_PT_SIZE, UNMAPPED

C_ONLY = {"big_pool"}

Remote = RemotePythonAdapter


class ProbeFailed(Exception):
    """What differs, in the words of the C probe."""


class NotChecked(Exception):
    """The probe's set-up met another item's bug: the probe passes, that item fails."""


def _engine(r: Remote, blocks: int) -> Handle:
    engine = r.init_pool(blocks * BLOCK_SIZE, b"\0")
    if engine is None:
        raise NotChecked(f"llm_init(pool, {blocks * BLOCK_SIZE}) returned NULL (item llm_init)")
    return engine


def _created(r: Remote, engine: Handle, seq_id: int, records: int) -> Handle:
    """create_sequence on an engine with nothing mapped, checked (up to block ids) before a probe edits it."""
    used, free_before = -(-records // KV_PER_BLOCK), r.counts(engine).free
    seq = r.call("create_sequence", engine, seq_id, records)
    call = f"create_sequence(engine, {seq_id}, {records})"
    if seq is None:
        raise NotChecked(f"{call} returned NULL with {free_before} free blocks")
    counts, view = r.counts(engine), r.sequence(seq)
    if counts.free != free_before - used:
        raise NotChecked(f"free_local_blocks is {counts.free} after {call}, expected {free_before - used}")
    entries = [(l1, j, block) for l1, l2 in enumerate(view.block_table) for j, block in enumerate(l2 or ())]
    for l1, l2 in enumerate(view.block_table):
        if (l2 is not None) != (l1 * L2_PT_SIZE < used):
            raise NotChecked(f"block_table[{l1}] is {'NULL' if l2 is None else 'an L2 table'} after {call}")
    for l1, j, block in entries:
        mapped = l1 * L2_PT_SIZE + j < used
        if not (0 <= block < counts.total and counts.ref_count[block] == 1) if mapped else block != UNMAPPED:
            raise NotChecked(f"block_table[{l1}][{j}] is {block} after {call}")
    if len(_mapped(view)) != used:
        raise NotChecked(f"{call} maps {len(_mapped(view))} distinct blocks, expected {used}")
    return seq


def _mapped(seq: SequenceView) -> set[int]:
    return {block for l2 in seq.block_table if l2 is not None for block in l2 if block != UNMAPPED}


def _check_all_free(counts: Counts, after: str) -> None:
    if any(counts.ref_count):
        block, count = next((block, count) for block, count in enumerate(counts.ref_count) if count)
        raise ProbeFailed(f"ref_count[{block}] is {count} after {after}, expected 0")
    if counts.free != counts.total:  # every ref_count is 0: Constraint 5's bug
        raise NotChecked(f"free_local_blocks is {counts.free} after {after}, expected {counts.total} (item free_count)")


def _check_released(counts: Counts, kept: set[int], after: str, why: str) -> None:
    held = {block for block, count in enumerate(counts.ref_count) if count}
    if held and held == kept:
        raise ProbeFailed(f"after {after}, the blocks past the gap still have ref_count 1, expected 0 ({why})")
    _check_all_free(counts, after)


def _check_forked(r: Remote, engine: Handle, parent_seq: Handle, child_seq: Handle | None, edit: str, why: str) -> None:
    parent = r.sequence(parent_seq)
    child = None if child_seq is None else r.sequence(child_seq)
    if child is None or len(child.block_table) != len(parent.block_table):
        got = "NULL" if child is None else f"a child with {len(child.block_table)} L1 slots"
        raise ProbeFailed(f"fork_sequence(engine, 1, 2) returned {got} for a parent whose {edit}")
    if child.kv_count != parent.kv_count:  # the fork item's directed scenario judges kv_count
        raise NotChecked(f"fork_sequence(engine, 1, 2): the child's kv_count is {child.kv_count}, expected the "
                         f"parent's {parent.kv_count} (item fork)")
    ref_count = r.counts(engine).ref_count
    first = parent.block_table[0][0] if parent.block_table and parent.block_table[0] else UNMAPPED
    if 0 <= first < len(ref_count) and ref_count[first] != 2:  # before any gap: the fork item's
        raise NotChecked(f"ref_count[{first}] is {ref_count[first]} after fork_sequence(engine, 1, 2), expected 2, for "
                         f"the block of the parent's block_table[0][0], before any gap (item fork)")
    for l1, (source, copy) in enumerate(zip(parent.block_table, child.block_table)):
        if source is None:
            if copy is not None:
                raise ProbeFailed(f"fork_sequence(engine, 1, 2) of a parent whose L1 slot {l1} is NULL: the child's "
                                  f"block_table[{l1}] is an L2 table, expected NULL")
            continue
        if copy is None:
            raise ProbeFailed(f"fork_sequence(engine, 1, 2) of a parent whose {edit}: the child's block_table[{l1}] is "
                              f"NULL, expected a copy of the parent's ({why})")
        if child.l2_ids[l1] == parent.l2_ids[l1]:
            raise ProbeFailed(f"fork_sequence(engine, 1, 2): the child's block_table[{l1}] is the parent's L2 table, expected its own copy")
        for j, (want, have) in enumerate(zip(source, copy)):
            if have != want:
                raise ProbeFailed(f"fork_sequence(engine, 1, 2) of a parent whose {edit}: the child's "
                                  f"block_table[{l1}][{j}] is {have}, expected the parent's {want} ({why})")
            if want != UNMAPPED and ref_count[want] != 2:
                raise ProbeFailed(f"ref_count[{want}] is {ref_count[want]} after fork_sequence(engine, 1, 2), "
                                  f"expected 2: the block is in the parent's block_table[{l1}][{j}], and the parent's "
                                  f"{edit} ({why})")


GAP = "L1 slot 1 is NULL and slots 0, 2 and 3 are in use"
HOLE = "block_table[0] maps entries 0, 2 and 5 (entry 1 is -1)"
STOP_L1 = "the loop must not stop at a NULL slot"
STOP_L2 = "the loop over an L2 table must not stop at an unmapped entry"


def l1_gap_free(r: Remote) -> str:
    engine = _engine(r, 40)
    seq = _created(r, engine, 1, (2 * L2_PT_SIZE + 1) * KV_PER_BLOCK)
    view = r.sequence(seq)
    kept = _mapped(view) - set(view.block_table[0] or ())
    r.move_l2(seq, 1, 3)
    if r.call("free_sequence", engine, 1) != 0:
        raise ProbeFailed("free_sequence(engine, 1) did not return 0 for a sequence with L1 slots 0, 2 and 3 in use")
    counts = r.counts(engine)
    _check_released(counts, kept, f"freeing a sequence whose {GAP}", STOP_L1)
    if not counts.empty:
        raise ProbeFailed("the active list is not empty after freeing its only sequence")
    return "freed a 33-block sequence with L1 slots 0, 2 and 3 in use: every block released"


def l1_gap_fork(r: Remote) -> str:
    engine = _engine(r, 40)
    parent = _created(r, engine, 1, (2 * L2_PT_SIZE + 1) * KV_PER_BLOCK)
    r.move_l2(parent, 1, 3)
    _check_forked(r, engine, parent, r.call("fork_sequence", engine, 1, 2), GAP, STOP_L1)
    if (free := r.counts(engine).free) != 40 - 33:
        raise ProbeFailed(f"free_local_blocks is {free} after fork_sequence(engine, 1, 2), expected 7 (a fork takes no block)")
    return "forked a 33-block sequence with L1 slots 0, 2 and 3 in use: every L2 table copied, every block shared"


def _l2_hole(r: Remote, engine: Handle) -> Handle:
    seq = _created(r, engine, 1, 3 * KV_PER_BLOCK)
    r.move_entry(seq, 0, 1, 5)
    return seq


def l2_hole_free(r: Remote) -> str:
    engine = _engine(r, 8)
    seq = _l2_hole(r, engine)
    view = r.sequence(seq)
    kept = _mapped(view) - {(view.block_table[0] or (UNMAPPED,))[0]}
    if r.call("free_sequence", engine, 1) != 0:
        raise ProbeFailed("free_sequence(engine, 1) did not return 0 for a sequence whose block_table[0] maps entries 0, 2 and 5")
    _check_released(r.counts(engine), kept, f"freeing a sequence whose {HOLE}", STOP_L2)
    return "freed a sequence whose block_table[0] maps entries 0, 2 and 5: every block released"


def l2_hole_fork(r: Remote) -> str:
    engine = _engine(r, 8)
    parent = _l2_hole(r, engine)
    _check_forked(r, engine, parent, r.call("fork_sequence", engine, 1, 2), HOLE, STOP_L2)
    return "forked a sequence whose block_table[0] maps entries 0, 2 and 5: every entry copied, every block shared"


def spread_id(i: int) -> int:
    """probes.c's spread_id: distinct non-negative int32 ids whose low 16 bits collide."""
    return ((i * 40503) & 0x7FFF) << 16 | i >> 8


def many_sequences(r: Remote) -> str:
    count = 5000
    engine = _engine(r, count)
    if (total := r.counts(engine).total) != count:
        raise NotChecked(f"llm_init counted {total} blocks in a {count}-block pool")
    created = r.calls("create_sequence", engine, [(spread_id(i), 1) for i in range(count)], stop="null")
    if created[-1] is None:
        i = len(created) - 1
        raise ProbeFailed(f"create_sequence(engine, {spread_id(i)}, 1) returned NULL with {i} sequences live and "
                              f"{r.counts(engine).free} free blocks, expected a sequence: no live sequence has that "
                              "id, and the spec limits sequences only by the pool")
    counts = r.counts(engine, count)
    if counts.free != 0:
        raise ProbeFailed(f"free_local_blocks is {counts.free} with {count} one-block sequences in a "
                          f"{count}-block pool, expected 0")
    if (n := counts.length) != count:
        raise ProbeFailed(f"the active list holds {'more than ' if n > count else ''}{min(n, count)} sequences, expected {count}")
    freed = r.calls("free_sequence", engine, [(spread_id(i),) for i in range(count)], stop="nonzero")
    if freed[-1] != 0:
        i = len(freed) - 1
        raise ProbeFailed(f"free_sequence(engine, {spread_id(i)}) returned -1 with {count - i} sequences live, expected 0")
    _check_all_free(r.counts(engine), "freeing all 5000 sequences")
    return "5000 sequences with ids spread up to INT_MAX live at once, then all freed"


def many_forks(r: Remote) -> str:
    forks = 300
    engine = _engine(r, 4)
    block = (r.sequence(_created(r, engine, 0, 1)).block_table[0] or (UNMAPPED,))[0]
    forked = r.calls("fork_sequence", engine, [(0, i) for i in range(1, forks + 1)], stop="null")
    if forked[-1] is None:
        i = len(forked)
        raise ProbeFailed(f"fork_sequence(engine, 0, {i}) returned NULL with {i - 1} forks of sequence 0 live, expected a sequence")
    if (shared := r.counts(engine).ref_count[block]) != forks + 1:
        raise ProbeFailed(f"ref_count[{block}] is {shared} after 300 forks of the one-block sequence "
                          f"that maps it, expected {forks + 1}")
    freed = r.calls("free_sequence", engine, [(i,) for i in range(forks + 1)], stop="nonzero")
    if freed[-1] != 0:
        i = len(freed) - 1
        raise ProbeFailed(f"free_sequence(engine, {i}) returned -1 with {forks + 1 - i} sequences sharing a block, expected 0")
    _check_all_free(r.counts(engine), "freeing a sequence and its 300 forks")
    return "a one-block sequence and 300 forks share its block (ref_count 301), then all freed"


def _snapshot(r: Remote, engine: Handle) -> tuple:
    counts = r.counts(engine, 10_000)
    return counts.free, counts.length, list(counts.ref_count)


def _check_unchanged(r: Remote, engine: Handle, before: tuple, name: str, calls: str) -> None:
    (free, sequences, counts), now = before, _snapshot(r, engine)
    if now[:2] != (free, sequences):
        raise ProbeFailed(f"{calls} on the other engine changed engine {name}: free_local_blocks {free} -> "
                          f"{now[0]}, active sequences {sequences} -> {now[1]}")
    for block, (was, count) in enumerate(zip(counts, now[2])):
        if was != count:
            raise ProbeFailed(f"{calls} on the other engine changed engine {name}: ref_count[{block}] {was} -> {count}")


def _expect(ok: bool, want: bool, call: str, why: str) -> None:
    if ok != want:
        raise ProbeFailed(f"{call} {'succeeded' if ok else 'failed'}, expected {'success' if want else 'NULL / -1'}: {why}")


def two_engines(r: Remote) -> str:
    a, b = _engine(r, 10), _engine(r, 6)
    _expect(r.call("create_sequence", a, 1, 20) is not None, True, "create_sequence(a, 1, 20)", "a is the first of two live engines")
    _expect(r.call("create_sequence", b, 1, 5) is not None, True, "create_sequence(b, 1, 5)", "sequence 1 exists only in the other engine, a")
    _expect(r.call("create_sequence", b, 2, 5) is not None, True, "create_sequence(b, 2, 5)", "1 sequence is live in b")
    before = _snapshot(r, b)
    _expect(r.call("append_kv", a, 1, 7) == 0, True, "append_kv(a, 1, 7)", "sequence 1 lives in a, with room in its block")
    _expect(r.call("free_sequence", a, 1) == 0, True, "free_sequence(a, 1)", "sequence 1 lives in a")
    _expect(r.call("create_sequence", a, 3, 5) is not None, True, "create_sequence(a, 3, 5)", "a has free blocks and no sequence 3")
    _expect(r.call("free_sequence", a, 2) == 0, False, "free_sequence(a, 2)", "sequence 2 lives in engine b, not a")
    _expect(r.call("append_kv", a, 2, 8) == 0, False, "append_kv(a, 2, 8)", "sequence 2 lives in engine b, not a")
    _check_unchanged(r, b, before, "b", "append_kv, free_sequence and create_sequence")
    before = _snapshot(r, a)
    _expect(r.call("append_kv", b, 2, 9) == 0, True, "append_kv(b, 2, 9)", "sequence 2 lives in b, with room in its block")
    _expect(r.call("free_sequence", b, 1) == 0, True, "free_sequence(b, 1)", "sequence 1 lives in b")
    _expect(r.call("free_sequence", b, 3) == 0, False, "free_sequence(b, 3)", "sequence 3 lives in engine a, not b")
    _check_unchanged(r, a, before, "a", "append_kv and free_sequence")
    return "two live engines with the same sequence ids kept their sequences, blocks and counts apart"


PATTERN = bytes(range(1, 256))  # every byte non-zero, so a zeroing write shows


@functools.cache
def _pool_sha256(size: int) -> str:
    """The digest of the pool a probe gives llm_init: PATTERN repeated."""
    return hashlib.sha256((PATTERN * (size // len(PATTERN) + 1))[:size]).hexdigest()


def init_untouched(r: Remote) -> str:
    for size in (0, BLOCK_SIZE - 1, BLOCK_SIZE, BLOCK_SIZE + 1, 100, 3 * BLOCK_SIZE - 1, 6400, 64 << 20):
        engine = r.init_pool(size, PATTERN)
        if r.pool().sha256 != _pool_sha256(size):
            raise ProbeFailed(f"llm_init(pool, {size}) wrote into the pool")
        if size < BLOCK_SIZE:
            if engine is not None:
                raise ProbeFailed(f"llm_init(pool, {size}) returned an engine, expected NULL: the pool is smaller than a block")
            continue
        if engine is None:
            raise ProbeFailed(f"llm_init(pool, {size}) returned NULL")
        counts, total = r.counts(engine), size // BLOCK_SIZE
        if counts.total != total:
            raise ProbeFailed(f"llm_init(pool, {size}): total_local_blocks is {counts.total}, expected {total}")
        if counts.free != total:
            raise ProbeFailed(f"llm_init(pool, {size}): free_local_blocks is {counts.free}, expected {total}")
        _check_all_free(counts, "llm_init")
        if not counts.empty:
            raise ProbeFailed(f"llm_init(pool, {size}): the empty active_seqs head must point to itself both ways")
    if r.init_pool(6400, None) is not None:
        raise ProbeFailed("llm_init(NULL, 6400) returned an engine, expected NULL")
    return "llm_init of 0 bytes to 64 MiB writes nothing, counts whole blocks, starts empty; a NULL pool is refused"


def destroy_keeps_pool(r: Remote) -> str:
    size = 10 * BLOCK_SIZE
    engine = r.init_pool(size, PATTERN)
    if engine is None:
        raise NotChecked(f"llm_init(pool, {size}) returned NULL (item llm_init)")
    if (r.call("create_sequence", engine, 1, 20) is None or r.call("fork_sequence", engine, 1, 2) is None
            or r.call("append_kv", engine, 2, 7) != 0 or r.call("append_kv", engine, 1, 8) != 0
            or r.call("create_sequence", engine, 3, 16) is None):
        raise NotChecked("a create, fork or append failed on a pool with room for it")
    before = r.pool().data
    if r.call("llm_destroy", engine) != 0:
        raise ProbeFailed("llm_destroy(engine) did not return 0")
    after = r.pool().data
    if after != before:
        at = next(i for i, (x, y) in enumerate(zip(after or b"", before or b"")) if x != y)
        raise ProbeFailed(f"llm_destroy wrote into the pool (byte {at}) or freed it")
    return "llm_destroy with three live sequences left the caller's pool allocated and unchanged"


PY_PROBES: dict[str, Callable[[Remote], str]] = {
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


def run_python_probes(adapter: Callable[[], Remote], only: Sequence[str] = tuple(PROBES)) -> list[ProbeResult]:
    """Each probe of PROBES (or of `only`) on a Python implementation in its child process, each on a fresh
    adapter from `adapter` (a RemotePython)."""
    results = []
    for name, rule in ((name, PROBES[name]) for name in only):
        if name in C_ONLY:
            results.append(ProbeResult(name, rule, True, "not applicable to a Python implementation"))
            continue
        try:
            with closing(adapter()) as remote:
                results.append(ProbeResult(name, rule, True, PY_PROBES[name](remote)))
        except NotChecked as why:
            results.append(ProbeResult(name, rule, True, f"not checked: {why} (another item's bug)"))
        except (ProbeFailed, ImplementationFailure) as failure:
            results.append(ProbeResult(name, rule, False, str(failure)))
        except Exception as exc:  # what the child observed has a shape no probe step expects (a short ref_count)
            results.append(ProbeResult(name, rule, False, f"raised {type(exc).__name__}: {exc}"))
    return results
