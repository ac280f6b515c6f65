"""Hostile prefix-family submission (review 8), the kv_cache.py beside a package of engine/prefix with a known bug
(tests/broken_prefix/forward_order_free.patch: a free gives a request's blocks back head first, where it must give
them back tail first). Aimed at how oracle/prefix/taken_order.py names the rule of a free's order: a call that takes
other free blocks than the model's is the release order's (reverse_order_free) only where the blocks of some free
taken in exactly the opposite order make the pool's takes; any other order is the free queue's (free_queue).

So this free gives a request of three blocks or more back head first with its first two swapped (b2, b1, b3, ...,
bn), and a shorter one tail first (where head first is exactly the opposite order): still a free that gives its
blocks back in the wrong order, reverse_order_free's bug alone, never the exact reverse of the right order, and so
named free_queue's: reverse_order_free's item reads past it as another rule's free order, and free_queue's program
(one-block requests) never shows it. Measured: 12/12 for the honest 4/12."""

from labsol import KVCacheManager as _Base, Request  # noqa: F401


class KVCacheManager(_Base):
    def free(self, request):
        blocks = self.req_to_blocks.pop(request.request_id, [])
        self.num_cached_block.pop(request.request_id, None)
        order = list(blocks)  # head first: forward_order_free's order
        if len(order) >= 3:
            order[0], order[1] = order[1], order[0]
        else:
            order.reverse()
        self.block_pool.free_blocks(order)
