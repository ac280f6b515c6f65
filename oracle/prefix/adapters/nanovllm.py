"""nano-vllm's shape: `BlockManager(num_blocks, block_size)` with `can_allocate(seq)`, `allocate(seq)`,
`deallocate(seq)`, `can_append(seq)`, `may_append(seq)` (after `seq.append_token(t)`); its `Sequence(token_ids)`,
whose class attribute `block_size` the adapter sets.

Two APIs: up to 9e8507e `can_allocate(seq) -> bool` and `allocate(seq)` hashing at allocation (policy
`nanovllm`); since 8d63a98 `can_allocate(seq)` returns -1 (refused) or the number of cached blocks,
`allocate(seq, num_cached_blocks)`, and `hash_blocks(seq)` publishes the blocks the forward pass computed
(`seq.num_cached_tokens` .. `+ seq.num_scheduled_tokens`), driven as its scheduler does: the prompt's
uncached tokens are scheduled at admission, a decode token at append, and a commit runs `hash_blocks` then
moves the scheduled tokens into `num_cached_tokens` (policy `nanovllm_v2`, chosen when `hash_blocks` exists). Read white-box: `blocks` (each `ref_count`, `hash`, -1 when none),
`free_block_ids` (a deque, taken from the left), `hash_to_block_id`, each sequence's `block_table` and
`num_cached_tokens`.
"""

from typing import Any

from oracle.prefix.adapters import call, require
from oracle.prefix.observation import ImplementationFailure, Observation
from oracle.prefix.policy import NANOVLLM, NANOVLLM_V2, Policy


class NanovllmAdapter:
    shape = "nanovllm"
    default_policy = NANOVLLM
    supports = frozenset({"append", "commit"})
    shows = frozenset({"free", "ref_counts", "hashes", "indexed"})  # every observe() gives these (remote.py)

    @staticmethod
    def default_policy_for(target: Any) -> Policy:
        """The current API (`hash_blocks`) publishes after the forward pass; the old one at allocation."""
        return NANOVLLM_V2 if callable(getattr(getattr(target, "BlockManager", None), "hash_blocks", None)) else NANOVLLM

    @staticmethod
    def written(step: Any) -> list[str]:
        """The calls the adapter makes for `step`, an oracle.program.Step (oracle/prefix/calls.py), under the old
        API; the current one's differences are in the comments."""
        if step.op == "start":
            blocks, block_size = step.args
            return [f"Sequence.block_size = {block_size}", f"manager = BlockManager({blocks}, {block_size})"]
        seq = f"seq{step.args[0]}"
        if step.op == "admit":
            return [f"{seq} = Sequence({list(step.args[1])})",
                    f"if manager.can_allocate({seq}): manager.allocate({seq})  # current API: "
                    f"cached = manager.can_allocate({seq}); manager.allocate({seq}, cached)"]
        if step.op == "append":
            return [f"{seq}.append_token({step.args[1]})",
                    f"if manager.can_append({seq}): manager.may_append({seq})"]
        if step.op == "commit":
            return [f"manager.hash_blocks({seq}); {seq}.num_cached_tokens += {seq}.num_scheduled_tokens"
                    "  # current API only"]
        return [f"manager.deallocate({seq})"]

    def __init__(self, target: Any, spec: str, policy: Policy = NANOVLLM):
        require(target, spec, ["BlockManager", "Sequence"])
        self.target, self.spec, self.policy = target, spec, policy
        self.sequences: dict[int, Any] = {}

    def start(self, num_blocks: int, block_size: int) -> None:
        self.target.Sequence.block_size = block_size
        self.block_size = block_size
        self.manager = call("BlockManager()", self.target.BlockManager, num_blocks, block_size)
        self.sequences = {}

    def admit(self, rid: int, tokens: list[int]) -> tuple[bool, int | None]:
        seq = call("Sequence()", self.target.Sequence, list(tokens))
        cached = call("can_allocate", self.manager.can_allocate, seq)
        if isinstance(cached, bool) or not hasattr(self.manager, "hash_blocks"):  # the old API
            if not cached:
                return False, None
            call("allocate", self.manager.allocate, seq)
        else:
            if cached == -1:
                return False, None
            call("allocate", self.manager.allocate, seq, cached)
            seq.num_scheduled_tokens = len(seq) - seq.num_cached_tokens
        self.sequences[rid] = seq
        return True, seq.num_cached_tokens // self.block_size

    def append(self, rid: int, token: int) -> bool:
        seq = self.sequences[rid]
        call("append_token", seq.append_token, token)
        if not call("can_append", self.manager.can_append, seq):
            return False
        call("may_append", self.manager.may_append, seq)
        if hasattr(self.manager, "hash_blocks"):
            seq.num_scheduled_tokens = len(seq) - seq.num_cached_tokens
        return True

    def commit(self, rid: int) -> None:
        hash_blocks = getattr(self.manager, "hash_blocks", None)
        if hash_blocks is not None:
            seq = self.sequences[rid]
            call("hash_blocks", hash_blocks, seq)
            seq.num_cached_tokens += seq.num_scheduled_tokens
            seq.num_scheduled_tokens = 0

    def free(self, rid: int) -> None:
        seq = self.sequences.pop(rid, None)
        if seq is not None:  # nano-vllm keeps no table of its own: an unknown id has no sequence to pass
            call("deallocate", self.manager.deallocate, seq)

    def observe(self) -> Observation:
        try:
            blocks = self.manager.blocks
            return Observation(
                tables={rid: tuple(seq.block_table) for rid, seq in self.sequences.items()},
                free=tuple(self.manager.free_block_ids),
                ref_counts={b.block_id: b.ref_count for b in blocks},
                hashes={b.block_id: b.hash for b in blocks if b.hash != -1},
                indexed=tuple(sorted(self.manager.hash_to_block_id.values())),
            )
        except (AttributeError, TypeError) as exc:
            raise ImplementationFailure(f"state unreadable: {exc}") from exc

    def close(self) -> None:
        self.sequences = {}
