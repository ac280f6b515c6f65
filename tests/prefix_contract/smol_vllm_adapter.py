"""smol-vllm's BlockSpaceManager (PyPI `smol-vllm`, smol_vllm/block_manager.py) through the adapter contract."""

from smol_vllm.block_manager import BlockSpaceManager


class SmolVllmAdapter:
    supports = {"append"}
    # no prefix cache; a deque of free ids taken from the left, freed to the right in table order
    policy = {"caching": False, "free_order": "append", "release_order": "forward", "hit_cap": False}

    def __init__(self, num_blocks: int, block_size: int):
        self.pool = BlockSpaceManager(num_blocks, block_size)

    def admit(self, rid: int, tokens: list[int]) -> bool:
        if not self.pool.can_allocate(len(tokens)):
            return False
        self.pool.allocate(rid, len(tokens))
        return True

    def append(self, rid: int, token: int) -> bool:
        try:
            self.pool.append_token(rid)
        except ValueError:  # "No free blocks to append token"
            return False
        return True

    def free(self, rid: int) -> None:
        self.pool.free(rid)

    def observe(self) -> dict:
        return {"tables": dict(self.pool._block_tables), "free": list(self.pool._free_blocks),
                "ref_counts": dict(self.pool._ref_count)}
