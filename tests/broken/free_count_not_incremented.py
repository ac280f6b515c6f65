"""Broken: a block whose ref_count drops to 0 is not counted back into free_local_blocks."""

from engine import llm_memory as base
from engine.llm_memory import BLOCK_SIZE, append_kv, create_sequence, fork_sequence, free_sequence, llm_destroy  # noqa: F401


class LLMEngine(base.LLMEngine):
    __slots__ = ()

    def release_block(self, block):
        self.ref_count[block] -= 1  # BUG: free_local_blocks += 1 missing when it reaches 0


def llm_init(pool_addr, pool_size):
    engine = base.llm_init(pool_addr, pool_size)
    return None if engine is None else LLMEngine(engine.pool_base_ptr, pool_size // BLOCK_SIZE)
