"""Seed 003's minivllm shape: `BlockManager(block_size, num_blocks)` with `allocate_for_sequence(seq)`,
`deallocate_for_sequence(seq)` and `manage_blocks_after_append(seq)` (after `seq.append_token(t)`), and its
`Sequence(token_ids)`, whose class attribute `block_size` the adapter sets to the pool's (Sequence slices
tokens with its own). Read white-box: `blocks` (each `ref_cache` or `ref_count`, `block_hash`),
`free_blocks` (a list popped from its end), `hash_to_block` (hash -> block id), each sequence's
`block_list` and its length, `len(seq)`, which the manager sizes the sequence's blocks by. Its messages and
calls are in the seed's words (`names`, `written`): `seq0.block_list[1]`, `manager.blocks[3].ref_cache`.
"""

from typing import Any

from oracle.prefix.adapters import call, require
from oracle.prefix.observation import ImplementationFailure, Observation
from oracle.prefix.policy import MINIVLLM, Policy


class MinivllmAdapter:
    shape = "minivllm"
    default_policy = MINIVLLM
    supports = frozenset({"append"})
    shows = frozenset({"free", "ref_counts", "hashes", "indexed", "lengths"})  # every observe() gives these (remote.py)
    names = {"table": "seq{rid}.block_list", "ref_count": "manager.blocks[{block}].ref_cache",
             "length": "len(seq{rid})", "tokens": "seq{rid}.token_ids holds"}

    @staticmethod
    def written(step: Any) -> list[str]:
        """The seed's calls the adapter makes for `step`, an oracle.program.Step (oracle/prefix/calls.py)."""
        if step.op == "start":
            blocks, block_size = step.args
            return [f"Sequence.block_size = {block_size}", f"manager = BlockManager(block_size={block_size}, "
                                                           f"num_blocks={blocks})"]
        rid = step.args[0]
        if step.op == "admit":
            return [f"seq{rid} = Sequence({list(step.args[1])})", f"manager.allocate_for_sequence(seq{rid})"]
        if step.op == "append":
            return [f"seq{rid}.append_token({step.args[1]})", f"manager.manage_blocks_after_append(seq{rid})"]
        return [f"manager.deallocate_for_sequence(seq{rid})"]  # free: seq{rid} as admitted (a fresh one if never)

    def __init__(self, target: Any, spec: str, policy: Policy = MINIVLLM):
        require(target, spec, ["BlockManager", "Sequence"])
        self.target, self.spec, self.policy = target, spec, policy
        self.sequences: dict[int, Any] = {}
        self.freed: dict[int, Any] = {}

    def start(self, num_blocks: int, block_size: int) -> None:
        self.target.Sequence.block_size = block_size
        self.manager = call("BlockManager()", self.target.BlockManager, block_size, num_blocks)
        self.sequences, self.freed = {}, {}

    def admit(self, rid: int, tokens: list[int]) -> tuple[bool, int | None]:
        seq = call("Sequence()", self.target.Sequence, list(tokens))
        accepted = call("allocate_for_sequence", self.manager.allocate_for_sequence, seq)
        if accepted:
            self.sequences[rid] = seq
        return bool(accepted), None

    def append(self, rid: int, token: int) -> bool:
        seq = self.sequences[rid]
        call("append_token", seq.append_token, token)
        return bool(call("manage_blocks_after_append", self.manager.manage_blocks_after_append, seq))

    def free(self, rid: int) -> None:
        seq = self.sequences.pop(rid, None) or self.freed.get(rid)
        if seq is None:
            seq = call("Sequence()", self.target.Sequence, [0])  # an id never admitted: a fresh sequence
        call("deallocate_for_sequence", self.manager.deallocate_for_sequence, seq)
        self.freed[rid] = seq

    def observe(self) -> Observation:
        try:
            blocks = self.manager.blocks
            counted = "ref_count" if blocks and hasattr(blocks[0], "ref_count") else "ref_cache"
            return Observation(
                tables={rid: tuple(seq.block_list) for rid, seq in self.sequences.items()},
                free=tuple(reversed(self.manager.free_blocks)),
                ref_counts={i: getattr(b, "ref_count", getattr(b, "ref_cache", None)) for i, b in enumerate(blocks)},
                hashes={i: b.block_hash for i, b in enumerate(blocks) if b.block_hash is not None},
                indexed=tuple(sorted(self.manager.hash_to_block.values())),
                lengths={rid: len(seq) for rid, seq in self.sequences.items()},
                names={**self.names, "ref_count": f"manager.blocks[{{block}}].{counted}"},
            )
        except (AttributeError, TypeError) as exc:
            raise ImplementationFailure(f"state unreadable: {exc}") from exc

    def close(self) -> None:
        self.sequences, self.freed = {}, {}
