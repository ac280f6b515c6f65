"""vLLM v1's shape: its own `KVCacheManager` (`vllm/v1/core/kv_cache_manager.py`), from an installed vllm
(`vllm:`) or an unzipped wheel (`vllm:DIR`), loaded without torch (oracle/prefix/vllm_loader.py).

The manager is made as vLLM's engine makes it for one full-attention layer group: a `KVCacheConfig` of
`num_blocks` blocks, `FullAttentionSpec(block_size)`, prefix caching on, hashes by `sha256` over pickle. A
request is a small object carrying what the KV-cache manager reads of vLLM's `Request` (its ids, tokens,
`num_computed_tokens` and the chained `block_hashes`, kept up to date by vLLM's own block hasher as tokens
are appended). Driven as the scheduler drives it:

    admit:  blocks, n, *_ = get_computed_blocks(req); allocate_slots(req, len - n, n, blocks); req.num_computed_tokens = n
    append: req gets the token (and its new full blocks' hashes); allocate_slots(req, num_tokens - num_computed_tokens)
    commit: req.num_computed_tokens = num_tokens (the forward pass ran)
    free:   free(req); reset: reset_prefix_cache(); lookup: get_computed_blocks on a request never allocated

Read white-box: the coordinator's single-type manager's `req_to_blocks`, the pool's `blocks`,
`free_block_queue.get_all_free_blocks()` and `cached_block_hash_to_block` (a multimap). vLLM has no
copy-on-write (`BlockPool` has no `fork_block`), so fork is not among what it supports.
"""

import hashlib
import pickle
from typing import Any

from oracle.prefix.adapters import blocks_of, call
from oracle.prefix.observation import ImplementationFailure, Observation
from oracle.prefix.policy import VLLM_V1, Policy
from oracle.prefix.vllm_loader import VllmModules, VllmNotFound

MAX_MODEL_LEN = 1 << 20


def sha256_of(value: Any) -> bytes:
    """The block hash function (vLLM's `sha256` option: SHA-256 over the pickled (parent, tokens, extra))."""
    return hashlib.sha256(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)).digest()


class VllmRequest:
    """What vLLM's KV-cache manager reads of a `vllm.v1.request.Request`, and nothing else."""

    def __init__(self, request_id: str, tokens: list[int], hasher: Any):
        self.request_id = request_id
        self.prompt_token_ids = list(tokens)
        self.all_token_ids = list(tokens)
        self.num_prompt_tokens = len(tokens)
        self.num_computed_tokens = 0
        self.num_in_flight_tokens = 0
        self.num_preemptions = 0
        self.status = None
        self.mm_features: list[Any] = []
        self.lora_request = None
        self.cache_salt = None
        self.prompt_embeds = None
        self.skip_reading_prefix_cache = False
        self.shared_prefix_boundary = 0
        self.block_hashes: list[bytes] = []
        self._hasher = hasher
        self.block_hashes.extend(hasher(self))

    @property
    def num_tokens(self) -> int:
        return len(self.all_token_ids)

    def append_output_token_ids(self, token: int) -> None:
        self.all_token_ids.append(token)
        self.block_hashes.extend(self._hasher(self))


