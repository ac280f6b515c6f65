"""What a Python submission's server (pyserve.py) replies, checked field by field before the grader uses it.

A reply is JSON the child wrote, decoded by oracle/reply.py (strict and bounded, plain data only: never eval,
never pickle); here every value is checked for the type and shape the protocol gives it; anything else raises
BadReply.
"""

import array
from typing import Any

from oracle.hw3.observation import EngineState, SequenceState


class BadReply(Exception):
    """The reply is not what the protocol says: the server was broken by the code it runs."""


def integer(value: Any, what: str) -> int:
    if type(value) is not int or not -(1 << 63) <= value < 1 << 63:
        raise BadReply(f"{what} is not a 64-bit integer")
    return value


def integers(value: Any, what: str) -> tuple[int, ...]:
    if type(value) is not list:
        raise BadReply(f"{what} is not a list")
    try:
        array.array("q", value)  # JSON numbers are ints or floats: this refuses the floats and the rest
    except (TypeError, OverflowError):
        raise BadReply(f"{what} is not a list of 64-bit integers") from None
    return tuple(value)


def text(value: Any, what: str, limit: int = 2000) -> str:
    if type(value) is not str:
        raise BadReply(f"{what} is not a string")
    return value[:limit]


def table(value: Any, what: str) -> tuple[tuple[int, ...] | None, ...]:
    if type(value) is not list:
        raise BadReply(f"{what} is not a list")
    return tuple(None if l2 is None else integers(l2, what) for l2 in value)


def engine_state(value: Any) -> EngineState:
    """An EngineState from pyserve.read_engine's dict."""
    if type(value) is not dict or type(value.get("sequences")) is not list:
        raise BadReply("the engine state is not an object with a list of sequences")
    sequences = []
    for seq in value["sequences"]:
        if type(seq) is not list or len(seq) != 3:
            raise BadReply("a sequence is not [seq_id, kv_count, block_table]")
        sequences.append(SequenceState(integer(seq[0], "seq_id"), integer(seq[1], "kv_count"), table(seq[2], "block_table")))
    error = value.get("list_error")
    return EngineState(
        total_local_blocks=integer(value.get("total"), "total"),
        free_local_blocks=integer(value.get("free"), "free"),
        ref_count=integers(value.get("ref_count"), "ref_count"),
        sequences=tuple(sequences),
        list_error=None if error is None else text(error, "list_error"),
    )


def handle(value: Any) -> int | None:
    """A handle the server gave an object the submission returned (None for NULL)."""
    if value is None:
        return None
    if type(value) is not int or value <= 0:
        raise BadReply("a handle is not a positive integer")
    return value


def returned(value: Any) -> int | bool | str:
    """What an int call returned: an int, a bool, or the text of anything else."""
    if type(value) is bool:
        return value
    if type(value) is int:
        return integer(value, "the return value")
    return text(value, "the return value", 200)

