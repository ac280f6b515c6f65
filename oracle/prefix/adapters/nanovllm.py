"""nano-vllm's shape: `BlockManager(num_blocks, block_size)` with `can_allocate(seq)`, `allocate(seq)`,
`deallocate(seq)`, `can_append(seq)`, `may_append(seq)` (after `seq.append_token(t)`) and, in newer
releases, `hash_blocks(seq)` after the forward pass; its `Sequence(token_ids)`, whose class attribute
`block_size` the adapter sets. Read white-box: `blocks` (each `ref_count`, `hash`, -1 when none),
`free_block_ids` (a deque, taken from the left), `hash_to_block_id`, each sequence's `block_table` and
`num_cached_tokens`.
"""

from typing import Any

from oracle.prefix.adapters import call, require
from oracle.prefix.observation import ImplementationFailure, Observation
from oracle.prefix.policy import NANOVLLM, Policy


class NanovllmAdapter:
    shape = "nanovllm"
    default_policy = NANOVLLM
    supports = frozenset({"append", "commit"})

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
        if not call("can_allocate", self.manager.can_allocate, seq):
            return False, None
        call("allocate", self.manager.allocate, seq)
        self.sequences[rid] = seq
        return True, seq.num_cached_tokens // self.block_size

    def append(self, rid: int, token: int) -> bool:
        seq = self.sequences[rid]
        call("append_token", seq.append_token, token)
        if not call("can_append", self.manager.can_append, seq):
            return False
        call("may_append", self.manager.may_append, seq)
        return True

    def commit(self, rid: int) -> None:
        hash_blocks = getattr(self.manager, "hash_blocks", None)
        if hash_blocks is not None:
            call("hash_blocks", hash_blocks, self.sequences[rid])

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
