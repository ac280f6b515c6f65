"""The model of a paged block manager (vLLM v0, the PagedAttention paper), independent of every implementation.

Plain lists and dicts: each device's free block ids, each live sequence's group, tokens, device and block table,
and the tokens each block holds (`kv`: what a worker's block would hold; a swap and a copy-on-write carry it).
Ref counts are derived from the live tables. Its block ids are its own: an implementation's are matched to them
by the shape of the tables, never compared.
"""

from dataclasses import dataclass, field

GPU, CPU = "gpu", "cpu"


@dataclass(frozen=True)
class Policy:
    """Where a system differs from the paper's manager by design (the paper's: the defaults)."""

    name: str = "paper"
    append: str = "running"  # can_append_slots counts "running" sequences, or the blocks new tokens "touch"
    swap: str = "group"  # a block shared inside a group moves once ("group"), or with each "sequence" holding it
    absolute_cpu_ids: bool = False  # tables name CPU block b as num_gpu_blocks + b (the swap pairs as b)


# vLLM 0.6.3.post1 (vllm/core/block_manager.py): each sequence's table is swapped on its own, so a block shared
# inside a group gets a copy per sequence; can_append_slots and can_swap_* count the blocks each sequence touches
VLLM_V0 = Policy("vllm_v0", append="touched", swap="sequence", absolute_cpu_ids=True)
POLICIES = {policy.name: policy for policy in (Policy(), VLLM_V0)}


@dataclass
class Seq:
    group: int
    tokens: list[int]
    table: list[int] = field(default_factory=list)
    device: str = GPU
    status: str = "waiting"  # waiting, running, swapped


