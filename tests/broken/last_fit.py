"""Broken: allocation picks the highest free block id (last fit) instead of the lowest (first fit)."""

from engine import llm_memory as base
from engine.llm_memory import BLOCK_SIZE, append_kv, create_sequence, fork_sequence, free_sequence, llm_destroy  # noqa: F401


class LLMEngine(base.LLMEngine):
    __slots__ = ()

    def allocate_block(self):
        for block in reversed(range(self.total_local_blocks)):  # BUG: from the top down
            if self.ref_count[block] == 0:
                self.ref_count[block] = 1
                self.free_local_blocks -= 1
                return block
        raise AssertionError("allocate_block called with no free block")


def llm_init(pool_addr, pool_size):
    engine = base.llm_init(pool_addr, pool_size)
    return None if engine is None else LLMEngine(engine.pool_base_ptr, pool_size // BLOCK_SIZE)
