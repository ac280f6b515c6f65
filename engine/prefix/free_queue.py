"""FreeKVCacheBlockQueue: a doubly linked list of free blocks between a fake head and a fake tail.

The links live in the blocks themselves, so a block is unlinked from the middle in O(1): what a prefix-cache
hit on a free (warm) block needs.
"""

from collections.abc import Iterable

from .block import KVCacheBlock


class FreeKVCacheBlockQueue:
    def __init__(self, blocks: Iterable[KVCacheBlock]):
        self.head = KVCacheBlock(-1)
        self.tail = KVCacheBlock(-1)
        self.head.next_free, self.tail.prev_free = self.tail, self.head
        self.num_free_blocks = 0
        for block in blocks:
            self.append(block)

    def popleft(self) -> KVCacheBlock:
        block = self.head.next_free
        if block is self.tail:
            raise ValueError("no free blocks")
        self.remove(block)
        return block

    def remove(self, block: KVCacheBlock) -> None:
        block.prev_free.next_free = block.next_free
        block.next_free.prev_free = block.prev_free
        block.prev_free = block.next_free = None
        self.num_free_blocks -= 1

    def append(self, block: KVCacheBlock) -> None:
        last = self.tail.prev_free
        last.next_free, block.prev_free = block, last
        block.next_free, self.tail.prev_free = self.tail, block
        self.num_free_blocks += 1

    def get_all_free_blocks(self) -> list[KVCacheBlock]:
        found, block = [], self.head.next_free
        while block is not self.tail:
            found.append(block)
            block = block.next_free
        return found
