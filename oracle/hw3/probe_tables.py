"""The probes of a block table's walks (the l1_traversal, create_free and fork items): free_sequence and
fork_sequence must visit every L1 slot and every L2 entry. Through the API a sequence's L2 tables fill from
slot 0 and its entries from entry 0, without a gap, so each probe edits a live table to make one."""

from oracle.hw3.probe_checks import CheckedPast, check_forked, check_freed, created, engine, mapped
from oracle.hw3.probe_target import ProbeTarget
from oracle.hw3.spec import KV_PER_BLOCK, L1_PT_SIZE, L2_PT_SIZE, UNMAPPED

GAP = "L1 slots 0, 3 and 15 are in use (1, 2 and 4 to 14 NULL)"
HOLE = "block_table[0] maps entries 0, 2 and 5 (entry 1 is -1)"
STOP_L1 = "the loop must not stop at a NULL slot"
STOP_L2 = "the loop over an L2 table must not stop at an unmapped entry"
GAP_RECORDS = (2 * L2_PT_SIZE + 1) * KV_PER_BLOCK  # 33 blocks: L1 slots 0, 1 and 2
ROOMY = 4  # pools 4 times what a probe maps: a set-up stays clear of a nearly full pool (other items' ground)


def l1_gap_free(r: ProbeTarget) -> str:
    """A 33-block sequence uses slots 0, 1 and 2; moving slot 1's table to slot 3 and slot 2's to slot 15 keeps
    every block mapped exactly once and leaves NULL slots between live ones, up to the last slot."""
    on, past = engine(r, ROOMY * (2 * L2_PT_SIZE + 1)), []
    seq = created(r, on, 1, GAP_RECORDS, past)
    view = r.sequence(seq)
    before = set(view.block_table[0] or ())  # slot 0 comes before the gap
    _gaps(r, seq)
    check_freed(r, on, before, mapped(view) - before, GAP, STOP_L1, past)
    return "freed a 33-block sequence with L1 slots 0, 3 and 15 in use: every block released"


def l1_gap_fork(r: ProbeTarget) -> str:
    """fork_sequence copies every non-NULL parent L2 table (Task 3), past the same gaps as l1_gap_free."""
    on, past = engine(r, ROOMY * (2 * L2_PT_SIZE + 1)), []
    parent = created(r, on, 1, GAP_RECORDS, past)
    _gaps(r, parent)
    check_forked(r, on, parent, GAP, STOP_L1, lambda: _gaps(r, parent, undo=True), past)
    return "forked a 33-block sequence with L1 slots 0, 3 and 15 in use: every L2 table copied, every block shared"


def _gaps(r: ProbeTarget, seq: object, undo: bool = False) -> None:
    """Slot 1's L2 table to slot 3, slot 2's to slot 15 (back again when `undo`)."""
    for src, dst in ((1, 3), (2, L1_PT_SIZE - 1)):
        r.move_l2(seq, *((dst, src) if undo else (src, dst)))


def _l2_hole(r: ProbeTarget, on: object, past: list[CheckedPast] | None = None) -> object:
    """A 3-block sequence maps entries 0, 1 and 2 of block_table[0]; entry 1 moves to entry 5, leaving -1."""
    seq = created(r, on, 1, 3 * KV_PER_BLOCK, past)
    r.move_entry(seq, 0, 1, 5)
    return seq


def l2_hole_free(r: ProbeTarget) -> str:
    """free_sequence releases "every mapped physical block (!= -1)", past an unmapped entry too."""
    on, past = engine(r, ROOMY * 3), []
    seq = _l2_hole(r, on, past)
    view = r.sequence(seq)
    before = {(view.block_table[0] or (UNMAPPED,))[0]}  # entry 0 comes before the hole
    check_freed(r, on, before, mapped(view) - before, HOLE, STOP_L2, past)
    return "freed a sequence whose block_table[0] maps entries 0, 2 and 5: every block released"


def l2_hole_fork(r: ProbeTarget) -> str:
    """fork_sequence copies "the mapped entries", past an unmapped one too."""
    on, past = engine(r, ROOMY * 3), []  # a wild slot is create_free's bug, the fork item's to see past
    parent = _l2_hole(r, on, past)
    check_forked(r, on, parent, HOLE, STOP_L2, lambda: r.move_entry(parent, 0, 5, 1), past)
    return "forked a sequence whose block_table[0] maps entries 0, 2 and 5: every entry copied, every block shared"
