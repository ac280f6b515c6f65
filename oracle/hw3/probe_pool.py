"""The probes of the caller-owned pool (the llm_init, llm_destroy and big_pool items): llm_init reads its size
and writes nothing into it, llm_destroy neither frees nor writes it, and block addresses past 2 GiB are right."""

import functools
import hashlib
from typing import Any, cast

from oracle.hw3.pool import GUARD
from oracle.hw3.probe_checks import NotChecked, ProbeFailed, check_all_free
from oracle.hw3.probe_target import LargePoolTarget, PoolView, ProbeTarget, first_difference
from oracle.hw3.spec import BLOCK_SIZE, KV_SIZE

PATTERN = bytes(range(1, 256))  # every byte non-zero, so a zeroing write shows
INIT_SIZES = (0, BLOCK_SIZE - 1, BLOCK_SIZE, BLOCK_SIZE + 1, 100, 3 * BLOCK_SIZE - 1, 6400, 64 << 20)


def _filled(size: int) -> bytes:
    """The pool a probe gives llm_init: PATTERN repeated."""
    return (PATTERN * (size // len(PATTERN) + 1))[:size]


@functools.cache
def _filled_sha256(size: int) -> str:
    """The digest of _filled(size), a MiB at a time (the chunks are whole PATTERNs, so they continue it)."""
    digest, chunk = hashlib.sha256(), PATTERN * 4096
    for start in range(0, size, len(chunk)):
        digest.update(chunk[: size - start])
    return digest.hexdigest()


def _check_untouched(view: PoolView, size: int) -> None:
    """The guard zones either side (C) are unchanged, and so is the pool: a write into the pool is the
    no_premature_writes item's bug (Constraint 4: only append_kv writes the pool)."""
    for where, guard in (("before", view.guard_before), ("after", view.guard_after)):
        if guard and (at := first_difference(guard, GUARD)) is not None:
            raise ProbeFailed(f"llm_init(pool, {size}) wrote into the guard zone {where} the pool (byte {at})")
    at = first_difference(view.data, _filled(size)) if view.data is not None else None
    if view.data is not None and at is not None:
        raise NotChecked(f"llm_init(pool, {size}) wrote into the pool (byte {at}) (item no_premature_writes)", "no_premature_writes")
    if view.data is None and view.sha256 != _filled_sha256(size):
        raise NotChecked(f"llm_init(pool, {size}) wrote into the pool (item no_premature_writes)", "no_premature_writes")


def init_untouched(r: ProbeTarget) -> str:
    """llm_init reads the pool's size and writes nothing into it; its engine starts empty. The sizes run from
    nothing to 64 MiB (a pool of 2^20 blocks: a guard against overflow must not refuse it)."""
    for size in INIT_SIZES:
        on = r.init_pool(size, PATTERN)
        _check_untouched(r.pool(), size)
        if size < BLOCK_SIZE:
            if on is not None:
                raise ProbeFailed(f"llm_init(pool, {size}) returned an engine, expected NULL: the pool is smaller than a block")
            continue
        if on is None:
            raise ProbeFailed(f"llm_init(pool, {size}) returned NULL")
        counts, total = r.counts(on), size // BLOCK_SIZE
        if counts.pool_base_ok is False:
            raise ProbeFailed(f"llm_init(pool, {size}): pool_base_ptr is not the pool it was given")
        if counts.total != total:
            raise ProbeFailed(f"llm_init(pool, {size}): total_local_blocks is {counts.total}, expected {total}")
        if counts.free != total:
            raise ProbeFailed(f"llm_init(pool, {size}): free_local_blocks is {counts.free}, expected {total}")
        check_all_free(counts, "llm_init")
        if not counts.empty:
            raise ProbeFailed(f"llm_init(pool, {size}): the empty active_seqs head must point to itself both ways")
    if r.init_pool(6400, None) is not None:
        raise ProbeFailed("llm_init(NULL, 6400) returned an engine, expected NULL")
    return "llm_init of 0 bytes to 64 MiB writes nothing, counts whole blocks, starts empty; a NULL pool is refused"


def destroy_keeps_pool(r: ProbeTarget) -> str:
    """llm_destroy must neither free nor write the pool: the caller (here the grader) owns it."""
    size = 10 * BLOCK_SIZE
    on = r.init_pool(size, PATTERN)
    if on is None:
        raise NotChecked(f"llm_init(pool, {size}) returned NULL (item llm_init)", "llm_init")
    if (r.call("create_sequence", on, 1, 20) is None or r.call("fork_sequence", on, 1, 2) is None
            or r.call("append_kv", on, 2, 7) != 0 or r.call("append_kv", on, 1, 8) != 0
            or r.call("create_sequence", on, 3, 16) is None):
        raise NotChecked("a create, fork or append failed on a pool with room for it")
    before = r.pool()
    if r.call("llm_destroy", on) != 0:
        raise ProbeFailed("llm_destroy(engine) did not return 0")
    after = r.pool()
    if after.freed:
        raise ProbeFailed("llm_destroy freed pool_base_ptr, which the caller owns")
    if (after.data, after.sha256) != (before.data, before.sha256):  # not freed, but written: Constraint 4's
        at = first_difference(after.data or b"", before.data or b"")
        raise NotChecked(f"llm_destroy wrote into the pool{'' if at is None else f' (byte {at})'}, which only append_kv "
                         "may write (item no_premature_writes)", "no_premature_writes")
    return "llm_destroy with three live sequences left the caller's pool allocated and unchanged"


FAR = 1 << 25  # block 2^25 starts 2 GiB into the pool


def big_pool(target: ProbeTarget) -> str:
    """Block 2^25's address must be computed in size_t ((char *)pool + (size_t)block * BLOCK_SIZE); in int,
    block * BLOCK_SIZE overflows. The pool is reserved address space, never touched but where the probe
    looks; ref_count marks the blocks below 2^25 as taken (white-box), so a create and a copy-on-write must
    use blocks past 2^25. Which ones is first fit's business."""
    r = cast(LargePoolTarget, target)
    blocks = FAR + 3
    on = r.reserve_pool(blocks * BLOCK_SIZE)  # raises Unavailable when there is no address space for it
    if on is None or r.counts(on).total != blocks:
        raise NotChecked("llm_init did not take the 2 GiB pool whole (item llm_init)", "llm_init")
    if (stray := next((b for b in range(FAR, blocks) if r.ref_count(on, b)), None)) is not None:
        raise NotChecked(f"ref_count[{stray}] is {r.ref_count(on, stray)} after llm_init, expected 0 (item llm_init)", "llm_init")
    r.hold_blocks(on, FAR, 3)

    def record(block: int, slot: int) -> int:
        return r.pool_int(block * BLOCK_SIZE + slot * KV_SIZE)

    seq = r.call("create_sequence", on, 1, 1)
    first = _first_block(r, seq)
    if not FAR <= first < blocks:
        raise ProbeFailed("create_sequence(engine, 1, 1) with only blocks 2^25 to 2^25 + 2 free did not map one of them")
    if r.call("append_kv", on, 1, 0x5EED) != 0:
        raise ProbeFailed("append_kv(engine, 1, 0x5EED) on a 2 GiB pool did not return 0")
    if record(first, 1) != 0x5EED:
        raise ProbeFailed(f"append_kv(engine, 1, 0x5EED) did not write record 1 of block {first}, 2 GiB and more into "
                          "the pool (compute the block's address in size_t, not int)")
    child = r.call("fork_sequence", on, 1, 2)
    if child is not None:
        kv_count, shared = r.sequence(child).kv_count, r.ref_count(on, first)
        if (kv_count, shared) != (2, 2):  # the fork item's bug: what came before the fork was checked
            return (f"only partly checked: the write past 2^25 is right; the copy-on-write was not checked: "
                    f"fork_sequence(engine, 1, 2) gave the child kv_count {kv_count} and ref_count[{first}] {shared}, "
                    "expected 2 and 2 (another item's bug)")
    if child is None or r.call("append_kv", on, 2, 0xC0DE) != 0:
        raise ProbeFailed("fork_sequence(engine, 1, 2) or append_kv(engine, 2, 0xC0DE) on a 2 GiB pool failed, with "
                          "free blocks left")
    copy = _first_block(r, child)
    if copy == first:  # no copy at all: the append_cow item's bug; the write past 2^25 was checked
        return ("only partly checked: the write past 2^25 is right; append_kv(engine, 2, 0xC0DE) after the fork wrote "
                f"into the shared block {first} instead of a copy (another item's bug: append_cow)")
    if not FAR <= copy < blocks:
        raise ProbeFailed(f"append_kv(engine, 2, 0xC0DE) after the fork: the child maps block {copy}, expected a copy of block {first}")
    if record(copy, 1) != 0x5EED or record(copy, 2) != 0xC0DE:
        raise ProbeFailed(f"the copy-on-write from block {first} to block {copy} did not copy record 1 and write 0xC0DE "
                          "as record 2 (compute the blocks' addresses in size_t, not int)")
    return "blocks past 2^25 of a 2 GiB pool written and copied at the right addresses"


def _first_block(r: LargePoolTarget, seq: Any) -> int:
    """block_table[0][0] of a sequence; -1 when it is NULL or has no L2 table there."""
    table = () if seq is None else r.sequence(seq).block_table
    return table[0][0] if table and table[0] is not None else -1

