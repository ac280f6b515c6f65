"""Hostile blockspace submission (review3a), on top of tests/broken_blockspace/free_ignores_sharing.patch (the
sharing item's bug, 15 points): a second failure is planted where only the sharing item's first program (beam
search, the one program with 2-token blocks) meets it, after its first fork and before its first free.
can_append_slots answers False there: a wrong answer of can_append_slots is the block_table rule's (10 points).
The sharing item stops at the plant, passes excused, and the block_table item takes the plant: the sharing bug
is never charged, and the submission pays 10 for the cheaper rule instead of 15."""

_fork_honest = BlockSpaceManager.fork  # noqa: F821 (the manager's class, in this module)
_can_append_honest = BlockSpaceManager.can_append_slots  # noqa: F821


def _fork(self, parent_seq, child_seq):
    self._forked = True
    _fork_honest(self, parent_seq, child_seq)


def _can_append_slots(self, seq_group, num_lookahead_slots):
    if self.block_size == 2 and getattr(self, "_forked", False):
        return False  # the plant: no room claimed, with free blocks to spare
    return _can_append_honest(self, seq_group, num_lookahead_slots)


BlockSpaceManager.fork = _fork  # noqa: F821
BlockSpaceManager.can_append_slots = _can_append_slots  # noqa: F821
