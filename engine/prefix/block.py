"""KVCacheBlock: one physical block of the pool. The free queue owns the link pointers."""

from dataclasses import dataclass, field


@dataclass(eq=False)
class KVCacheBlock:
    block_id: int
    ref_cnt: int = 0
    block_hash: int | None = None  # set once the block is full and cached
    is_null: bool = False
    prev_free: "KVCacheBlock | None" = field(default=None, repr=False)
    next_free: "KVCacheBlock | None" = field(default=None, repr=False)

    def reset_hash(self) -> None:
        self.block_hash = None
