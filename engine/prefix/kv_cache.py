"""KVCacheManager: maps requests to block tables and reuses computed prefixes through the BlockPool."""

from .block import KVCacheBlock
from .block_pool import BlockPool
from .hashing import hash_request_blocks
from .request import Request


class KVCacheManager:
    def __init__(self, block_size: int, num_blocks: int, enable_caching: bool = True):
        if block_size < 1:
            raise ValueError(f"block_size must be positive, got {block_size}")
        self.block_size = block_size
        self.enable_caching = enable_caching
        self.block_pool = BlockPool(num_blocks)
        self.req_to_blocks: dict[str, list[KVCacheBlock]] = {}
        self.num_cached_block: dict[str, int] = {}  # how many leading blocks of a request are published

    def get_computed_blocks(self, request: Request) -> tuple[list[KVCacheBlock], int]:
        """The longest run of cached blocks from the front of the request, and how many tokens they hold.
        At least one token is always left to compute, so at most (num_tokens - 1) // block_size blocks hit."""
        if not self.enable_caching:
            return [], 0
        max_hits = (request.num_tokens - 1) // self.block_size
        hits: list[KVCacheBlock] = []
        for block_hash in hash_request_blocks(request.all_token_ids, self.block_size)[:max_hits]:
            block = self.block_pool.get_cached_block(block_hash)
            if block is None:
                break
            hits.append(block)
        return hits, len(hits) * self.block_size

    def allocate_slots(
        self, request: Request, num_new_tokens: int, new_computed_blocks: list[KVCacheBlock] | None = None
    ) -> list[KVCacheBlock] | None:
        """Room for `num_new_tokens` more tokens after the computed ones (and the hits `new_computed_blocks`).
        Returns the new blocks, or None, changing nothing, when the pool is short."""
        if num_new_tokens < 1:
            raise ValueError(f"num_new_tokens must be positive, got {num_new_tokens}")
        computed = new_computed_blocks or []
        request_id = request.request_id
        req_blocks = self.req_to_blocks.get(request_id, [])
        num_computed_tokens = request.num_computed_tokens + len(computed) * self.block_size
        num_tokens = num_computed_tokens + num_new_tokens
        if num_tokens > request.num_tokens:
            raise ValueError(f"request {request_id} has {request.num_tokens} tokens, asked for slots up to {num_tokens}")
        num_required = -(-num_tokens // self.block_size)
        num_new_blocks = num_required - len(req_blocks) - len(computed)
        num_evictable_computed = sum(1 for block in computed if block.ref_cnt == 0)
        if num_new_blocks > self.block_pool.get_num_free_blocks() - num_evictable_computed:
            return None
        self.block_pool.touch(computed)
        new_blocks = self.block_pool.get_new_blocks(max(num_new_blocks, 0))
        req_blocks = self.req_to_blocks[request_id] = req_blocks + computed + new_blocks
        if self.enable_caching:
            self._cache_full_blocks(request, req_blocks, len(computed), num_tokens // self.block_size)
        return new_blocks

    def _cache_full_blocks(self, request: Request, req_blocks: list[KVCacheBlock], num_hits: int, num_full: int) -> None:
        num_cached = self.num_cached_block.get(request.request_id, 0) + num_hits
        if num_full > num_cached:
            hashes = hash_request_blocks(request.all_token_ids[: num_full * self.block_size], self.block_size)
            self.block_pool.cache_full_blocks(req_blocks[num_cached:num_full], hashes[num_cached:num_full])
        self.num_cached_block[request.request_id] = max(num_full, num_cached)

    def free(self, request: Request) -> None:
        """Release the request's blocks in reverse order, so a chain's tail is evicted before its head.
        An unknown (or already freed) request is a no-op."""
        blocks = self.req_to_blocks.pop(request.request_id, [])
        self.num_cached_block.pop(request.request_id, None)
        self.block_pool.free_blocks(reversed(blocks))

    def reset_prefix_cache(self) -> bool:
        return self.block_pool.reset_prefix_cache()
