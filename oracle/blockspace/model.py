"""The model of a paged block manager (vLLM v0, the PagedAttention paper), independent of every implementation.

Plain lists and dicts: each device's free block ids (a list), each live sequence's group, tokens, device and
block table, and the tokens each block holds (`kv`, the KV a worker would hold: a swap and a copy-on-write
carry it). Ref counts are derived from the live tables. Its ids are its own: an implementation's block ids
are matched to them by the shape of the tables, never compared.
"""

from dataclasses import dataclass, field

GPU, CPU = "gpu", "cpu"


@dataclass
class Seq:
    group: int
    tokens: list[int]
    table: list[int] = field(default_factory=list)
    device: str = GPU
    status: str = "waiting"  # waiting, running, swapped


class BlockspaceModel:
    def __init__(self, block_size: int, num_gpu: int, num_cpu: int, watermark: float):
        self.block_size = block_size
        self.total = {GPU: num_gpu, CPU: num_cpu}
        self.watermark_blocks = int(watermark * num_gpu)
        self.free: dict[str, list[int]] = {GPU: list(range(num_gpu)), CPU: list(range(num_cpu))}
        self.kv: dict[str, dict[int, tuple[int, ...]]] = {GPU: {}, CPU: {}}
        self.seqs: dict[int, Seq] = {}  # live sequences, waiting ones included

    # -- derived facts ---------------------------------------------------------------------------------

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

    def _take(self, device: str) -> int:
        return self.free[device].pop(0)

    def _release(self, device: str, block: int) -> None:
        if self.ref_count(device, block) == 0:
            self.free[device].append(block)
            del self.kv[device][block]

    def _status(self, required: int) -> str:
        if self.total[GPU] - required < self.watermark_blocks:
            return "NEVER"
        return "OK" if len(self.free[GPU]) - required >= self.watermark_blocks else "LATER"

    # -- the calls -------------------------------------------------------------------------------------

    def can_allocate(self, group: int) -> str:
        return self._status(self.blocks_for(len(self.seqs[self.group(group, "waiting")[0]].tokens)))

    def allocate(self, group: int) -> None:
        waiting = self.group(group, "waiting")
        first = self.seqs[waiting[0]]
        table = [self._take(GPU) for _ in range(self.blocks_for(len(first.tokens)))]
        for position, block in enumerate(table):
            self.kv[GPU][block] = self.chunk(first, position)
        for i in waiting:
            self.seqs[i].table, self.seqs[i].status = list(table), "running"

    def can_append_slots(self, group: int) -> bool:
        return len(self.group(group, "running")) <= len(self.free[GPU])

    def append(self, i: int, token: int) -> list[tuple[int, int]]:
        """A new token's slot; the copy-on-write pairs (src, dst) it makes."""
        seq = self.seqs[i]
        seq.tokens.append(token)
        pairs = []
        if len(seq.table) < self.blocks_for(len(seq.tokens)):
            seq.table.append(self._take(GPU))
        elif self.ref_count(GPU, seq.table[-1]) > 1:
            src, dst = seq.table[-1], self._take(GPU)
            seq.table[-1] = dst
            self.kv[GPU][dst] = self.kv[GPU][src]
            pairs.append((src, dst))
        self.kv[GPU][seq.table[-1]] = self.chunk(seq, len(seq.table) - 1)
        return pairs

    def fork(self, parent: int, child: int, group: int) -> None:
        source = self.seqs[parent]
        self.seqs[child] = Seq(group, list(source.tokens), list(source.table), GPU, "running")

    def can_swap_out(self, group: int) -> bool:
        return len(self.group_blocks(group, "running")) <= len(self.free[CPU])

    def can_swap_in(self, group: int) -> str:
        return self._status(len(self.group_blocks(group, "swapped")) + len(self.group(group, "swapped")))

    def swap(self, group: int, status: str, src: str, dst: str) -> dict[int, int]:
        """Every block of the group's sequences in `status` moves to `dst` once; the mapping src -> dst."""
        mapping = {block: self._take(dst) for block in self.group_blocks(group, status)}
        for block, new in mapping.items():
            self.kv[dst][new] = self.kv[src][block]
        moved = self.group(group, status)
        for i in moved:
            seq = self.seqs[i]
            seq.table, seq.device = [mapping[b] for b in seq.table], dst
            seq.status = "swapped" if dst == CPU else "running"
        for block in mapping:
            self._release(src, block)
        return mapping

    def free_seq(self, i: int) -> None:
        seq = self.seqs.pop(i)
        for block in dict.fromkeys(seq.table):
            self._release(seq.device, block)

    def recompute(self, group: int) -> None:
        """Preemption by recomputation: the blocks go, the tokens wait as one new prompt."""
        for i in self.group(group, "running"):
            seq = self.seqs[i]
            blocks, seq.table, seq.status = dict.fromkeys(seq.table), [], "waiting"
            for block in blocks:
                self._release(GPU, block)

    # -- the paper's measure ---------------------------------------------------------------------------

    def waste(self) -> tuple[int, int]:
        """(slots allocated on the GPU, slots holding a token): every held block counted once."""
        held = {b for s in self.seqs.values() if s.device == GPU for b in s.table}
        return len(held) * self.block_size, sum(len(self.kv[GPU][b]) for b in held)

    def arrive(self, group: int, seq_ids: list[int], tokens: list[int]) -> None:
        for i in seq_ids:
            self.seqs[i] = Seq(group, list(tokens))

    def drop(self, group: int) -> None:
        """A group that can never be allocated is given up (it held nothing)."""
        for i in self.group(group, "waiting"):
            del self.seqs[i]
