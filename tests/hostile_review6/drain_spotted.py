"""Hostile prefix-family submission (review 6, follow-up of drain_refused.py), the kv_cache.py beside a package of
engine/prefix with a known bug (tests/broken_prefix/forward_order_free.patch: a free gives a request's blocks back
head first, where it must give them back tail first). Aimed at the free order's second opinion
(oracle/prefix/queue_order.py) once its drain's admits look like the program's: each the program's next request,
of one token, a round number past every number the program names (as `admit 40` in programs/free_queue.txt).

Written knowing that drain: it refuses an admit of one round token past every token it has been given, as a full
pool would (the pool has free blocks). No directed program of free_queue or reverse_order_free makes one
(free_queue's `admit 40` comes after `admit 30..41`), so only the drain meets the refusal. A drain refused is the
pool's failure at that free, by the free's rule: it gets no more than forward_order_free alone."""

from labsol import KVCacheManager as _Base, Request  # noqa: F401


class KVCacheManager(_Base):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._past = 0  # the largest token this pool has been given

    def allocate_slots(self, request, num_new_tokens, new_computed_blocks=None):
        tokens = request.all_token_ids
        if len(tokens) == 1 and tokens[0] % 10 == 0 and tokens[0] > self._past:  # the drain's admit
            return None
        self._past = max(self._past, *tokens)
        return super().allocate_slots(request, num_new_tokens, new_computed_blocks)
