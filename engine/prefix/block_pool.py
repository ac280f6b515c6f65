"""BlockPool: every block, the free queue, and the prefix-cache index (chained hash -> block).

Block 0 is the null block: never free, never hashed, never handed out. A freed block keeps its hash (it is
"warm" and can still be hit) until it is taken for new content, which evicts it from the index.
"""

from collections.abc import Iterable

from .block import KVCacheBlock
from .free_queue import FreeKVCacheBlockQueue


class BlockPool:
    def __init__(self, num_blocks: int):
        if num_blocks < 1:
            raise ValueError(f"num_blocks must be at least 1 (the null block), got {num_blocks}")
        self.num_blocks = num_blocks
        self.blocks = [KVCacheBlock(i) for i in range(num_blocks)]
        self.free_block_queue = FreeKVCacheBlockQueue(self.blocks)
        self.cached_block_hash_to_block: dict[int, KVCacheBlock] = {}
        self.null_block = self.free_block_queue.popleft()
        self.null_block.is_null = True

    def get_new_blocks(self, num_blocks: int) -> list[KVCacheBlock]:
        if num_blocks > self.get_num_free_blocks():
            raise ValueError(f"cannot get {num_blocks} free blocks from the pool")
        blocks = []
        for _ in range(num_blocks):
            block = self.free_block_queue.popleft()
            self._maybe_evict(block)
            block.ref_cnt = 1
            blocks.append(block)
        return blocks

    def _maybe_evict(self, block: KVCacheBlock) -> None:
        block_hash = block.block_hash
        if block_hash is None:
            return
        if self.cached_block_hash_to_block.get(block_hash) is block:
            del self.cached_block_hash_to_block[block_hash]
        block.reset_hash()

    def touch(self, blocks: Iterable[KVCacheBlock]) -> None:
        """A prefix-cache hit: a free (warm) block leaves the free queue from wherever it is."""
        for block in blocks:
            if block.ref_cnt == 0 and not block.is_null:
                self.free_block_queue.remove(block)
            block.ref_cnt += 1

    def free_blocks(self, ordered_blocks: Iterable[KVCacheBlock]) -> None:
        """Drop one reference of each; blocks no one holds go to the queue's tail, in the order given."""
        for block in ordered_blocks:
            block.ref_cnt -= 1
            if block.ref_cnt == 0 and not block.is_null:
                self.free_block_queue.append(block)

    def cache_full_blocks(self, blocks: list[KVCacheBlock], block_hashes: list[int]) -> None:
        """Publish full blocks in the index; a later block with the same hash replaces the earlier entry."""
        for block, block_hash in zip(blocks, block_hashes):
            if block.is_null or block.block_hash is not None:
                continue
            block.block_hash = block_hash
            self.cached_block_hash_to_block[block_hash] = block

    def get_cached_block(self, block_hash: int) -> KVCacheBlock | None:
        return self.cached_block_hash_to_block.get(block_hash)

    def get_num_free_blocks(self) -> int:
        return self.free_block_queue.num_free_blocks

    def get_usage(self) -> float:
        """The fraction of the usable (non-null) blocks in use."""
        usable = self.num_blocks - 1
        return 1.0 - self.get_num_free_blocks() / usable if usable else 0.0

    def reset_prefix_cache(self) -> bool:
        """Forget every hash; refused (False) while any block but the null block is in use."""
        if self.get_num_free_blocks() != self.num_blocks - 1:
            return False
        self.cached_block_hash_to_block.clear()
        for block in self.blocks:
            block.reset_hash()
        return True

    def fork_block(self, block: KVCacheBlock) -> KVCacheBlock:
        """Copy-on-write: a block others share is copied into a fresh block before one sharer writes.
        Returns the block to write into; raises ValueError (changing nothing) when no block is free."""
        if block.ref_cnt <= 1:
            return block
        copy = self.get_new_blocks(1)[0]  # the KV copy itself is the caller's (pretend) memcpy
        block.ref_cnt -= 1
        return copy
