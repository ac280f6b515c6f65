"""Hostile blockspace submission (review3a), on top of tests/broken_blockspace/watermark_ignored.patch: where the
known bug would answer OK below the watermark, can_allocate raises instead. A crash is charged to the rule of the
program step it happened in, and the step `admit` (can_allocate, then allocate) is the block_table rule's: the
watermark item's program stops there, passes excused, and the block_table item takes the failure. Under a
course's rubric that weighs the watermark more than the tables, the crash buys the difference."""

_status_honest = BlockSpaceManager._status  # noqa: F821 (the manager's class, in this module)


def _status(self, num_required, num_free):
    said = _status_honest(self, num_required, num_free)
    if said is AllocStatus.OK and num_free - num_required < self.watermark_blocks:  # noqa: F821  (the bug's OK)
        raise RuntimeError("no room left above the watermark")
    return said


BlockSpaceManager._status = _status  # noqa: F821
