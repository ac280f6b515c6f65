"""A small block manager of nano-vllm's shape, written for the adapter tests from the family notes: a free
deque taken from the left, one block per hash (the last writer wins), hits that also compare the block's
token ids, and index entries left in place when a block is reused."""

from collections import deque


class Sequence:
    block_size = 256  # the adapter sets it to the pool's

    def __init__(self, token_ids: list[int]):
        self.token_ids = list(token_ids)
        self.block_table: list[int] = []
        self.num_cached_tokens = 0

    def __len__(self) -> int:
        return len(self.token_ids)

    @property
    def num_blocks(self) -> int:
        return -(-len(self.token_ids) // self.block_size)

    def block(self, index: int) -> list[int]:
        return self.token_ids[index * self.block_size : (index + 1) * self.block_size]

    def append_token(self, token_id: int) -> None:
        self.token_ids.append(token_id)


class Block:
    def __init__(self, block_id: int):
        self.block_id, self.ref_count, self.hash, self.token_ids = block_id, 0, -1, []

    def update(self, digest: int, token_ids: list[int]) -> None:
        self.hash, self.token_ids = digest, list(token_ids)


class BlockManager:
    def __init__(self, num_blocks: int, block_size: int):
        self.block_size = block_size
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.hash_to_block_id: dict[int, int] = {}
        self.free_block_ids = deque(range(num_blocks))
        self.used_block_ids: set[int] = set()

    def _claim(self, block_id: int) -> Block:
        block = self.blocks[block_id]
        block.ref_count, block.hash, block.token_ids = 1, -1, []
        self.free_block_ids.remove(block_id)
        self.used_block_ids.add(block_id)
        return block

    def can_allocate(self, seq: Sequence) -> bool:
        return len(self.free_block_ids) >= seq.num_blocks

    def allocate(self, seq: Sequence) -> None:
        digest, missed = -1, False
        for index in range(seq.num_blocks):
            tokens = seq.block(index)
            digest = hash((digest, tuple(tokens))) if len(tokens) == self.block_size else -1
            block_id = self.hash_to_block_id.get(digest, -1)
            missed = missed or block_id == -1 or self.blocks[block_id].token_ids != tokens
            if missed:
                block = self._claim(self.free_block_ids[0])
            else:
                seq.num_cached_tokens += self.block_size
                block = self.blocks[block_id]
                if block_id in self.used_block_ids:
                    block.ref_count += 1
                else:
                    block = self._claim(block_id)
            if digest != -1:
                block.update(digest, tokens)
                self.hash_to_block_id[digest] = block.block_id
            seq.block_table.append(block.block_id)

    def deallocate(self, seq: Sequence) -> None:
        for block_id in reversed(seq.block_table):
            block = self.blocks[block_id]
            block.ref_count -= 1
            if block.ref_count == 0:
                self.used_block_ids.remove(block_id)
                self.free_block_ids.append(block_id)
        seq.num_cached_tokens = 0
        seq.block_table.clear()

    def can_append(self, seq: Sequence) -> bool:
        return len(self.free_block_ids) >= (len(seq) % self.block_size == 1)

    def may_append(self, seq: Sequence) -> None:
        if len(seq) % self.block_size == 1:
            seq.block_table.append(self._claim(self.free_block_ids[0]).block_id)
        elif len(seq) % self.block_size == 0:
            last = self.blocks[seq.block_table[-1]]
            parent = self.blocks[seq.block_table[-2]].hash if len(seq.block_table) > 1 else -1
            tokens = seq.block(seq.num_blocks - 1)
            last.update(hash((parent, tuple(tokens))), tokens)
            self.hash_to_block_id[last.hash] = last.block_id
