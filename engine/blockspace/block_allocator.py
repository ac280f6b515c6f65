"""BlockAllocator: the physical blocks of one device and which of them are free."""

from collections import deque

from .block import Block, Device


class BlockAllocator:
    def __init__(self, device: Device, num_blocks: int):
        self.device = device
        self.num_blocks = num_blocks
        self.blocks = [Block(device, i) for i in range(num_blocks)]
        self.free_block_ids: deque[int] = deque(range(num_blocks))

    def allocate(self) -> Block:
        if not self.free_block_ids:
            raise ValueError(f"out of {self.device.value} blocks")
        block = self.blocks[self.free_block_ids.popleft()]
        block.ref_count = 1
        return block

    def free(self, block: Block) -> None:
        if block.ref_count <= 0:
            raise ValueError(f"double free of {self.device.value} block {block.block_id}")
        block.ref_count -= 1
        if block.ref_count == 0:
            self.free_block_ids.append(block.block_id)

    def get_num_free_blocks(self) -> int:
        return len(self.free_block_ids)
