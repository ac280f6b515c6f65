"""Hostile blockspace submission (review3a), on top of tests/broken_blockspace/watermark_ignored.patch: where the
known bug answers OK below the watermark, can_allocate answers a status whose `name` is Markdown of the
submission's (the adapter sends the name of what can_allocate returns, up to 100 characters). The item fails as
it honestly does; the answer is quoted in the item's message, which reaches the student's and the TA's
Gradescope page (results.json, output_format "md") outside any code block: a heading, and an image fetched
from an address of the submission's choosing when the page is viewed."""

_can_allocate_honest = BlockSpaceManager.can_allocate  # noqa: F821 (the manager's class, in this module)


class _Said:
    name = "OK\n\n# REVIEW3A: all tests passed\n\n![](http://127.0.0.1:@PORT@/seen.png)"


def _can_allocate(self, seq_group):
    said = _can_allocate_honest(self, seq_group)
    seq = seq_group.get_seqs(status=SequenceStatus.WAITING)[0]  # noqa: F821
    if said is AllocStatus.OK and \
            self.gpu_allocator.get_num_free_blocks() - self._num_blocks(seq) < self.watermark_blocks:  # noqa: F821
        return _Said()  # the known bug's OK, below the watermark
    return said


BlockSpaceManager.can_allocate = _can_allocate  # noqa: F821
