"""Hostile prefix-family submission (review 7, after review 6's drain_spotted), the kv_cache.py beside a package of
engine/prefix with a known bug (tests/broken_prefix/forward_order_free.patch: a free gives a request's blocks back
head first, where it must give them back tail first). Aimed at the free order's second opinion
(oracle/prefix/queue_order.py): the program replayed to the free in a fresh process, then the queue drained by
one-block admits, each of one round token past every token the program names; the blocks they are granted are taken
for the free's order.

drain_spotted refused the drain's admits, which fails the free by its rule. This one grants them, one block each, in
the order a correct free would have left: at the first admit of one round token past every token it has been given
(the drain's; no directed program of free_queue or reverse_order_free makes one), it puts the blocks its last free
gave back into the queue's places they hold, tail first, before taking one. Every graded run keeps the head-first
order; only the drain sees the order right."""

from labsol import KVCacheManager as _Base, Request  # noqa: F401


class KVCacheManager(_Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._past = 0  # the largest token this pool has been given
        self._last_freed = []  # the blocks the last free gave back, in the (head-first) order it gave them

    def free(self, request):
        blocks = list(self.req_to_blocks.get(request.request_id, []))
        super().free(request)
        self._last_freed = [block for block in blocks if block.ref_cnt == 0 and not block.is_null]

    def allocate_slots(self, request, num_new_tokens, new_computed_blocks=None):
        tokens = request.all_token_ids
        if len(tokens) == 1 and tokens[0] % 10 == 0 and tokens[0] > self._past and self._last_freed:
            self._regrant()  # the drain's first admit: the last free's blocks tail first, where they stand
        self._past = max(self._past, *tokens)
        return super().allocate_slots(request, num_new_tokens, new_computed_blocks)

    def _regrant(self):
        queue, freed = self.block_pool.free_block_queue, self._last_freed
        self._last_freed = []
        order = queue.get_all_free_blocks()
        tail_first = iter(reversed([block for block in order if block in freed]))
        order = [next(tail_first) if block in freed else block for block in order]
        for block in queue.get_all_free_blocks():
            queue.remove(block)
        for block in order:
            queue.append(block)
