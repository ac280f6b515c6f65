"""One checked call at a time: the model and an implementation (through its adapter) make the same call, and
every invariant of the paper's block manager is checked after it; the state machine and the scenario programs
both drive this, on the core's checked calls (oracle/checked.py). The implementation's block ids are matched to
the model's by the shape of the tables (oracle/block_tables.py: two positions share a block in one exactly when
they do in the other). A simulated worker (oracle/kv_worker.py) holds each block's KV: the prompt is written at
allocation, each token into its slot, a copy-on-write pair copies a whole block, a swap pair moves one; every live
sequence's blocks must then hold its own tokens."""

from typing import Any, Callable

from oracle import block_tables
from oracle.block_tables import Held
from oracle.blockspace.model import CPU, GPU, BlockspaceModel, Policy
from oracle.blockspace.rules import rule_of
from oracle.checked import Checked
from oracle.difference import CRASH, Difference
from oracle.kv_worker import Worker
from oracle.stats import RunStats

Tables = dict[int, list[int]]
# a query's answers that make nothing happen (wait, give up, no room, no swap): where the implementation answers so
# and the model does not, the model can take its answer and go on (oracle/checked.py, Checked.ask's `follows`)
def _refused(got: Any) -> bool:
    return got is False or type(got) is str and got in ("LATER", "NEVER")