class BlockspaceModel:
    def __init__(self, block_size: int, num_gpu: int, num_cpu: int, watermark: float, policy: Policy = Policy()):
        self.block_size, self.watermark_blocks, self.policy = block_size, int(watermark * num_gpu), policy
        self.total = {GPU: num_gpu, CPU: num_cpu}
        self.free: dict[str, list[int]] = {GPU: list(range(num_gpu)), CPU: list(range(num_cpu))}
        self.kv: dict[str, dict[int, tuple[int, ...]]] = {GPU: {}, CPU: {}}
        self.seqs: dict[int, Seq] = {}  # live sequences, waiting ones included

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    def ref_count(self, device: str, block: int) -> int:
        return sum(1 for s in self.seqs.values() if s.device == device and block in s.table)

    def group(self, group: int, status: str | None = None) -> list[int]:
        return [i for i, s in self.seqs.items() if s.group == group and status in (None, s.status)]

    def group_blocks(self, group: int, status: str) -> list[int]:
        """The distinct blocks of the group's sequences in `status`, in table order."""
        return list(dict.fromkeys(b for i in self.group(group, status) for b in self.seqs[i].table))

    def chunk(self, seq: Seq, position: int) -> tuple[int, ...]:
        return tuple(seq.tokens[position * self.block_size:(position + 1) * self.block_size])

    def _release(self, device: str, blocks: list[int]) -> None:
        for block in dict.fromkeys(blocks):
            if self.ref_count(device, block) == 0:
                self.free[device].append(block)
                del self.kv[device][block]

    def _status(self, required: int) -> str:
        """OK, LATER or NEVER for `required` GPU blocks, against the watermark."""
        if self.total[GPU] - required < self.watermark_blocks:
            return "NEVER"
        return "OK" if len(self.free[GPU]) - required >= self.watermark_blocks else "LATER"

    # -- the calls -------------------------------------------------------------------------------------

    def arrive(self, group: int, seq_ids: list[int], tokens: list[int]) -> None:
        self.seqs.update({i: Seq(group, list(tokens)) for i in seq_ids})

    def drop(self, group: int) -> None:
        """A group that can never be allocated is given up (it held nothing)."""
        for i in self.group(group, "waiting"):
            del self.seqs[i]

    def can_allocate(self, group: int) -> str:
        return self._status(self.blocks_for(len(self.seqs[self.group(group, "waiting")[0]].tokens)))

    def allocate(self, group: int) -> None:
        """One table for the prompt, shared by every waiting sequence of the group."""
        waiting = self.group(group, "waiting")
        first = self.seqs[waiting[0]]
        table = [self.free[GPU].pop(0) for _ in range(self.blocks_for(len(first.tokens)))]
        self.kv[GPU].update((block, self.chunk(first, p)) for p, block in enumerate(table))
        for i in waiting:
            self.seqs[i].table, self.seqs[i].status = list(table), "running"

    def can_append_slots(self, group: int, i: int) -> bool:
        """Each running sequence of the group may need one new block (or: sequence i's new token touches one, and
        each other running sequence its partly filled last block)."""
        running = self.group(group, "running")
        if self.policy.append == "touched":
            running = [j for j in running if j == i or len(self.seqs[j].tokens) % self.block_size]
        return len(running) <= len(self.free[GPU])

    def append(self, i: int, token: int) -> list[tuple[int, int]]:
        """A slot for a new token: a new block when the last is full, a copy of the last when it is shared. The
        copy-on-write pairs (src, dst) it makes."""
        seq, pairs = self.seqs[i], []
        seq.tokens.append(token)
        if len(seq.table) < self.blocks_for(len(seq.tokens)):
            seq.table.append(self.free[GPU].pop(0))
        elif self.ref_count(GPU, seq.table[-1]) > 1:
            pairs.append((seq.table[-1], self.free[GPU].pop(0)))
            seq.table[-1] = pairs[0][1]
        self.kv[GPU][seq.table[-1]] = self.chunk(seq, len(seq.table) - 1)
        return pairs

    def fork(self, parent: int, child: int, group: int) -> None:
        source = self.seqs[parent]
        self.seqs[child] = Seq(group, list(source.tokens), list(source.table), GPU, "running")

    def _moving(self, group: int, status: str) -> int:
        """The blocks a swap of the group moves: each distinct one once, or once per sequence holding it."""
        if self.policy.swap == "group":
            return len(self.group_blocks(group, status))
        return sum(len(set(self.seqs[i].table)) for i in self.group(group, status))

    def can_swap_out(self, group: int) -> bool:
        return self._moving(group, "running") <= len(self.free[CPU])

    def can_swap_in(self, group: int) -> str:
        """Room for the group's blocks and one new block per sequence (or: the blocks alone, NEVER only when
        they outnumber the GPU's)."""
        if self.policy.swap == "group":
            return self._status(self._moving(group, "swapped") + len(self.group(group, "swapped")))
        needed = self._moving(group, "swapped")
        if needed > self.total[GPU]:
            return "NEVER"
        return "OK" if len(self.free[GPU]) - needed >= self.watermark_blocks else "LATER"

    def swap(self, group: int, status: str, src: str, dst: str) -> None:
        """Every block of the group's sequences in `status` moves to `dst`, each once."""
        moved, mapping = self.group_blocks(group, status), {}
        for i in self.group(group, status):
            seq = self.seqs[i]
            if self.policy.swap == "sequence" or not mapping:
                mapping = {block: self.free[dst].pop(0) for block in dict.fromkeys(
                    seq.table if self.policy.swap == "sequence" else moved)}
                self.kv[dst].update((new, self.kv[src][old]) for old, new in mapping.items())
            seq.table, seq.device = [mapping[b] for b in seq.table], dst
            seq.status = "running" if dst == GPU else "swapped"
        self._release(src, moved)

    def free_seq(self, i: int) -> None:
        seq = self.seqs.pop(i)
        self._release(seq.device, seq.table)

    def recompute(self, group: int) -> None:
        """Preemption by recomputation: the blocks go, the tokens wait as one new prompt."""
        for i in self.group(group, "running"):
            seq = self.seqs[i]
            blocks, seq.table, seq.status = seq.table, [], "waiting"
            self._release(GPU, blocks)

    def waste(self) -> tuple[int, int]:
        """The paper's measure: (GPU slots allocated, slots holding a token), each held block counted once."""
        held = {b for s in self.seqs.values() if s.device == GPU for b in s.table}
        return len(held) * self.block_size, sum(len(self.kv[GPU][b]) for b in held)
