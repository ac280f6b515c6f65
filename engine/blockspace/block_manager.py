"""BlockSpaceManager: block tables over a GPU and a CPU allocator, shared by reference count.

A sequence's table maps its logical blocks to physical ones; only the last may be partly filled. The
sequences of a group share their prompt's blocks; fork shares a whole table; a write into a shared block
copies it first (copy-on-write: the (src, dst) pair goes back to the caller, whose workers copy the KV).
Preemption moves all of a group's blocks to the CPU and back (swap), or frees them (recomputation).
"""

from enum import Enum

from .block import Block, Device
from .block_allocator import BlockAllocator
from .sequence import Sequence, SequenceGroup, SequenceStatus


class AllocStatus(Enum):
    OK = "ok"  # allocate now
    LATER = "later"  # not now: too few free blocks above the watermark
    NEVER = "never"  # the prompt can never fit above the watermark


class BlockSpaceManager:
    """vLLM v0's interface; `num_lookahead_slots` (speculative decoding) is taken and not used."""

    def __init__(self, block_size: int, num_gpu_blocks: int, num_cpu_blocks: int, watermark: float = 0.01):
        self.block_size = block_size
        self.num_total_gpu_blocks = num_gpu_blocks
        self.watermark_blocks = int(watermark * num_gpu_blocks)
        self.gpu_allocator = BlockAllocator(Device.GPU, num_gpu_blocks)
        self.cpu_allocator = BlockAllocator(Device.CPU, num_cpu_blocks)
        self.block_tables: dict[int, list[Block]] = {}

    def _num_blocks(self, seq: Sequence) -> int:
        return -(-seq.get_len() // self.block_size)

    def _status(self, num_required: int, num_free: int) -> AllocStatus:
        if self.num_total_gpu_blocks - num_required < self.watermark_blocks:
            return AllocStatus.NEVER
        if num_free - num_required >= self.watermark_blocks:
            return AllocStatus.OK
        return AllocStatus.LATER

    def can_allocate(self, seq_group: SequenceGroup) -> AllocStatus:
        seq = seq_group.get_seqs(status=SequenceStatus.WAITING)[0]
        return self._status(self._num_blocks(seq), self.gpu_allocator.get_num_free_blocks())

    def allocate(self, seq_group: SequenceGroup) -> None:
        """Maps the prompt of the group's waiting sequences: one table, shared by all of them."""
        waiting = seq_group.get_seqs(status=SequenceStatus.WAITING)
        table = []
        for _ in range(self._num_blocks(waiting[0])):
            block = self.gpu_allocator.allocate()
            block.ref_count = len(waiting)
            table.append(block)
        for seq in waiting:
            self.block_tables[seq.seq_id] = list(table)

    def can_append_slots(self, seq_group: SequenceGroup, num_lookahead_slots: int) -> bool:
        """Each running sequence may need one new block."""
        return seq_group.num_seqs(status=SequenceStatus.RUNNING) <= self.gpu_allocator.get_num_free_blocks()

    def append_slots(self, seq: Sequence, num_lookahead_slots: int) -> list[tuple[int, int]]:
        """A slot for the sequence's newest token: a new block when the last is full, a copy of the last
        when it is shared. Returns the copy-on-write pairs (src, dst) this made."""
        table = self.block_tables[seq.seq_id]
        if len(table) < self._num_blocks(seq):
            table.append(self.gpu_allocator.allocate())
            return []
        last = table[-1]
        if last.ref_count == 1:
            return []
        table[-1] = self.gpu_allocator.allocate()
        self.gpu_allocator.free(last)
        return [(last.block_id, table[-1].block_id)]

    def fork(self, parent_seq: Sequence, child_seq: Sequence) -> None:
        table = self.block_tables[parent_seq.seq_id]
        self.block_tables[child_seq.seq_id] = list(table)
        for block in set(table):
            block.ref_count += 1

    def _group_blocks(self, seq_group: SequenceGroup, status: SequenceStatus) -> set[Block]:
        return {block for seq in seq_group.get_seqs(status=status) for block in self.block_tables[seq.seq_id]}

    def can_swap_out(self, seq_group: SequenceGroup) -> bool:
        blocks = self._group_blocks(seq_group, SequenceStatus.RUNNING)
        return len(blocks) <= self.cpu_allocator.get_num_free_blocks()

    def can_swap_in(self, seq_group: SequenceGroup, num_lookahead_slots: int) -> AllocStatus:
        """Room for the group's blocks and one new block per sequence."""
        blocks = self._group_blocks(seq_group, SequenceStatus.SWAPPED)
        num_required = len(blocks) + seq_group.num_seqs(status=SequenceStatus.SWAPPED)
        return self._status(num_required, self.gpu_allocator.get_num_free_blocks())

    def _swap(self, seq_group: SequenceGroup, status: SequenceStatus, src: BlockAllocator,
              dst: BlockAllocator) -> list[tuple[int, int]]:
        """Moves every block of the group's sequences in `status` from `src` to `dst`; a block shared inside
        the group moves once. Returns the (src, dst) block pairs."""
        mapping: dict[Block, Block] = {}
        for seq in seq_group.get_seqs(status=status):
            table = []
            for block in self.block_tables[seq.seq_id]:
                if block in mapping:
                    mapping[block].ref_count += 1
                else:
                    mapping[block] = dst.allocate()
                table.append(mapping[block])
                src.free(block)
            self.block_tables[seq.seq_id] = table
        return [(old.block_id, new.block_id) for old, new in mapping.items()]

    def swap_out(self, seq_group: SequenceGroup) -> list[tuple[int, int]]:
        return self._swap(seq_group, SequenceStatus.RUNNING, self.gpu_allocator, self.cpu_allocator)

    def swap_in(self, seq_group: SequenceGroup) -> list[tuple[int, int]]:
        return self._swap(seq_group, SequenceStatus.SWAPPED, self.cpu_allocator, self.gpu_allocator)

    def free(self, seq: Sequence) -> None:
        table = self.block_tables.pop(seq.seq_id, None)
        for block in set(table or ()):
            allocator = self.gpu_allocator if block.device == Device.GPU else self.cpu_allocator
            allocator.free(block)

    def get_block_table(self, seq: Sequence) -> list[int]:
        return [block.block_id for block in self.block_tables[seq.seq_id]]

    def get_num_free_gpu_blocks(self) -> int:
        return self.gpu_allocator.get_num_free_blocks()

    def get_num_free_cpu_blocks(self) -> int:
        return self.cpu_allocator.get_num_free_blocks()
