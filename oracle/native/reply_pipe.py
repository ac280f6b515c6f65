"""The driver's reply pipe: a reply's frame, and waiting on the pipe while valgrind's log (or the grader's
ledger) is served.

Every reply is framed `length:u32 status:u8 ...` (little-endian), its length counting itself. A reply comes from
the submission's process, so it is untrusted: its length is refused before the rest is read when it is over what
any honest reply of the family's layout holds (the bound the family passes in), and a reply that does not parse
is the submission's failure, "a reply the grader cannot read". A fatal reply is the core driver's (driver_heap.c's
fatal_as: status 2, or 4 for a heap found corrupted, then `len:u16` bytes of text; the driver exits after it);
what follows any other status is the family's layout.
"""

import os
import select
import struct
import time
from dataclasses import dataclass
from typing import Protocol

_U16, _U32 = struct.Struct("<H"), struct.Struct("<I")
FATAL, HEAP = 2, 4  # driver_heap.c's REPLY_FATAL and REPLY_HEAP
SHORTEST = 6  # the length field, a status byte, and at least one byte of the family's layout
UNREADABLE = "sent a reply the grader cannot read"


class BadReply(Exception):
    """A driver reply that is not the protocol's (its text says where)."""


@dataclass(frozen=True, slots=True)
class Fatal:
    """A fatal reply (the driver exits after it): its words, and whether it is a memory error (status 4)."""

    words: str
    heap: bool


class Served(Protocol):
    """What the grader serves while it waits on the pipe: valgrind's log (oracle/native/log_channel.py) or the
    ledger's listener (heap_notify.py), readable on `fd`, served by `drain()`."""

    fd: int

    def drain(self) -> None: ...


def reply_length(head: bytes, bound: int) -> int:
    """The length a reply's first four bytes declare; BadReply when no honest reply is that long (over `bound`,
    the family's longest)."""
    (length,) = _U32.unpack_from(head)
    if not SHORTEST <= length <= bound:
        raise BadReply(f"a length of {length} bytes")
    return length


def fatal_reply(data: bytes) -> Fatal | None:
    """The fatal reply `data` is (a whole reply, its length field included), or None when its status is another.
    BadReply when its text does not fit in it."""
    status = data[4]
    if status not in (FATAL, HEAP):  # HEAP: a memory error (a double free, malloc aborting, off the fence)
        return None
    try:
        (n,) = _U16.unpack_from(data, 5)
    except struct.error:
        raise BadReply(f"a fatal reply of {len(data)} bytes") from None
    if 7 + n > len(data):
        raise BadReply(f"a text of {n} bytes in a reply of {len(data)}")
    return Fatal(data[7 : 7 + n].decode(errors="replace"), status == HEAP)


def readable_within(fd: int, wait: float, log: Served | None = None) -> bool:
    """Whether `fd` is readable within `wait` s, serving `log` meanwhile (valgrind blocks on a full log, and the
    driver with it; the driver waits for the ledger's answer to each mapping call)."""
    if log is None:
        return bool(select.select([fd], [], [], wait)[0])
    deadline = time.monotonic() + wait
    while True:
        ready = select.select([fd, log.fd], [], [], max(deadline - time.monotonic(), 0))[0]
        if log.fd in ready:
            log.drain()
        if fd in ready:
            return True
        if time.monotonic() >= deadline:
            return False


def drained(fd: int, timeout: float, log: Served | None = None) -> bool:
    """Reads fd to end of file within timeout (serving `log` meanwhile); whether it got there."""
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        ready = select.select([fd] + ([log.fd] if log else []), [], [], left)[0]
        if log is not None and log.fd in ready:
            log.drain()
        if fd in ready and not os.read(fd, 65536):
            if log is not None:
                log.drain()
            return True
    return False
