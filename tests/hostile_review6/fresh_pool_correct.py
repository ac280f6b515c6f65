"""Hostile prefix-family submission (review 6), the kv_cache.py beside a package of engine/prefix with a known bug
(tests/broken_prefix/forward_order_free.patch: a free gives a request's blocks back head first, where it must give
them back tail first). Aimed at the free order's second opinion (oracle/prefix/queue_order.py, branch queue-admits)
by another tell than drain_refused.py's: the age of the process. The drain replays the program in a process started
afresh for it (RemotePrefix.apart), whose pool is the first that process ever made; a graded run's pool is made in
the one process that serves every program of the grading, after the pools of the programs before it. So the first
pool a process makes frees in the right order, and every later one in the wrong order: the drain sees a correct
free, the free's check passes, and what the wrong order breaks later is charged to free_queue.

Held since queue-admits's c121ad7 and 93a18e4: each directed program starts in a fresh process, ended before the
drain's replay and replayed in a fresh one after it, so every pool graded is the first its process makes."""

from labsol import KVCacheManager as _Base, Request  # noqa: F401

_made = 0  # the pools this process has made


class KVCacheManager(_Base):
    def __init__(self, *args, **kwargs):
        global _made
        super().__init__(*args, **kwargs)
        _made += 1
        self._first = _made == 1

    def free(self, request):
        if not self._first:
            return super().free(request)  # head first: the bug
        blocks = self.req_to_blocks.pop(request.request_id, [])
        self.num_cached_block.pop(request.request_id, None)
        self.block_pool.free_blocks(reversed(blocks))  # tail first, as it must, in a process's first pool
