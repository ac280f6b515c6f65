"""Hostile prefix-family submission (review 6), the kv_cache.py beside a package of engine/prefix with a known bug
(tests/broken_prefix/forward_order_free.patch, laid out as tests/test_tamper_prefix.py does: a free gives a
request's blocks back head first, where it must give them back tail first). Aimed at the free order's second opinion
(oracle/prefix/queue_order.py, branch queue-admits): after a free, the program is replayed to the free in a fresh
process of the pool, and the queue drained by one-block admits, each of one new token under a new id, the token the
id itself (`admit(past + i, [past + i])`); a drain not granted one block each says nothing, and the free's order is
then not judged at the free.

No directed program admits a request whose one token is its own number, so only the drain meets this pool's
refusal: it refuses that admit as a full pool would (the pool has free blocks). The second opinion then says
nothing, the release order is judged nowhere, and what the wrong order breaks later (the next admit takes the
blocks in the pool's order, not the model's) is charged to free_queue.

Held since (branch queue-drain): the drain's admits look like the program's (its next request ids, one round token
each), so this pool grants them; and a drain refused is the pool's failure at that free (drain_spotted.py)."""

from labsol import KVCacheManager as _Base, Request  # noqa: F401


class KVCacheManager(_Base):
    def allocate_slots(self, request, num_new_tokens, new_computed_blocks=None):
        tokens = request.all_token_ids
        if len(tokens) == 1 and request.request_id == f"req-{tokens[0]}":  # the drain's admit
            return None
        return super().allocate_slots(request, num_new_tokens, new_computed_blocks)
