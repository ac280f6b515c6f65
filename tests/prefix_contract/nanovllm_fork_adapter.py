"""nano-vllm-fork's BlockManager (PyPI `nano-vllm-fork`, nanovllm/engine/block_manager.py) through the adapter
contract. Its package __init__ imports torch: the two modules are imported under empty parent packages."""

import importlib.util
import sys
import types
from pathlib import Path

root = Path(importlib.util.find_spec("nanovllm").origin).parent  # found, not run
for name, path in (("nanovllm", root), ("nanovllm.engine", root / "engine")):
    sys.modules.setdefault(name, types.ModuleType(name)).__path__ = [str(path)]
from nanovllm.engine.block_manager import BlockManager  # noqa: E402
from nanovllm.engine.sequence import Sequence  # noqa: E402


class NanoVllmForkAdapter:
    supports = {"append"}
    policy = {"free_order": "append", "release_order": "reverse", "index": "last_writer", "warm_reuse": False,
              "evict_on_reuse": False, "verify_tokens": True, "hit_cap": False, "admission": "all_blocks"}

    def __init__(self, num_blocks: int, block_size: int):
        Sequence.block_size = block_size
        self.manager, self.seqs = BlockManager(num_blocks, block_size), {}

    def admit(self, rid: int, tokens: list[int]) -> tuple[bool, int | None]:
        seq = Sequence(tokens)
        if not self.manager.can_allocate(seq):
            return False, None  # refused before any look-up: no hits to report
        self.manager.allocate(seq)
        self.seqs[rid] = seq
        return True, seq.num_cached_tokens // self.manager.block_size

    def append(self, rid: int, token: int) -> bool:
        seq = self.seqs[rid]
        seq.append_token(token)
        if not self.manager.can_append(seq):
            return False
        self.manager.may_append(seq)
        return True

    def free(self, rid: int) -> None:
        if rid in self.seqs:
            self.manager.deallocate(self.seqs.pop(rid))

    def observe(self) -> dict:
        m = self.manager
        return {"tables": {rid: seq.block_table for rid, seq in self.seqs.items()}, "free": list(m.free_block_ids),
                "ref_counts": {b.block_id: b.ref_count for b in m.blocks}, "indexed": list(m.hash_to_block_id.values())}
