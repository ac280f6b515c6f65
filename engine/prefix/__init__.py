"""Our engine of the prefix-caching family: the mini_vllm lab's design (seed 001) in plain Python.

    from engine.prefix import KVCacheManager, Request
    manager = KVCacheManager(block_size=4, num_blocks=16)
    request = Request("a", [1, 2, 3, 4, 5])
    hits, num_cached = manager.get_computed_blocks(request)
    manager.allocate_slots(request, request.num_tokens - num_cached, hits)
"""

from .block import KVCacheBlock
from .block_pool import BlockPool
from .free_queue import FreeKVCacheBlockQueue
from .hashing import hash_block_tokens
from .kv_cache import KVCacheManager
from .request import Request

__all__ = ["BlockPool", "FreeKVCacheBlockQueue", "KVCacheBlock", "KVCacheManager", "Request", "hash_block_tokens"]
