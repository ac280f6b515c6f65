"""Hostile prefix-family submission (review 9), the kv_cache.py beside a package of engine/prefix (correct but for
this file). Its bug is the touch rule's (the `touch` item: a cache hit on a free block takes it out of the free queue,
from wherever it is, O(1)): a hit takes the block out by rotating the queue, head to tail, until the block is at the
head, then pops it. The blocks before it go to the tail: the queue's order of everything else changes, and the pool's
later takes come in another order than the model's. Aimed at oracle/prefix/taken_order.py and
oracle/grading/settlement.py: a take order that reordering within each free cannot explain is named free_queue's,
the touch item reads past it ("another rule's free order") and leaves it to free_queue's item; a rubric that does
not grade free_queue (the course's choice, absent_holds) then lets the touch bug cost nothing."""

from labsol import KVCacheManager as _Base, Request  # noqa: F401


class KVCacheManager(_Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        pool = self.block_pool

        def touch(blocks):
            for block in blocks:
                if block.ref_cnt == 0 and not block.is_null:
                    queue = pool.free_block_queue
                    while queue.head.next_free is not block:  # BUG: rotated to the head, not unlinked in place
                        queue.append(queue.popleft())
                    queue.popleft()
                block.ref_cnt += 1

        pool.touch = touch
