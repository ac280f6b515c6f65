"""A small KV-cache manager of Mini-YAIE's shape (seed 004), written for the adapter tests: a sorted free
list taken from the front, one table per request id, no ref counts, no prefix cache."""


class KVCacheManager:
    def __init__(self, num_blocks: int, block_size: int, num_heads: int, head_dim: int):
        self.block_size = block_size
        self.free_block_list = list(range(num_blocks))
        self.block_tables: dict[str, list[int]] = {}

    def allocate_blocks(self, request_id: str, num_tokens: int) -> list[int]:
        needed = -(-num_tokens // self.block_size)
        if len(self.free_block_list) < needed:
            raise RuntimeError("Not enough free blocks")
        self.free_blocks(request_id)  # a second allocation for one id replaces the first without leaking
        blocks = self.free_block_list[:needed]
        del self.free_block_list[:needed]
        self.block_tables[request_id] = blocks
        return blocks

    def free_blocks(self, request_id: str) -> None:
        self.free_block_list.extend(self.block_tables.pop(request_id, []))
        self.free_block_list.sort()

    def copy_blocks(self, src_block_ids: list[int], dst_block_ids: list[int]) -> None:
        if len(src_block_ids) != len(dst_block_ids):
            raise ValueError("Source and destination lists must have same length")