class VllmAdapter:
    shape = "vllm"
    default_policy = VLLM_V1
    supports = frozenset({"lookup", "append", "commit", "reset"})
    shows = frozenset({"free", "ref_counts", "hashes", "indexed"})  # every observe() gives these (remote.py)

    @staticmethod
    def written(step: Any) -> list[str]:
        """The calls the adapter makes for `step`, an oracle.program.Step (oracle/prefix/calls.py), as vLLM's
        scheduler makes them; `Request` is the adapter's (the fields the manager reads, vLLM's block hasher)."""
        if step.op == "start":
            blocks, block_size = step.args
            return [f"manager = KVCacheManager(KVCacheConfig(num_blocks={blocks}, one FullAttentionSpec("
                    f"block_size={block_size}) group), enable_caching=True, hash_block_size={block_size})"]
        if step.op == "lookup":
            return [f"manager.get_computed_blocks(Request('req--1', {list(step.args[0])}))"]
        if step.op == "reset":
            return ["manager.reset_prefix_cache()"]
        req = f"req{step.args[0]}"
        if step.op == "admit":
            tokens = list(step.args[1])
            return [f"{req} = Request('req-{step.args[0]}', {tokens})",
                    f"hits, num_cached = manager.get_computed_blocks({req})",
                    f"manager.allocate_slots({req}, {len(tokens)} - num_cached, num_cached, hits)"]
        if step.op == "append":
            return [f"{req}.append_output_token_ids({step.args[1]})",
                    f"manager.allocate_slots({req}, {req}.num_tokens - {req}.num_computed_tokens)"]
        if step.op == "commit":
            return [f"{req}.num_computed_tokens = {req}.num_tokens"]
        return [f"manager.free({req})"]

    @staticmethod
    def load_target(spec: str) -> VllmModules:
        """The KV-cache modules of the vLLM tree in folder `spec` (empty: the installed vllm); ValueError."""
        try:
            return VllmModules(spec)
        except VllmNotFound:
            raise
        except Exception as exc:  # a tree whose modules do not run without the rest of vLLM
            raise ValueError(f"cannot load vLLM's KV-cache modules from {spec or 'the installed vllm'}: "
                             f"{type(exc).__name__}: {exc}") from exc

    def __init__(self, target: VllmModules, spec: str, policy: Policy = VLLM_V1):
        self.modules, self.spec, self.policy = target, spec, policy
        self.utils = target["vllm.v1.core.kv_cache_utils"]
        self.manager: Any = None
        self.requests: dict[int, VllmRequest] = {}

    def start(self, num_blocks: int, block_size: int) -> None:
        interface = self.modules["vllm.v1.kv_cache_interface"]
        make = self.modules["vllm.v1.core.kv_cache_manager"].KVCacheManager
        call("init_none_hash", self.utils.init_none_hash, sha256_of)
        spec = interface.FullAttentionSpec(block_size=block_size, num_kv_heads=1, head_size=1, dtype=None)
        config = interface.KVCacheConfig(num_blocks=num_blocks, kv_cache_tensors=[],
                                         kv_cache_groups=[interface.KVCacheGroupSpec(["layer"], spec)])
        self.manager = call("KVCacheManager()", lambda: make(config, max_model_len=MAX_MODEL_LEN, enable_caching=True,
                                                             scheduler_block_size=block_size, hash_block_size=block_size))
        self.hasher = self.utils.get_request_block_hasher(block_size, sha256_of)
        self.pool = self.manager.block_pool
        self.requests = {}

    def _request(self, rid: int, tokens: list[int]) -> VllmRequest:
        return call("Request()", VllmRequest, f"req-{rid}", tokens, self.hasher)

    def _hits(self, request: VllmRequest) -> tuple[Any, int]:
        found = call("get_computed_blocks", self.manager.get_computed_blocks, request)
        return found[0], found[1]

    def admit(self, rid: int, tokens: list[int]) -> tuple[bool, int | None]:
        request = self._request(rid, tokens)
        hits, num_cached = self._hits(request)
        hit_blocks = len(hits.blocks[0])
        new = call("allocate_slots", self.manager.allocate_slots, request, len(tokens) - num_cached, num_cached, hits)
        if new is None:
            return False, hit_blocks
        request.num_computed_tokens = num_cached
        self.requests[rid] = request
        return True, hit_blocks

    def lookup(self, tokens: list[int]) -> list[int]:
        hits, _ = self._hits(self._request(-1, tokens))
        return [b.block_id for b in hits.blocks[0]]

    def append(self, rid: int, token: int) -> bool:
        request = self.requests[rid]
        request.append_output_token_ids(token)
        new = call("allocate_slots", self.manager.allocate_slots, request,
                   request.num_tokens - request.num_computed_tokens)
        return new is not None

    def commit(self, rid: int) -> None:
        request = self.requests[rid]
        request.num_computed_tokens = request.num_tokens

    def free(self, rid: int) -> None:
        request = self.requests.pop(rid, None) or self._request(rid, [])
        call("free", self.manager.free, request)

    def reset(self) -> bool:
        return bool(call("reset_prefix_cache", self.manager.reset_prefix_cache))

    def _table(self, rid: int) -> list[Any]:
        single = self.manager.coordinator.single_type_managers[0]
        return list(single.req_to_blocks.get(self.requests[rid].request_id, []))

    def observe(self) -> Observation:
        try:
            pool = self.pool
            index = pool.cached_block_hash_to_block
            entries = getattr(index, "_cache", index)  # BlockHashToBlockMap keeps a dict of block or {id: block}
            return Observation(
                tables={rid: tuple(b.block_id for b in self._table(rid)) for rid in self.requests},
                free=tuple(b.block_id for b in pool.free_block_queue.get_all_free_blocks()),
                ref_counts={b.block_id: b.ref_cnt for b in pool.blocks},
                hashes={b.block_id: b.block_hash for b in pool.blocks if b.block_hash is not None},
                indexed=tuple(sorted(b.block_id for value in entries.values() for b in blocks_of(value))),
            )
        except (AttributeError, TypeError) as exc:
            raise ImplementationFailure(f"state unreadable: {exc}") from exc

    def close(self) -> None:
        self.manager = None
        self.requests = {}
