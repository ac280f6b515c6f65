"""The steps the white-box probes share: setting up an engine and a sequence checked before a probe edits
it, and the judgements of what a free or a fork left. Each raises ProbeFailed with what differs, or
NotChecked when the set-up met another item's bug (that item fails; the probe passes as not checked)."""

from typing import Any

from oracle.hw3.pool import initial_pool
from oracle.hw3.probe_target import Counts, ProbeTarget, SequenceView
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, L1_PT_SIZE, L2_PT_SIZE, UNMAPPED


class ProbeFailed(Exception):
    """What differs from the probe's rule."""


class NotChecked(Exception):
    """The probe's set-up met another item's bug: the probe passes, that item (`owner`; None: some other
    item) must fail for it (oracle/grading/grader.py's Excuse)."""

    def __init__(self, reason: str, owner: str | None = None) -> None:
        super().__init__(reason)
        self.owner = owner


class Unavailable(NotChecked):
    """The probe cannot run here (no address space for its pool): not checked, and no item's bug."""


def engine(r: ProbeTarget, blocks: int) -> Any:
    """llm_init on a pool of `blocks` blocks holding the grader's magic numbers, checked to start with every
    block free (else the probe checks nothing: that is the llm_init item's bug)."""
    size = blocks * BLOCK_SIZE
    made = r.init_pool(size, initial_pool(size))
    if made is None:
        raise NotChecked(f"llm_init(pool, {size}) returned NULL (item llm_init)", "llm_init")
    counts = r.counts(made)
    held = next(((block, count) for block, count in enumerate(counts.ref_count) if count), None)
    if held is not None:
        raise NotChecked(f"ref_count[{held[0]}] is {held[1]} after llm_init(pool, {size}), expected 0 (item llm_init)", "llm_init")
    return made


