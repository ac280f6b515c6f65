"""The mini_vllm lab / vLLM v1 shape (seed 001): `KVCacheManager(block_size=, num_blocks=)` with
`get_computed_blocks(request)`, `allocate_slots(request, num_new_tokens, new_computed_blocks)`, `free(request)`
and `reset_prefix_cache()`, over a `block_pool` read white-box: `blocks` (each `block_id`, `ref_cnt`,
`block_hash`), `free_block_queue.get_all_free_blocks()`, `cached_block_hash_to_block` (a dict of blocks, or
of dicts of blocks for vLLM's multimap) and `fork_block(block)`. Requests are the module's `Request(request_id,
prompt_token_ids)` when it has one, else a plain object with `request_id`, `all_token_ids`, `num_tokens`,
`num_computed_tokens`.
"""

from dataclasses import dataclass
from typing import Any

from oracle.prefix.adapters import blocks_of, call, require
from oracle.prefix.observation import ImplementationFailure, Observation
from oracle.prefix.policy import LAB, Policy


@dataclass
class PlainRequest:
    """The request the adapter makes when the module has no Request class of its own."""

    request_id: str
    all_token_ids: list[int]
    num_computed_tokens: int = 0

    @property
    def num_tokens(self) -> int:
        return len(self.all_token_ids)


class LabAdapter:
    shape = "lab"
    default_policy = LAB
    supports = frozenset({"lookup", "append", "commit", "fork", "reset"})
    shows = frozenset({"free", "ref_counts", "hashes", "indexed"})  # every observe() gives these (remote.py)

    @staticmethod
    def written(step: Any) -> list[str]:
        """The calls the adapter makes for `step`, an oracle.program.Step (oracle/prefix/calls.py); `Request` is
        the module's, or the adapter's plain one with the same fields."""
        if step.op == "start":
            blocks, block_size = step.args
            return [f"manager = KVCacheManager(block_size={block_size}, num_blocks={blocks})"]
        if step.op == "lookup":
            return [f"manager.get_computed_blocks(Request('req--1', {list(step.args[0])}))"]
        if step.op == "reset":
            return ["manager.reset_prefix_cache()"]
        rid, req = step.args[0], f"req{step.args[0]}"
        return {
            "admit": lambda: [f"{req} = Request('req-{rid}', {list(step.args[1])})",
                              f"hits, num_cached = manager.get_computed_blocks({req})",
                              f"if num_cached < {len(step.args[1])}: "
                              f"manager.allocate_slots({req}, {len(step.args[1])} - num_cached, hits)"],
            "append": lambda: [f"{req}.all_token_ids.append({step.args[1]})",
                               f"manager.allocate_slots({req}, {req}.num_tokens - {req}.num_computed_tokens)"],
            "commit": lambda: [f"{req}.num_computed_tokens = {req}.num_tokens"],
            "fork": lambda: [f"table = manager.req_to_blocks['req-{rid}']",
                             f"table[{step.args[1]}] = manager.block_pool.fork_block(table[{step.args[1]}])"],
        }.get(step.op, lambda: [f"manager.free({req})"])()

    def __init__(self, target: Any, spec: str, policy: Policy = LAB):
        require(target, spec, ["KVCacheManager"])
        self.target, self.spec, self.policy = target, spec, policy
        self.manager: Any = None
        self.requests: dict[int, Any] = {}

    def start(self, num_blocks: int, block_size: int) -> None:
        self.manager = call("KVCacheManager()", self.target.KVCacheManager, block_size, num_blocks)
        self.pool = self.manager.block_pool
        self.requests = {}

    def _request(self, rid: int, tokens: list[int]) -> Any:
        make = getattr(self.target, "Request", PlainRequest)
        return call("Request()", make, f"req-{rid}", list(tokens))

    def admit(self, rid: int, tokens: list[int]) -> tuple[bool, int | None]:
        request = self._request(rid, tokens)
        hits, num_cached = call("get_computed_blocks", self.manager.get_computed_blocks, request)
        if num_cached >= len(tokens):  # nothing left to compute: allocate_slots cannot be asked
            return False, len(hits)
        new = call("allocate_slots", self.manager.allocate_slots, request, len(tokens) - num_cached, hits)
        if new is None:
            return False, len(hits)
        self.requests[rid] = request
        return True, len(hits)

    def lookup(self, tokens: list[int]) -> list[int]:
        hits, _ = call("get_computed_blocks", self.manager.get_computed_blocks, self._request(-1, tokens))
        return [b.block_id for b in hits]

    def append(self, rid: int, token: int) -> bool:
        request = self.requests[rid]
        request.all_token_ids.append(token)
        new = call("allocate_slots", self.manager.allocate_slots, request, request.num_tokens - request.num_computed_tokens)
        return new is not None

    def commit(self, rid: int) -> None:
        request = self.requests[rid]
        request.num_computed_tokens = request.num_tokens

    def _table(self, rid: int) -> list[Any]:
        return self.manager.req_to_blocks.get(self.requests[rid].request_id, [])

    def fork(self, rid: int, position: int) -> int | None:
        table = self._table(rid)
        try:
            copy = self.pool.fork_block(table[position])
        except ValueError:  # no free block: refused, nothing changed
            return None
        except Exception as exc:
            raise ImplementationFailure(f"fork_block raised {type(exc).__name__}: {exc}") from exc
        table[position] = copy  # the lab does not wire fork_block in: the adapter writes the table entry
        return copy.block_id

    def free(self, rid: int) -> None:
        request = self.requests.pop(rid, None) or self._request(rid, [])
        call("free", self.manager.free, request)

    def reset(self) -> bool:
        return bool(call("reset_prefix_cache", self.manager.reset_prefix_cache))

    def observe(self) -> Observation:
        try:
            pool = self.pool
            tables = {rid: tuple(b.block_id for b in self._table(rid)) for rid in self.requests}
            indexed = sorted(b.block_id for value in pool.cached_block_hash_to_block.values() for b in blocks_of(value))
            return Observation(
                tables=tables,
                free=tuple(b.block_id for b in pool.free_block_queue.get_all_free_blocks()),
                ref_counts={b.block_id: b.ref_cnt for b in pool.blocks},
                hashes={b.block_id: b.block_hash for b in pool.blocks if b.block_hash is not None},
                indexed=tuple(indexed),
            )
        except (AttributeError, TypeError) as exc:
            raise ImplementationFailure(f"state unreadable: {exc}") from exc

    def close(self) -> None:
        self.manager = None
        self.requests = {}