class Driver(Checked):
    def __init__(self, adapter: Any, stats: RunStats | None = None, policy: Policy = Policy()):
        super().__init__(adapter, stats, rule_of)
        self.policy = policy
        self.model: BlockspaceModel | None = None
        self.worker = Worker((GPU, CPU))  # what each block's KV holds
        self.waiting: list[int] = []  # groups in arrival order (first come, first served)
        self.next_seq = self.next_group = self.next_token = 0

    # -- checking --------------------------------------------------------------------------------------

    @property
    def tables(self) -> Tables:  # the implementation's, as last checked
        return self.last["tables"]

    def _live(self) -> list[int]:
        return [i for i, s in self.model.seqs.items() if s.status != "waiting"]

    def _observe(self) -> tuple[Tables, list[int], list]:
        seen = self.run(lambda: self.impl.observe(self._live()))
        try:
            offset = {GPU: 0, CPU: self.model.total[GPU] if self.policy.absolute_cpu_ids else 0}
            tables = {int(i): [b - offset[self.model.seqs[int(i)].device] if type(b) is int else b for b in t]
                      for i, t in seen["tables"]}
            refs = [(i, p, c) for i, p, c in seen["ref_counts"] if 0 <= p < len(self.model.seqs[i].table)]
            if sorted(tables) == sorted(self._live()) and len(seen["free"]) == 2:
                return tables, list(seen["free"]), refs
        except (KeyError, TypeError, ValueError):
            pass
        self.diverge(Difference(CRASH, "", None, "state unreadable: not the live sequences' tables and two free "
                                "counts"))

    def state(self) -> dict[str, Any]:
        tables, free, _ = self._observe()
        return {"tables": tables, "free": free}

    def _check(self, first: Callable[[Tables, dict[int, Held]], Difference | None] = lambda *_: None,
               writes: Callable[[Tables], None] = lambda _: None) -> None:
        tables, free, refs = self._observe()
        live = [(i, self.model.seqs[i]) for i in self._live()]
        held = {i: Held(s.device, s.table, len(s.tokens)) for i, s in live}
        problem = first(tables, held) or block_tables.difference(held, tables, dict(zip((GPU, CPU), free)), refs,
                                                                 self.model.total, self.model.block_size)
        if problem:
            self.diverge(problem)
        writes(tables)
        problem = self.worker.difference((f"seq {i} block_table[{p}]", s.device, theirs, self.model.kv[s.device][mine])
                                         for i, s in live for p, (mine, theirs) in enumerate(zip(s.table, tables[i])))
        if problem:
            self.diverge(problem)
        self.last = {"tables": tables, "free": free}
        slots, filled = self.model.waste()
        self.stats.events["gpu_slots_allocated"] += slots
        self.stats.events["gpu_slots_filled"] += filled

    # -- the calls -------------------------------------------------------------------------------------

    def start(self, block_size: int, num_gpu: int, num_cpu: int, watermark: float) -> None:
        self.step("start", f"BlockSpaceManager(block_size={block_size}, num_gpu_blocks={num_gpu}, "
                            f"num_cpu_blocks={num_cpu}, watermark={watermark})")
        self.model = BlockspaceModel(block_size, num_gpu, num_cpu, watermark, self.policy)
        self.run(lambda: self.impl.start(block_size, num_gpu, num_cpu, watermark))
        self._check()

    def arrive(self, prompt_len: int, samples: int = 1) -> None:
        """A request: a group of `samples` waiting sequences with one prompt; it queues (no call yet)."""
        group, seqs = self.next_group, list(range(self.next_seq, self.next_seq + samples))
        tokens = list(range(self.next_token, self.next_token + prompt_len))
        self.next_group, self.next_seq, self.next_token = group + 1, seqs[-1] + 1, self.next_token + prompt_len
        self.call = f"a request arrives: group {group}, {samples} sequence(s) of a {prompt_len}-token prompt"
        self.model.arrive(group, seqs, tokens)
        self.impl.arrive(group, seqs, tokens)
        self.waiting.append(group)

    def admit(self) -> None:
        """The first waiting group: can_allocate, then allocate when OK (given up when NEVER)."""
        if not self.waiting:
            return
        group = self.waiting[0]
        self.step("admit", f"can_allocate(group {group}) and allocate it if OK")
        status = self.ask("can_allocate", self.model.can_allocate(group), lambda: self.impl.ask("can_allocate", group),
                          follows=_refused)
        self.stats.events[f"can_allocate_{status}"] += 1
        if status != "LATER":
            self.waiting.pop(0)
        if status == "NEVER":
            return self.model.drop(group)
        if status == "OK":
            self.model.allocate(group)
            self.run(lambda: self.impl.allocate(group))
            first = self.model.group(group)[0]
            self._check(writes=lambda tables: self.worker.write(
                GPU, ((b, self.model.chunk(self.model.seqs[first], p)) for p, b in enumerate(tables[first]))))

    def append(self, i: int) -> bool:
        """can_append_slots for the sequence's group, then a new token and append_slots for it."""
        seq = self.model.seqs.get(i)
        if seq is None or seq.status != "running":
            return False
        self.step("append", f"append_slots(seq {i}) for its token {len(seq.tokens) + 1}")
        token, self.next_token, before = self.next_token, self.next_token + 1, self.tables[i]
        self.run(lambda: self.impl.add_token(i, token))  # the scheduler's order: the token, then the query
        if not self.ask("can_append_slots", self.model.can_append_slots(seq.group, i),
                         lambda: self.impl.ask("can_append_slots", seq.group), follows=_refused):
            self.stats.events["append_refused"] += 1
            self.run(lambda: self.impl.drop_token(i))
            return False
        pairs = self.model.append(i, token)
        got = self.run(lambda: self.impl.append_slots(i), pairs=True)
        self.stats.events["copy_on_write"] += len(pairs)

        def first(tables: Tables, held: dict[int, Held]) -> Difference | None:
            if len(tables[i]) != len(seq.table):
                return None  # a wrong count of blocks: the table size says it
            copied = [(before[-1], tables[i][-1])] if pairs and before else []
            if got != copied or copied and tables[i][-1] == before[-1]:
                return Difference("cow pairs", f"append_slots(seq {i})'s return", f"[({before[-1]}, a new block)]"
                                  if pairs else [], got)
            return block_tables.shared_write(held, tables, i)

        def writes(tables: Tables) -> None:
            self.worker.copy(GPU, GPU, got)
            self.worker.write_slot(GPU, tables[i][-1], (len(seq.tokens) - 1) % self.model.block_size, token)

        self._check(first, writes)
        return True

    def fork(self, parent: int, new_group: bool = False) -> None:
        """A new sequence sharing the parent's table: in its group (a sample, a beam) or a new one (a request
        sharing a system prompt)."""
        seq = self.model.seqs.get(parent)
        if seq is None or seq.status != "running":
            return
        child, group = self.next_seq, self.next_group if new_group else seq.group
        self.next_seq, self.next_group = child + 1, self.next_group + new_group
        self.step("fork", f"fork(seq {parent} -> seq {child}{' of a new group' if new_group else ''})")
        self.model.fork(parent, child, group)
        self.run(lambda: self.impl.fork(parent, child, group))
        self._check()

    def free(self, i: int) -> None:
        if i in self.model.seqs and self.model.seqs[i].status != "waiting":
            self.step("free", f"free(seq {i})")
            self.model.free_seq(i)
            self.run(lambda: self.impl.free(i))
            self._check()

    def swap(self, group: int, out: bool) -> None:
        """can_swap_out then swap_out (GPU -> CPU), or can_swap_in then swap_in (CPU -> GPU), of a group."""
        status, src, dst, op = ("running", GPU, CPU, "swap_out") if out else ("swapped", CPU, GPU, "swap_in")
        moved = self.model.group(group, status)
        if not moved:
            return
        self.step(op, f"{op}(group {group})")
        ok = self.ask(f"can_{op}", getattr(self.model, f"can_{op}")(group),
                       lambda: self.impl.ask(f"can_{op}", group), follows=_refused) in (True, "OK")
        self.stats.events[f"{op}_{'ok' if ok else 'refused'}"] += 1
        if not ok:
            return
        before = {i: self.tables[i] for i in moved}
        taken = {b for i, t in self.tables.items() if i not in moved and self.model.seqs[i].device == dst for b in t}
        each = self.policy.swap == "sequence"  # each sequence's blocks move on their own
        blocks = [b for i in moved for b in dict.fromkeys(before[i])] if each else \
            list(dict.fromkeys(b for i in moved for b in before[i]))
        self.model.swap(group, status, src, dst)
        got = self.run(lambda: self.impl.swap(group, out), pairs=True)
        parts, rest = {i: dict(got) for i in moved}, got
        for i in moved if each else ():
            parts[i], rest = dict(rest[:len(set(before[i]))]), rest[len(set(before[i])):]

        self._check(lambda tables, _: block_tables.moved(f"{op}(group {group})", got, blocks, taken, src, dst, before,
                                                         parts, tables), lambda _: self.worker.copy(src, dst, got))

    def recompute(self, group: int) -> None:
        """Preemption by recomputation of a one-sequence group: free it; its tokens wait as a new prompt."""
        running = self.model.group(group, "running")
        if len(running) == 1 and len(self.model.group(group)) == 1:
            shared = any(self.model.ref_count(GPU, b) > 1 for b in self.model.seqs[running[0]].table)
            # freeing a block another sequence holds is the sharing rule's business
            self.step("free" if shared else "recompute", f"free(seq {running[0]}) to recompute group {group} later")
            self.model.recompute(group)
            self.run(lambda: self.impl.recompute(group))
            self.waiting.insert(0, group)
            self._check()
