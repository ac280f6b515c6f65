"""A small block manager of seed 003's shape, written for the adapter tests: LIFO free list, nothing warm,
a full block whose hash is already indexed is given back and the indexed block shared. Unlike the seed's
code it counts a reference for partial blocks too."""


class Sequence:
    block_size = 256  # the adapter sets it to the pool's, as seed 003's Sequence needs

    def __init__(self, token_ids: list[int]):
        self.token_ids = list(token_ids)
        self.block_list: list[int] = []
        self.num_blocks = 0

    def __len__(self) -> int:
        return len(self.token_ids)

    def append_token(self, token_id: int) -> None:
        self.token_ids.append(token_id)

    def tokens_in_block(self, index: int) -> list[int]:
        return self.token_ids[index * self.block_size : (index + 1) * self.block_size]


class Block:
    def __init__(self, block_id: int):
        self.block_id, self.ref_count, self.block_hash = block_id, 0, None


class BlockManager:
    def __init__(self, block_size: int, num_blocks: int):
        self.block_size = block_size
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.hash_to_block: dict[int, int] = {}
        self.free_blocks = list(range(num_blocks))

    def _take(self, seq: Sequence) -> None:
        block = self.free_blocks.pop()
        self.blocks[block].ref_count = 1
        seq.block_list.append(block)
        seq.num_blocks += 1

    def _seal(self, seq: Sequence, index: int) -> None:
        parent = self.blocks[seq.block_list[index - 1]].block_hash if index else None
        digest = hash((parent, tuple(seq.tokens_in_block(index))))
        mine = seq.block_list[index]
        owner = self.hash_to_block.get(digest)
        if owner is None:
            self.hash_to_block[digest] = mine
            self.blocks[mine].block_hash = digest
            return
        self.blocks[owner].ref_count += 1
        self.blocks[mine].ref_count = 0
        self.free_blocks.append(mine)
        seq.block_list[index] = owner

    def allocate_for_sequence(self, seq: Sequence) -> bool:
        needed = -(-len(seq) // self.block_size)
        if len(self.free_blocks) < needed:
            return False
        for index in range(needed):
            self._take(seq)
            if (index + 1) * self.block_size <= len(seq):
                self._seal(seq, index)
        return True

    def deallocate_for_sequence(self, seq: Sequence) -> None:
        for block_id in seq.block_list:
            block = self.blocks[block_id]
            block.ref_count -= 1
            if block.ref_count == 0:
                if block.block_hash is not None and self.hash_to_block.get(block.block_hash) == block_id:
                    del self.hash_to_block[block.block_hash]
                block.block_hash = None
                self.free_blocks.append(block_id)
        seq.block_list, seq.num_blocks = [], 0

    def manage_blocks_after_append(self, seq: Sequence) -> bool:
        if len(seq) % self.block_size == 0:
            self._seal(seq, seq.num_blocks - 1)
        elif len(seq) % self.block_size == 1:
            if not self.free_blocks:
                return False
            self._take(seq)
        return True