def created(r: ProbeTarget, on: Any, seq_id: int, records: int) -> Any:
    """create_sequence on an engine with nothing mapped, checked before a probe edits the result: `records /
    16` rounded up distinct blocks, each with ref_count 1, mapped in order from block_table[0][0], -1 and NULL
    everywhere else. Block ids are first fit's business (the first_fit item), so any distinct ids do."""
    used, free_before = -(-records // KV_PER_BLOCK), r.counts(on).free
    seq = r.call("create_sequence", on, seq_id, records)
    call = f"create_sequence(engine, {seq_id}, {records})"
    view = None if seq is None else r.sequence(seq)
    if view is None or not view.block_table:
        got = "NULL" if view is None else "a sequence with no block table"
        raise NotChecked(f"{call} returned {got} with {free_before} free blocks (item create_free)", "create_free")
    counts = r.counts(on)
    if counts.free != free_before - used:  # the blocks it took are checked below: a count off is Constraint 5's
        raise NotChecked(f"free_local_blocks is {counts.free} after {call}, expected {free_before - used} (item free_count)",
                         "free_count")
    for l1, l2 in enumerate(view.block_table):
        if (l2 is not None) != (l1 * L2_PT_SIZE < used):
            raise NotChecked(f"block_table[{l1}] is {'NULL' if l2 is None else 'an L2 table'} after {call} (item create_free)",
                             "create_free")
        for j, block in enumerate(l2 or ()):
            if l1 * L2_PT_SIZE + j < used:
                wrong = not (0 <= block < counts.total and block < len(counts.ref_count) and counts.ref_count[block] == 1)
            else:
                wrong = block != UNMAPPED
            if wrong:
                raise NotChecked(f"block_table[{l1}][{j}] is {block} after {call} (item create_free)", "create_free")
    if len(mapped(view)) != used:
        raise NotChecked(f"{call} maps {len(mapped(view))} distinct blocks, expected {used} (item create_free)", "create_free")
    return seq


def mapped(seq: SequenceView) -> set[int]:
    """The blocks a sequence maps."""
    return {block for l2 in seq.block_table if l2 is not None for block in l2 if block != UNMAPPED}


def check_all_free(counts: Counts, after: str) -> None:
    """Every ref_count 0 after `after`; a free count that disagrees is the free_count item's bug."""
    held = next(((block, count) for block, count in enumerate(counts.ref_count) if count), None)
    if held is not None:
        raise ProbeFailed(f"ref_count[{held[0]}] is {held[1]} after {after}, expected 0")
    if counts.free != counts.total:  # every ref_count is 0: Constraint 5's bug
        raise NotChecked(f"free_local_blocks is {counts.free} after {after}, expected {counts.total} (item free_count)", "free_count")


def check_released(counts: Counts, kept: set[int], after: str, why: str) -> None:
    """After freeing a probe's only sequence: every block free. `kept` holds the blocks a loop that stopped at
    the probe's gap would keep, so that bug gets its name (`why`) and any other gets the plain difference."""
    held = {block for block, count in enumerate(counts.ref_count) if count}
    if held and held == kept:
        raise ProbeFailed(f"after {after}, the blocks past the gap still have ref_count 1, expected 0 ({why})")
    check_all_free(counts, after)


def check_forked(r: ProbeTarget, on: Any, parent_seq: Any, child_seq: Any, edit: str, why: str) -> None:
    """The child of fork_sequence(engine, 1, 2) has its own copy of each of the parent's L2 tables, entry for
    entry, NULL where the parent's slot is NULL, the parent's kv_count, and each block is shared (ref_count
    2). `edit` says what the probe did to the parent's table, `why` names the loop bug a mismatch most likely is."""
    fork = "fork_sequence(engine, 1, 2)"
    parent = r.sequence(parent_seq)
    child = None if child_seq is None else r.sequence(child_seq)
    if child is None or len(child.block_table) != L1_PT_SIZE:
        got = "NULL" if child is None else "a child with no block table" if not child.block_table else \
            f"a child with {len(child.block_table)} L1 slots"
        raise ProbeFailed(f"{fork} returned {got} for a parent whose {edit}")
    if child.kv_count != parent.kv_count:  # the fork item's directed scenario judges kv_count
        raise NotChecked(f"{fork}: the child's kv_count is {child.kv_count}, expected the parent's {parent.kv_count} (item fork)", "fork")
    ref_count = r.counts(on).ref_count
    first = parent.block_table[0][0] if parent.block_table and parent.block_table[0] else UNMAPPED
    if 0 <= first < len(ref_count) and ref_count[first] != 2:  # before any gap: the fork item's bug
        raise NotChecked(f"ref_count[{first}] is {ref_count[first]} after {fork}, expected 2, for the block of the "
                         "parent's block_table[0][0], before any gap (item fork)", "fork")
    for l1, (source, copy) in enumerate(zip(parent.block_table, child.block_table)):
        if source is None:
            if copy is not None:
                raise ProbeFailed(f"{fork} of a parent whose L1 slot {l1} is NULL: the child's block_table[{l1}] is an "
                                  "L2 table, expected NULL")
            continue
        if copy is None:
            raise ProbeFailed(f"{fork} of a parent whose {edit}: the child's block_table[{l1}] is NULL, expected a copy "
                              f"of the parent's ({why})")
        if child.l2_ids[l1] == parent.l2_ids[l1]:
            raise ProbeFailed(f"{fork}: the child's block_table[{l1}] is the parent's L2 table, expected its own copy")
        for j, (want, have) in enumerate(zip(source, copy)):
            if have != want:
                raise ProbeFailed(f"{fork} of a parent whose {edit}: the child's block_table[{l1}][{j}] is {have}, "
                                  f"expected the parent's {want} ({why})")
            if want != UNMAPPED and ref_count[want] != 2:
                raise ProbeFailed(f"ref_count[{want}] is {ref_count[want]} after {fork}, expected 2: the block is in the "
                                  f"parent's block_table[{l1}][{j}], and the parent's {edit} ({why})")


def expect(ok: bool, want: bool, call: str, why: str) -> None:
    """One call's result: success (a sequence, or 0) when `want`, else NULL / -1."""
    if ok != want:
        raise ProbeFailed(f"{call} {'succeeded' if ok else 'failed'}, expected {'success' if want else 'NULL / -1'}: {why}")
