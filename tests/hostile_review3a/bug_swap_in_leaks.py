"""A known bug of the swap rule, written for review3a (tests/broken_blockspace has none that shows only at a swap
in): swap_in moves a group's blocks back to the GPU but leaves their CPU blocks allocated (the CPU leaks a block
per moved block). Only the swap item's program (and the fuzz) swaps in."""

_swap_honest = BlockSpaceManager._swap  # noqa: F821 (the manager's class, in this module)


def _swap(self, seq_group, status, src, dst):
    if src is self.cpu_allocator:
        held = {block for seq in seq_group.get_seqs(status=status) for block in self.block_tables[seq.seq_id]}
        for block in held:
            block.ref_count += 1  # the bug: one holder too many, so the CPU block is never freed
    return _swap_honest(self, seq_group, status, src, dst)


BlockSpaceManager._swap = _swap  # noqa: F821
