"""Our engine of the blockspace family: the PagedAttention paper's block manager (seed 002), as vLLM v0
exposed it, in plain Python.

    from engine.blockspace import AllocStatus, BlockSpaceManager, Sequence, SequenceGroup
    manager = BlockSpaceManager(block_size=4, num_gpu_blocks=8, num_cpu_blocks=8)
    group = SequenceGroup("req-0", [Sequence(0, [1, 2, 3, 4, 5, 6, 7])])
    if manager.can_allocate(group) == AllocStatus.OK:
        manager.allocate(group)
"""

from .block import Block, Device
from .block_allocator import BlockAllocator
from .block_manager import AllocStatus, BlockSpaceManager
from .sequence import Sequence, SequenceGroup, SequenceStatus

__all__ = ["AllocStatus", "Block", "BlockAllocator", "BlockSpaceManager", "Device", "Sequence", "SequenceGroup",
           "SequenceStatus"]
