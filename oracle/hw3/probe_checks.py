"""The steps the white-box probes share: setting up an engine and a sequence checked before a probe edits
it, and the judgements of what a free or a fork left. A probe raises ProbeFailed only for a fact of its own
rule. Every other fact it needs (a return value, kv_count, the list, a free count, which block first fit
picks) is another item's: NotChecked when it stops the probe before its rule could be judged, CheckedPast
when the probe judged its rule (it holds) and met that fact on the way. Either way that item must fail."""

from typing import Any, Callable

from oracle.hw3.observation import WILD
from oracle.hw3.pool import initial_pool
from oracle.hw3.probe_target import Counts, ProbeTarget, SequenceView
from oracle.hw3.spec import BLOCK_SIZE, KV_PER_BLOCK, L1_PT_SIZE, L2_PT_SIZE, UNMAPPED


class ProbeFailed(Exception):
    """What differs from the probe's rule; `past`: another item's bug the probe met as well (a CheckedPast, whose
    item must fail for it too: oracle/hw3/verdicts.py with_probes charges it)."""

    def __init__(self, reason: str, past: "CheckedPast | None" = None) -> None:
        super().__init__(reason)
        self.past = past


class NotChecked(Exception):
    """The probe's set-up met another item's bug: the probe passes, that item (`owner`; None: some other
    item) must fail for it (oracle/grading/grader.py's Excuse)."""

    def __init__(self, reason: str, owner: str | None = None) -> None:
        super().__init__(reason)
        self.owner = owner


class CheckedPast(Exception):
    """The probe judged its rule, which holds, and met another item's bug (`owner`) on the way: the probe
    passes, and that item must fail for it (Excuse), as for NotChecked."""

    def __init__(self, reason: str, owner: str | None = None) -> None:
        super().__init__(reason)
        self.owner = owner


def checked_past(others: list[CheckedPast]) -> None:
    """The end of a probe whose rule holds: the first other item's bug it met, if any."""
    if others:
        raise others[0]


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


