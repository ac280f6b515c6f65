"""Drives a block manager class of vLLM v0's interface (BlockSpaceManager) by ids: the scheduler's side. The
sequences and groups it hands the manager are its own stand-ins, holding what a manager reads; a manager compares
a status with its own enum, so a stand-in status equals any value of the same name. Standard library only: it is
also the server of a graded submission in the sandboxed child (oracle/served.py), run as
`python3 -I -B adapter.py REQUESTS_FD REPLIES_FD ROOT MODULE [CLASS]`, on the core's loop (oracle/serve.py) and its
Failure (AdapterFailure: the manager raised, or its state could not be read)."""

import os
import sys
from typing import Any

if __name__ == "__main__":  # pragma: no cover  (in the child: the folder staged with oracle/serve.py)
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
from oracle.serve import AdapterFailure as Failure, call, serve_adapter  # noqa: E402 (standard library only)

METHODS = ("start", "arrive", "ask", "allocate", "add_token", "drop_token", "append_slots", "fork", "free", "swap",
           "recompute", "observe", "close")


class Status:
    """A sequence status equal to any enum member of the same name (a manager compares with its own enum)."""

    def __init__(self, name: str):
        self.name = name

    def __eq__(self, other: object) -> bool:
        return getattr(other, "name", other) == self.name

    def __hash__(self) -> int:
        return hash(self.name)


class Seq:
    """A sequence as a manager reads it, in vLLM's names (`data` too: vLLM reads its computed tokens there)."""

    def __init__(self, seq_id: int, tokens: list[int], block_size: int, status: str = "WAITING"):
        self.seq_id, self.token_ids, self.block_size, self.status = seq_id, list(tokens), block_size, Status(status)
        self.data, self.get_token_ids = self, lambda: self.token_ids
        self.get_len, self.get_num_computed_tokens = lambda: len(self.token_ids), lambda: len(self.token_ids) - 1
        self.is_finished = lambda: self.status.name.startswith("FINISHED")

    n_blocks = property(lambda self: -(-len(self.token_ids) // self.block_size))


class Group:
    """A sequence group (one request) as a manager reads it."""

    def __init__(self, request_id: str, seqs: list[Seq]):
        self.request_id, self.seqs, self.is_encoder_decoder = request_id, seqs, lambda: False

    def get_seqs(self, status: Any = None) -> list[Seq]:
        return [s for s in self.seqs if status is None or s.status == status]

    def num_seqs(self, status: Any = None) -> int:
        return len(self.get_seqs(status))


class Adapter:
    """One manager's run. Every call raises Failure when the manager raises."""

    def __init__(self, manager_class: Any):
        self.manager_class, self.manager = manager_class, None
        self.seqs: dict[int, Seq] = {}
        self.groups: dict[int, Group] = {}

    def _call(self, what: str, *args: Any) -> Any:
        return call(what, getattr(self.manager, what), *args)

    def _set(self, group: int, was: str, now: str) -> list[Seq]:
        seqs = self.groups[group].get_seqs(Status(was))
        for seq in seqs:
            seq.status = Status(now)
        return seqs

    def start(self, block_size: int, num_gpu: int, num_cpu: int, watermark: float) -> None:
        self.block_size = block_size
        self.manager = call("the constructor", self.manager_class, block_size, num_gpu, num_cpu, watermark)

    def arrive(self, group: int, seq_ids: list[int], tokens: list[int]) -> None:
        self.seqs.update({i: Seq(i, tokens, self.block_size) for i in seq_ids})
        self.groups[group] = Group(f"req-{group}", [self.seqs[i] for i in seq_ids])

    def ask(self, query: str, group: int) -> object:
        """can_allocate, can_append_slots, can_swap_out or can_swap_in: a bool, or the name of an AllocStatus."""
        got = self._call(query, self.groups[group], *((0,) if query in ("can_append_slots", "can_swap_in") else ()))
        return got if type(got) is bool else str(getattr(got, "name", got))[:100]

    def allocate(self, group: int) -> None:
        self._call("allocate", self.groups[group])
        self._set(group, "WAITING", "RUNNING")

    def add_token(self, i: int, token: int) -> None:
        self.seqs[i].token_ids.append(token)

    def drop_token(self, i: int) -> None:
        self.seqs[i].token_ids.pop()

    def append_slots(self, i: int) -> list:
        return list(self._call("append_slots", self.seqs[i], 0))

    def fork(self, parent: int, child: int, group: int) -> None:
        seq = self.seqs[child] = Seq(child, self.seqs[parent].token_ids, self.block_size, "RUNNING")
        self.groups.setdefault(group, Group(f"req-{group}", [])).seqs.append(seq)
        self._call("fork", self.seqs[parent], seq)

    def free(self, i: int) -> None:
        self._call("free", self.seqs[i])
        self.seqs[i].status = Status("FINISHED_STOPPED")

    def swap(self, group: int, out: bool) -> list:
        pairs = self._call("swap_out", self.groups[group]) if out else self._call("swap_in", self.groups[group])
        self._set(group, "RUNNING", "SWAPPED") if out else self._set(group, "SWAPPED", "RUNNING")
        return list(pairs.items() if isinstance(pairs, dict) else pairs)

    def recompute(self, group: int) -> None:
        for seq in self._set(group, "RUNNING", "WAITING"):
            self._call("free", seq)

    def observe(self, seq_ids: list[int]) -> dict:
        """The live sequences' tables, the free counts of both devices, and ref counts where blocks carry one."""
        try:
            tables = [[i, [int(b) for b in self.manager.get_block_table(self.seqs[i])]] for i in seq_ids]
            free = [int(self.manager.get_num_free_gpu_blocks()), int(self.manager.get_num_free_cpu_blocks())]
            refs, held = [], getattr(self.manager, "block_tables", None)
            for i in seq_ids if isinstance(held, dict) else ():
                table = held.get(i, ())
                if isinstance(table, list):
                    refs += [[i, p, b.ref_count] for p, b in enumerate(table)
                             if type(getattr(b, "ref_count", None)) is int]
        except Exception as exc:
            raise Failure(f"state unreadable: {type(exc).__name__}: {exc}") from None
        return {"tables": tables, "free": free, "ref_counts": refs}

    def close(self) -> None:
        self.manager = None


if __name__ == "__main__":  # pragma: no cover  (the server, run by the system Python in the sandbox)
    serve_adapter(sys.argv, Adapter, METHODS, default_attr="BlockSpaceManager")
