"""fork_sequence sharing the parent's blocks without taking a reference of them (tests/broken/fork_no_incref.patch's
bug, as an edit after the engine's fork: graded in its child process, this file needs nothing but ours), slowed down."""

from tests.broken.probe_bugs import _after, base, variant
from tests.slowed import slowed_calls


def _references_not_taken(engine, child, *args):
    for l2_table in filter(None, child.block_table if child is not None else ()):
        for block in l2_table:
            if block != base.UNMAPPED:
                engine.ref_count[block] -= 1  # BUG: the fork's reference undone


globals().update(slowed_calls(variant(fork_sequence=_after("fork_sequence", _references_not_taken))))
