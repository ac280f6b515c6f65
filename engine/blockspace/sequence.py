"""Sequence and SequenceGroup: what the scheduler hands the block manager (the parts it reads).

A group is one request: its sequences (parallel samples, beams) are scheduled, swapped and preempted together.
"""

from enum import Enum


class SequenceStatus(Enum):
    WAITING = "waiting"
    RUNNING = "running"
    SWAPPED = "swapped"
    FINISHED = "finished"


class Sequence:
    def __init__(self, seq_id: int, token_ids: list[int]):
        self.seq_id = seq_id
        self.token_ids = list(token_ids)
        self.status = SequenceStatus.WAITING

    def get_token_ids(self) -> list[int]:
        return self.token_ids

    def get_len(self) -> int:
        return len(self.token_ids)

    def append_token_id(self, token_id: int) -> None:
        self.token_ids.append(token_id)

    def is_finished(self) -> bool:
        return self.status == SequenceStatus.FINISHED


class SequenceGroup:
    def __init__(self, request_id: str, seqs: list[Sequence]):
        self.request_id = request_id
        self.seqs = list(seqs)

    def get_seqs(self, status: SequenceStatus | None = None) -> list[Sequence]:
        return [seq for seq in self.seqs if status is None or seq.status == status]

    def num_seqs(self, status: SequenceStatus | None = None) -> int:
        return len(self.get_seqs(status))
