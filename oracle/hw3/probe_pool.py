"""The probes of the caller-owned pool (the llm_init, llm_destroy and big_pool items): llm_init reads its size
and writes nothing into it, llm_destroy neither frees nor writes it, and block addresses past 2 GiB are right."""

import functools
import hashlib
from typing import Any, cast

from oracle.hw3.pool import GUARD
from oracle.hw3.probe_checks import (
    CheckedPast, NotChecked, ProbeFailed, check_all_free, checked_past, expect, no_shared_table, no_wild_slot,
)
from oracle.hw3.probe_target import LargePoolTarget, PoolView, ProbeTarget, first_difference
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, KV_SIZE, L2_PT_SIZE

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
    made_by: dict[str, Any] = {}  # the sequences create and fork made, by the call that made them
    for api, args, owner in (("create_sequence", (1, 20), "create_free"), ("fork_sequence", (1, 2), "fork"),
                             ("append_kv", (2, 7), "append_cow"), ("append_kv", (1, 8), "append_cow"),
                             ("create_sequence", (3, 16), "create_free")):
        call = f"{api}(engine, {', '.join(map(str, args))})"
        made = r.call(api, on, *args)
        expect(made, True, call, "the pool has room for it", owner)
        if api != "append_kv":  # llm_destroy reads and frees every L2 table of what create and fork made
            no_wild_slot(r.sequence(made), call, owner)
            made_by[call] = made
    no_shared_table({call: r.sequence(made) for call, made in made_by.items()}, "fork")
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
    use blocks past 2^25. The probe's own fact is that each record lands in the block the sequence maps for
    it, at the slot its own kv_count gives: which block first fit picks, kv_count, whether an append copies,
    the offset within a block and what fork shares are other items' (checked as the probe goes, cheaply:
    single ref_count entries, never the whole 2^25 array)."""
    r = cast(LargePoolTarget, target)
    blocks = FAR + 3
    far = range(FAR, blocks)
    on = _far_pool(r, blocks)
    r.hold_blocks(on, FAR, 3)
    others: list[CheckedPast] = []
    notes: list[str] = []  # what the probe did around a design it cannot steer through ref_count
    seq = r.call("create_sequence", on, 1, 1)
    if seq is None:
        raise NotChecked("create_sequence(engine, 1, 1) returned NULL with blocks 2^25 to 2^25 + 2 free")
    if (first := _block_of(r, seq, 0)) == -1 and r.sequence(seq).block_table[0] is None:
        # no L2 table, so no block, for its record: a hole, which the append fills (the spec's unmapped block)
        others.append(CheckedPast("create_sequence(engine, 1, 1) mapped no block for its record: block_table[0] is NULL "
                                  "(item create_free)", "create_free"))
    elif first == -1:  # its search found none of them: first fit's bug; the probe maps one itself
        others.append(CheckedPast("create_sequence(engine, 1, 1) with only blocks 2^25 to 2^25 + 2 free mapped no block "
                                  "(item first_fit); the probe mapped block 2^25 itself", "first_fit"))
        first = _far_block(r, on, seq, blocks)
    elif first not in far:  # it keeps its own record of free blocks, which the probe's ref_count edit did not change
        notes.append(f"create_sequence(engine, 1, 1) mapped block {first}, which the probe had marked taken in ref_count "
                     "(free blocks kept elsewhere too); the probe mapped block 2^25 itself")
        first = _far_block(r, on, seq, blocks)
    if (kv := r.sequence(seq).kv_count) != 1:  # the append then goes where this kv_count says
        others.append(CheckedPast(f"create_sequence(engine, 1, 1) left kv_count {kv}, expected 1 (item create_free)",
                                  "create_free"))
    if (returned := r.call("append_kv", on, 1, 0x5EED)) != 0:
        raise NotChecked(f"append_kv(engine, 1, 0x5EED) returned {returned}, expected 0, with free blocks left (item "
                         f"{others[0].owner if others else 'append_cow'})", others[0].owner if others else "append_cow")
    if (block := _block_of(r, seq, kv)) not in far and first != -1 and kv < KV_PER_BLOCK:
        raise NotChecked(f"append_kv(engine, 1, 0x5EED) left record {kv} in block {block}, not in block {first}, which only "
                         "this sequence maps: only a shared block is copied (item append_cow)", "append_cow")
    if block not in far:
        raise NotChecked(f"append_kv(engine, 1, 0x5EED) left record {kv} in block {block}, with only blocks 2^25 to "
                         "2^25 + 2 free (item first_fit)", "first_fit")
    if kv < KV_PER_BLOCK and first != -1 and block != first:
        others.append(CheckedPast(f"append_kv(engine, 1, 0x5EED) moved record {kv} from block {first}, which only this "
                                  f"sequence maps, to block {block}: only a shared block is copied (item append_cow)",
                                  "append_cow"))
    _check_record(r, block, kv, 0x5EED, "append_kv(engine, 1, 0x5EED)")

    if (kv_parent := r.sequence(seq).kv_count) != kv + 1:  # the child's append then goes where this says
        others.append(CheckedPast(f"append_kv(engine, 1, 0x5EED) left kv_count {kv_parent}, expected {kv + 1} (item "
                                  "append_cow)", "append_cow"))
    try:  # fork reads every L1 slot of the parent
        no_wild_slot(r.sequence(seq), "create_sequence(engine, 1, 1)", "create_free")
    except NotChecked as wild:
        raise first_of(others, str(wild), "create_free") from None
    child = r.call("fork_sequence", on, 1, 2)
    kv_child = None if child is None else r.sequence(child).kv_count
    if (kv_child, r.ref_count(on, block)) != (kv_parent, 2) or _block_of(r, seq, kv_parent) != block:
        raise first_of(others, f"the copy-on-write was not checked: fork_sequence(engine, 1, 2) gave "
                          f"{'NULL' if child is None else f'the child kv_count {kv_child}'} and ref_count[{block}] "
                          f"{r.ref_count(on, block)}, expected {kv_parent} and 2 (item fork)", "fork")
    if (returned := r.call("append_kv", on, 2, 0xC0DE)) != 0:
        raise first_of(others, f"append_kv(engine, 2, 0xC0DE) after the fork returned {returned}, expected 0, with a free block "
                          "left (item append_cow)", "append_cow")
    copy = _block_of(r, child, kv_parent)
    if copy == block:
        raise first_of(others, f"the copy-on-write was not checked: append_kv(engine, 2, 0xC0DE) after the fork wrote into the "
                          f"shared block {block} instead of a copy (item append_cow)", "append_cow")
    if copy == -1:
        raise first_of(others, "the copy-on-write was not checked: append_kv(engine, 2, 0xC0DE) after the fork mapped no block, "
                          "with blocks 2^25 + 1 and 2^25 + 2 free (item first_fit)", "first_fit")
    if copy not in far:  # its own record of free blocks again: the copy still reads block 2^25's records
        notes.append(f"the copy-on-write copied block {block} into block {copy}")
    slot = kv_parent % KV_PER_BLOCK
    for kept in range(slot):  # the records the child holds in the block it copied
        if (got := _record(r, copy, kept)) != (want := _record(r, block, kept)):
            raise ProbeFailed(f"the copy-on-write from block {block} to block {copy}: record {kept} is {got}, expected "
                              f"{want} (compute the blocks' addresses in size_t, not int)")
    if _record(r, copy, slot) != 0xC0DE and _record(r, block, slot) == 0xC0DE:  # the copy's address read right above
        raise first_of(others, f"append_kv(engine, 2, 0xC0DE) after the fork wrote record {kv_parent} into the shared block "
                       f"{block}, not into its copy, block {copy} (item append_cow)", "append_cow")
    _check_record(r, copy, kv_parent, 0xC0DE, "append_kv(engine, 2, 0xC0DE) after the fork")
    checked_past(others)
    return "blocks past 2^25 of a 2 GiB pool written and copied at the right addresses" + "".join(f"; {n}" for n in notes)


def _far_pool(r: LargePoolTarget, blocks: int) -> Any:
    """llm_init on a reserved pool of `blocks` blocks, checked to take it whole with the far blocks free."""
    on = r.reserve_pool(blocks * BLOCK_SIZE)  # raises Unavailable when there is no address space for it
    if on is None or (total := r.counts(on).total) != blocks:
        took = "returned NULL" if on is None else f"gave total_local_blocks {total}"
        witness = r.reserve_pool(INIT_SIZES[-1])  # the largest pool the llm_init item's own probe gives
        if witness is None or r.counts(witness).total != INIT_SIZES[-1] // BLOCK_SIZE:
            raise NotChecked(f"llm_init(pool, {blocks * BLOCK_SIZE}) {took}, and a 64 MiB pool is not taken whole either (item llm_init)",
                             "llm_init")
        raise ProbeFailed(f"llm_init(pool, {blocks * BLOCK_SIZE}) (2^25 + 3 blocks) {took}, expected {blocks} blocks, "
                          "though it takes a 64 MiB pool whole (compute sizes and addresses in size_t, not int)")
    if (stray := next((b for b in range(FAR, blocks) if r.ref_count(on, b)), None)) is not None:
        raise NotChecked(f"ref_count[{stray}] is {r.ref_count(on, stray)} after llm_init, expected 0 (item llm_init)", "llm_init")
    return on


def _far_block(r: LargePoolTarget, on: Any, seq: Any, blocks: int) -> int:
    """For an implementation whose search did not reach block 2^25: the probe maps it into the sequence's
    entry 0 itself, with every block up to 2^25 held (2^25 by the sequence) and the two past it free. Where that
    block's records go, and where a copy-on-write copies them, is still the size_t arithmetic this probe is
    about."""
    r.map_entry(seq, 0, FAR)
    r.hold_blocks(on, FAR + 1, blocks - FAR - 1)
    if _block_of(r, seq, 0) != FAR:
        raise NotChecked("create_sequence(engine, 1, 1) left block_table[0] NULL: no L2 table for its record (item "
                         "create_free)", "create_free")
    return FAR


def first_of(others: list[CheckedPast], reason: str, owner: str) -> CheckedPast:
    """What stops a probe past its rule: the first other item's bug it met (what follows may be its
    consequence), else this one."""
    return others[0] if others else CheckedPast(reason, owner)


def _record(r: LargePoolTarget, block: int, slot: int) -> int:
    return r.pool_int(block * BLOCK_SIZE + slot * KV_SIZE)


def _check_record(r: LargePoolTarget, block: int, kv: int, value: int, call: str) -> None:
    """`value` is record `kv` of the sequence, in `block`, which it maps for it (past 2^25). Found elsewhere in
    that block, its address was right and the offset within the block is the append_cow item's bug: the
    probe's rule holds, and nothing past it is checked."""
    slot = kv % KV_PER_BLOCK
    if _record(r, block, slot) == value:
        return
    if (at := next((b for b in range(BLOCK_SIZE - KV_SIZE + 1) if r.pool_int(block * BLOCK_SIZE + b) == value), None)) is not None:
        raise CheckedPast(f"{call} wrote {value:#x} at byte {at} of block {block}, expected byte {slot * KV_SIZE} (record "
                          f"{kv}): the block's address is right, the offset within it is wrong (item append_cow)", "append_cow")
    raise ProbeFailed(f"{call} did not write record {kv} of block {block}, 2 GiB and more into the pool (compute the block's "
                      "address in size_t, not int)")


def _block_of(r: LargePoolTarget, seq: Any, kv: int) -> int:
    """The block a sequence maps for record `kv`; -1 when none (a NULL L2 table, or past the table)."""
    logical = kv // KV_PER_BLOCK
    table = r.sequence(seq).block_table
    l2 = table[logical // L2_PT_SIZE] if logical // L2_PT_SIZE < len(table) else None
    return l2[logical % L2_PT_SIZE] if l2 is not None else -1
