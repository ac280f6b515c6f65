"""The Mini-YAIE shape of yaie_shape.py with one bug: copy_blocks hands each destination block a fresh block
from the free list (as if the copy needed room of its own), so blocks leave the free list that no table holds."""

from tests.prefix_shapes.yaie_shape import KVCacheManager as Correct


class KVCacheManager(Correct):
    def copy_blocks(self, src_block_ids: list[int], dst_block_ids: list[int]) -> None:
        super().copy_blocks(src_block_ids, dst_block_ids)
        del self.free_block_list[:len(dst_block_ids)]