def created(r: ProbeTarget, on: Any, seq_id: int, records: int, past: list[CheckedPast] | None = None) -> Any:
    """create_sequence on an engine with nothing mapped, checked before a probe edits the result: `records /
    16` rounded up distinct blocks, each with ref_count 1, mapped in order from block_table[0][0], -1 and NULL
    everywhere else. Block ids are first fit's business (the first_fit item), so any distinct ids do.
    A probe that passes `past` goes on past what the create got wrong where the blocks it needs are there,
    noting it in `past` (the item it names must fail, create_free's own included): an L1 slot left wild (set to
    NULL, as the create should have), blocks mapped past the records, a free count off."""
    used, free_before = -(-records // KV_PER_BLOCK), r.counts(on).free
    seq = r.call("create_sequence", on, seq_id, records)
    call = f"create_sequence(engine, {seq_id}, {records})"
    view = None if seq is None else r.sequence(seq)
    if view is None or not view.block_table:
        got = "NULL" if view is None else "a sequence with no block table"
        raise NotChecked(f"{call} returned {got} with {free_before} free blocks (item create_free)", "create_free")
    counts = r.counts(on)
    taken = sum(1 for count in counts.ref_count if count)

    def noted(reason: str, owner: str) -> None:
        """Another item's fact: a stop for create_free's own probe, a note past which another item's goes on."""
        if past is None:
            raise NotChecked(reason, owner)
        if not any(str(other) == reason for other in past):
            past.append(CheckedPast(reason, owner))

    if counts.free != free_before - used and counts.free != counts.total - taken:  # off from its own ref_count
        noted(f"free_local_blocks is {counts.free} after {call}, expected {free_before - used} (item free_count)", "free_count")
    if past is not None and (wild := [l1 for l1, l2 in enumerate(view.block_table) if l2 == WILD]):
        for l1 in wild:
            r.move_l2(seq, l1, l1)  # block_table[l1] = NULL
        noted(f"block_table[{wild[0]}] is a wild pointer after {call}: reading its L2 table faulted; the probe set it "
              "to NULL, as the create should have (item create_free)", "create_free")
        view = r.sequence(seq)
    no_wild_slot(view, call, "create_free")
    owned = lambda block: 0 <= block < min(counts.total, len(counts.ref_count)) and counts.ref_count[block] == 1  # noqa: E731
    met: set[int] = set()  # the blocks mapped so far: one mapped twice is no extra block, but a broken table
    for l1, l2 in enumerate(view.block_table):
        if l2 is None and l1 * L2_PT_SIZE < used:
            raise NotChecked(f"block_table[{l1}] is NULL after {call} (item create_free)", "create_free")
        if l2 is not None and l1 * L2_PT_SIZE >= used and not any(owned(block) for block in l2):
            noted(f"block_table[{l1}] is an L2 table after {call} (item create_free)", "create_free")
        for j, block in enumerate(l2 or ()):
            if l1 * L2_PT_SIZE + j < used and owned(block) or block == UNMAPPED and l1 * L2_PT_SIZE + j >= used:
                met.add(block)
                continue
            if block == UNMAPPED and taken < used:  # with free blocks left: a short count or a failed search,
                raise NotChecked(f"block_table[{l1}][{j}] is -1 after {call}, with {free_before} free blocks before it: "
                                 "the call mapped too few blocks (item create_free)", "create_free")  # the call's own item
            if not owned(block) or block in met:
                raise NotChecked(f"block_table[{l1}][{j}] is {block} after {call} (item create_free)", "create_free")
            met.add(block)
            noted(f"block_table[{l1}][{j}] is {block} after {call}, past its {records} records (item create_free)", "create_free")
    if len(mapped(view)) < used or len(mapped(view)) != used and past is None:
        raise NotChecked(f"{call} maps {len(mapped(view))} distinct blocks, expected {used} (item create_free)", "create_free")
    if counts.free != free_before - used:  # it agrees with ref_count: the call took the wrong number of blocks
        noted(f"free_local_blocks is {counts.free} after {call}, expected {free_before - used}, as ref_count says: the "
              "call took the wrong number of blocks (item create_free)", "create_free")
    return seq


def no_wild_slot(view: SequenceView, call: str, owner: str) -> None:
    """A sequence `call` left with an L1 slot whose pointer faults when read (never set, or freed): whatever
    reads that slot next (free, fork, llm_destroy) does what reading garbage does. That is `owner`'s bug."""
    wild = next((l1 for l1, l2 in enumerate(view.block_table) if l2 == WILD), None)
    if wild is not None:
        raise NotChecked(f"block_table[{wild}] is a wild pointer after {call}: reading its L2 table faulted "
                         f"(item {owner})", owner)


def no_shared_table(views: dict[str, SequenceView], owner: str) -> None:
    """No two sequences hold one L2 table (the calls that made them named by the keys): one that does is freed
    twice by whatever frees both. A fork that shares its parent's table is `owner`'s bug."""
    holder: dict[int, str] = {}
    for call, view in views.items():
        for l1, l2 in enumerate(view.l2_ids):
            if l2 is not None and holder.setdefault(l2, call) != call:
                raise NotChecked(f"after {call}, its block_table[{l1}] is the L2 table of the sequence {holder[l2]} made: "
                                 f"each sequence needs its own (item {owner})", owner)


def mapped(seq: SequenceView) -> set[int]:
    """The blocks a sequence maps."""
    return {block for l2 in seq.block_table if l2 is not None for block in l2 if block != UNMAPPED}


def check_all_free(counts: Counts, after: str) -> None:
    """Every ref_count 0 after `after`; a free count that disagrees is the free_count item's bug."""
    held = next(((block, count) for block, count in enumerate(counts.ref_count) if count), None)
    if held is not None:
        raise ProbeFailed(f"ref_count[{held[0]}] is {held[1]} after {after}, expected 0")
    if counts.free != counts.total:  # every ref_count is 0: Constraint 5's bug
        raise CheckedPast(f"free_local_blocks is {counts.free} after {after}, expected {counts.total} (item free_count)",
                          "free_count")


def check_freed(r: ProbeTarget, on: Any, before: set[int], kept: set[int], edit: str, why: str,
                past: list[CheckedPast] | None = None) -> None:
    """free_sequence(engine, 1) of a probe's only sequence, whose `edit` made a gap: every block released.
    `before` holds the blocks mapped before the gap (their release is the create_free item's rule), `kept`
    those past it, which a loop that stopped at the gap keeps (that bug gets its name, `why`). What free
    returns, the free count and the list are other items' facts."""
    call = "free_sequence(engine, 1)"
    returned = r.call("free_sequence", on, 1)
    counts = r.counts(on)
    held = {block: count for block, count in enumerate(counts.ref_count) if count}
    if stuck := sorted(held.keys() & before):
        raise NotChecked(f"{call} returned {returned} and left ref_count[{stuck[0]}] at {held[stuck[0]]}, expected 0, for a "
                         "block mapped before the gap (item create_free)", "create_free")
    if held and held.keys() == kept:
        raise ProbeFailed(f"after freeing a sequence whose {edit}, the blocks past the gap still have ref_count 1, "
                          f"expected 0 ({why})")
    if held and held.keys() < kept:
        raise ProbeFailed(f"after freeing a sequence whose {edit}, {len(held)} of the {len(kept)} blocks past the gap "
                          f"(ref_count[{min(held)}] among them) still have ref_count {held[min(held)]}, expected 0")
    if held:
        block = min(held)
        raise ProbeFailed(f"ref_count[{block}] is {held[block]} after freeing a sequence whose {edit}, expected 0")
    others = list(past or ())
    if returned != 0:
        others.append(CheckedPast(f"{call} returned {returned}, expected 0 (item create_free)", "create_free"))
    if counts.free != counts.total:  # every ref_count is 0: Constraint 5's bug
        others.append(CheckedPast(f"free_local_blocks is {counts.free} after {call}, expected {counts.total} (item free_count)",
                                  "free_count"))
    if not counts.empty:
        others.append(CheckedPast(f"the active list is not empty after {call} freed its only sequence (item create_free)",
                                  "create_free"))
    checked_past(others)


def check_forked(r: ProbeTarget, on: Any, parent_seq: Any, edit: str, why: str, undo: Callable[[], None],
                 past: list[CheckedPast] | None = None) -> None:
    """fork_sequence(engine, 1, 2) of a parent whose `edit` made a gap: the child has its own copy of each of
    the parent's L2 tables, entry for entry, NULL where the parent's slot is NULL, and each block is shared
    (ref_count 2). The child is judged against the parent as the grader made it, read before the fork (after the
    probe's edit), never as the fork left it (review 16's fork_forgets_parent_past_gap: a fork that stops at the gap
    and clears the parent's slots past it leaves the two in agreement). `why` names the loop bug a mismatch most
    likely is. What comes before the gap (a child at all, its block_table[0][0] shared), its kv_count, its own L2
    tables, taking no block and leaving its parent as it was are the fork item's facts; the free count the
    free_count item's. `undo` removes the gap, for a control fork when the fork fails: only a fork that fails just
    with the gap is this probe's bug."""
    fork = "fork_sequence(engine, 1, 2)"
    free_before = r.counts(on).free
    parent = r.sequence(parent_seq)
    child_seq = r.call("fork_sequence", on, 1, 2)
    changed = _parent_changed(parent, r.sequence(parent_seq), fork)  # the fork item's, whatever the walk did
    if (got := _no_child(r, child_seq)) is not None:
        undo()
        if (control := _no_child(r, r.call("fork_sequence", on, 1, 3))) is not None:
            raise NotChecked(f"{fork} returned {got} for a parent whose {edit}, and fork_sequence(engine, 1, 3) of the same "
                             f"parent without the gap returned {control}, with {free_before} free blocks (item fork)", "fork")
        raise ProbeFailed(f"{fork} returned {got} for a parent whose {edit}; without the gap, fork_sequence(engine, 1, 3) "
                          "of the same parent succeeded", changed)
    child = r.sequence(child_seq)
    counts = r.counts(on)
    ref_count = counts.ref_count
    first = parent.block_table[0][0] if parent.block_table and parent.block_table[0] else UNMAPPED
    have = child.block_table[0][0] if child.block_table[0] else UNMAPPED
    if have != first or not 0 <= first < len(ref_count) or ref_count[first] != 2:  # before any gap: the fork item's
        shared = ref_count[first] if 0 <= first < len(ref_count) else None
        raise NotChecked(f"after {fork}, the child's block_table[0][0] is {have} and ref_count[{first}] is {shared}, expected "
                         f"the parent's block {first} with ref_count 2, before any gap (item fork)", "fork")
    others = list(past or ())  # what the set-up read past, first
    if changed is not None:
        others.append(changed)
    if child.kv_count != parent.kv_count:
        others.append(CheckedPast(f"{fork}: the child's kv_count is {child.kv_count}, expected the parent's {parent.kv_count} "
                                  "(item fork)", "fork"))
    gapped = False  # past the parent's first NULL slot or unmapped entry: what comes before is the fork item's
    for l1, (source, copy) in enumerate(zip(parent.block_table, child.block_table)):
        if source is None:
            gapped = True
            if copy == WILD or (copy is not None and all(entry == UNMAPPED for entry in copy)):
                others.append(CheckedPast(f"{fork}: the child's block_table[{l1}] is "
                                          f"{'a wild pointer' if copy == WILD else 'an empty L2 table'} where the parent's "
                                          "slot is NULL, expected NULL (item fork)", "fork"))
            elif copy is not None:
                raise ProbeFailed(f"{fork} of a parent whose L1 slot {l1} is NULL: the child's block_table[{l1}] is an "
                                  "L2 table, expected NULL", changed)
            continue
        if copy is None:
            raise ProbeFailed(f"{fork} of a parent whose {edit}: the child's block_table[{l1}] is NULL, expected a copy "
                              f"of the parent's ({why})", changed)
        if child.l2_ids[l1] == parent.l2_ids[l1]:  # its entries are the parent's: the walk is still judged below
            others.append(CheckedPast(f"{fork}: the child's block_table[{l1}] is the parent's L2 table, expected its own "
                                      "copy (item fork)", "fork"))
        for j, (want, entry) in enumerate(zip(source, copy)):
            if entry != want and not gapped:
                raise NotChecked(f"after {fork}, the child's block_table[{l1}][{j}] is {entry}, expected the parent's {want}, "
                                 "before any gap (item fork)", "fork")
            gapped = gapped or want == UNMAPPED
            if entry != want:
                raise ProbeFailed(f"{fork} of a parent whose {edit}: the child's block_table[{l1}][{j}] is {entry}, "
                                  f"expected the parent's {want} ({why})", changed)
            if want != UNMAPPED and not 0 <= want < len(ref_count):  # the grader's own set-up: created() checked it
                raise NotChecked(f"the parent's block_table[{l1}][{j}] is {want} before {fork}, no block of the "
                                 f"engine's {len(ref_count)} (item create_free)", "create_free")
            if want != UNMAPPED and ref_count[want] != 2:
                raise ProbeFailed(f"ref_count[{want}] is {ref_count[want]} after {fork}, expected 2: the block is in the "
                                  f"parent's block_table[{l1}][{j}], and the parent's {edit} ({why})", changed)
    parents = mapped(parent)
    taken = next((block for block, count in enumerate(ref_count) if count and block not in parents), None)
    if taken is not None:
        others.append(CheckedPast(f"ref_count[{taken}] is {ref_count[taken]} after {fork}, expected 0: the parent does not "
                                  "map it, and a fork takes no block (item fork)", "fork"))
    elif counts.free != free_before:  # ref_count shows no block taken: Constraint 5's bug
        others.append(CheckedPast(f"free_local_blocks is {counts.free} after {fork}, expected {free_before}: a fork takes "
                                  "no block, and ref_count shows none taken (item free_count)", "free_count"))
    checked_past(others)


def _parent_changed(before: SequenceView, after: SequenceView, fork: str) -> CheckedPast | None:
    """The first difference a fork made to its parent (read before and after it), the fork item's bug: a fork
    leaves its parent's kv_count and block table as they were (its blocks then have one more reference each)."""
    if after.kv_count != before.kv_count:
        return CheckedPast(f"{fork} changed its parent: the parent's kv_count is {after.kv_count} after it, expected "
                           f"{before.kv_count}, as before it (item fork)", "fork")
    if len(after.block_table) != len(before.block_table):
        return CheckedPast(f"{fork} changed its parent: it has {len(after.block_table)} L1 slots after it, expected "
                           f"{len(before.block_table)}, as before it (item fork)", "fork")
    for l1, (was, now) in enumerate(zip(before.block_table, after.block_table)):
        if was is None or now is None or was == WILD or now == WILD:
            if now != was:
                return CheckedPast(f"{fork} changed its parent: the parent's block_table[{l1}] is {_slot(now)} after "
                                   f"it, expected {_slot(was)}, as before it (item fork)", "fork")
            continue
        j = next((j for j, (a, b) in enumerate(zip(was, now)) if a != b), None)
        if j is not None:
            return CheckedPast(f"{fork} changed its parent: the parent's block_table[{l1}][{j}] is {now[j]} after it, "
                               f"expected {was[j]}, as before it (item fork)", "fork")
    return None


def _slot(l2: Any) -> str:
    return "NULL" if l2 is None else "a wild pointer" if l2 == WILD else "an L2 table"


def _no_child(r: ProbeTarget, seq: Any) -> str | None:
    """What a fork returned instead of a child with a whole block table (None: such a child)."""
    view = None if seq is None else r.sequence(seq)
    if view is None:
        return "NULL"
    if len(view.block_table) != L1_PT_SIZE:
        return "a child with no block table" if not view.block_table else f"a child with {len(view.block_table)} L1 slots"
    return None


def expect(got: Any, want: bool, call: str, why: str, owner: str | None = None) -> None:
    """One call's result: success (a sequence, or 0) when `want`, else NULL / -1. With an `owner`, the result
    is that item's fact, which the probe needs (NotChecked), not its own rule's."""
    counted = call.startswith(("append_kv", "free_sequence"))  # 0 / -1; the others return a sequence or NULL
    ok = got == 0 if counted else got is not None
    if ok != want:
        value = f" (returned {got})" if counted and got not in (0, -1) else ""
        said = f"{call} {'succeeded' if ok else 'failed'}{value}, expected {'success' if want else 'NULL / -1'}: {why}"
        if owner is not None:
            raise NotChecked(f"{said} (item {owner})", owner)
        raise ProbeFailed(said)
