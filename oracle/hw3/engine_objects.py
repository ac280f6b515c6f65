"""How a Python implementation's objects are read white-box, with the C structs' field names: the one definition,
used for an implementation in the grader's own process (adapters.PythonAdapter, `pagedcheck fuzz`'s). A graded
submission's objects are never read (pyremote.py: what they say is the submission's word, unread.py).

    state = read_engine(engine, owners)   # a dict of ints and lists; Unreadable when a field has no C shape
"""

import array
import operator

from oracle.hw3.spec import L1_PT_SIZE
from oracle.serve import text as _text

MAX_ITEMS = 1 << 21  # entries read from one list the submission owns (ref_count, an L2 table)


class Unreadable(Exception):
    """A field the contract names is missing or has a shape the C structs cannot have."""


def _int(value: object, what: str) -> int:
    """An int the way the grader compares it: an int or anything that is one (operator.index)."""
    if type(value) is int or type(value) is bool:
        number = int(value)
    else:
        try:
            number = operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            raise Unreadable(f"{what} is {_text(repr(value), 80)}, not an integer") from None
    if not -(1 << 63) <= number < 1 << 63:
        raise Unreadable(f"{what} is {_text(number, 80)}, beyond 64 bits")
    return number


def _ints(values: object, what: object) -> list[int]:
    if type(values) in (list, tuple) and len(values) <= MAX_ITEMS:  # type: ignore[arg-type]
        try:
            return array.array("q", values).tolist()  # type: ignore[arg-type]
        except (TypeError, OverflowError):
            pass  # the loop below names the entry
    out = []
    for i, value in enumerate(values):  # type: ignore[call-overload]
        if i >= MAX_ITEMS:
            raise Unreadable(f"{what} has more than {MAX_ITEMS} entries")
        if type(value) is int and -(1 << 63) <= value < 1 << 63:
            out.append(value)
        else:
            out.append(_int(value, f"{what}[{i}]"))
    return out


def read_table(seq: object, slots: int | None = L1_PT_SIZE) -> list:
    """seq.block_table (its first `slots` entries, all when None): None or a list of ints per entry."""
    table = list(seq.block_table)[:slots] if slots is not None else list(seq.block_table)  # type: ignore[attr-defined]
    return [None if l2 is None else _ints(l2, _EntryName(seq, l1)) for l1, l2 in enumerate(table)]


class _EntryName:
    """`seq <id> block_table[<l1>]`, worded only when a message needs it (most reads need none)."""

    def __init__(self, seq: object, l1: int):
        self.seq, self.l1 = seq, l1

    def __str__(self) -> str:
        return f"seq {_text(getattr(self.seq, 'seq_id', '?'), 40)} block_table[{self.l1}]"


def read_engine(engine: object, owners: dict[int, object]) -> dict:
    """The engine's counters, ref_count and active list, read white-box with the C field names; `owners`
    maps id(node) to the sequence create or fork returned (container_of). Raises Unreadable, AttributeError
    or TypeError when the objects do not have the contract's shape.

    Checking prev at every node also ends every cycle: the first node met twice is met from a different
    node the second time, so its prev cannot match.
    """
    head = engine.active_seqs  # type: ignore[attr-defined]
    sequences: list = []
    list_error = None
    prev, node = head, head.next
    while node is not head:
        seq = owners.get(id(node))
        if node.prev is not prev:
            list_error = f"{_position(len(sequences), seq)}: prev does not point to the node before it"
            break
        if seq is None:
            list_error = f"{_position(len(sequences), seq)}: the node belongs to no sequence that create or fork returned"
            break
        sequences.append([_int(seq.seq_id, "seq_id"), _int(seq.kv_count, "kv_count"), read_table(seq)])  # type: ignore[attr-defined]
        prev, node = node, node.next
    else:
        if head.prev is not prev:
            list_error = "head.prev is not the last node"
    return {
        "total": _int(engine.total_local_blocks, "total_local_blocks"),  # type: ignore[attr-defined]
        "free": _int(engine.free_local_blocks, "free_local_blocks"),  # type: ignore[attr-defined]
        "ref_count": _ints(engine.ref_count, "ref_count"),  # type: ignore[attr-defined]
        "sequences": sequences,
        "list_error": list_error,
    }


def _position(index: int, seq: object) -> str:
    return f"position {index}" + (f" (seq {seq.seq_id})" if seq is not None else "")  # type: ignore[attr-defined]
