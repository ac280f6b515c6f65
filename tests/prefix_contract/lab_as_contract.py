"""Our lab engine (engine/prefix) driven through the adapter contract, as a user would drive their own pool:
admissions, frees and look-ups, with three declarations of what it is."""

from engine.prefix.kv_cache import KVCacheManager
from engine.prefix.request import Request


class LabPool:
    supports = {"lookup"}
    policy = {"null_block": True}  # run with @any: only what every prefix cache must hold

    def __init__(self, num_blocks: int, block_size: int):
        self.manager, self.requests = KVCacheManager(block_size, num_blocks), {}

    def admit(self, rid: int, tokens: list[int]) -> tuple[bool, int]:
        request = Request(f"req-{rid}", tokens)
        hits, cached = self.manager.get_computed_blocks(request)
        if self.manager.allocate_slots(request, len(tokens) - cached, hits) is None:
            return False, None
        self.requests[rid] = request
        return True, len(hits)

    def lookup(self, tokens: list[int]) -> list[int]:
        return [b.block_id for b in self.manager.get_computed_blocks(Request("look", tokens))[0]]

    def free(self, rid: int) -> None:
        self.manager.free(self.requests.pop(rid, None) or Request(f"req-{rid}", []))

    def observe(self) -> dict:
        pool = self.manager.block_pool
        return {"tables": {rid: [b.block_id for b in self.manager.req_to_blocks[r.request_id]]
                           for rid, r in self.requests.items()},
                "free": [b.block_id for b in pool.free_block_queue.get_all_free_blocks()],
                "ref_counts": {b.block_id: b.ref_cnt for b in pool.blocks if b.block_id}}


class LabPoolDeclaredRight(LabPool):
    policy = {"null_block": True, "index": "last_writer", "free_order": "append"}


class LabPoolDeclaredAsVllm(LabPool):
    policy = {"null_block": True, "index": "multimap", "free_order": "unhashed_front"}
