"""Hostile blockspace submission (review3a), on top of bug_swap_in_leaks.py (the swap item's bug, 15 points): a
failure of the block_table rule (10 points) is planted where only the swap item's program meets it, after its first
swap out and before its first swap in: a free while a group is swapped out drops the last block of the swapped
tables (a table of the wrong size). The swap item stops there, passes excused, and the block_table item takes the
plant; no other item's program swaps, so the swap-in bug is never charged, on the default rubric too."""

_free_honest = BlockSpaceManager.free  # noqa: F821 (the manager's class, in this module)


def _free(self, seq):
    _free_honest(self, seq)
    for table in self.block_tables.values():
        if len(table) > 1 and table[-1].device == Device.CPU:  # noqa: F821
            del table[-1]  # the plant


BlockSpaceManager.free = _free  # noqa: F821
