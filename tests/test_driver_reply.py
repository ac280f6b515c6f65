"""oracle.hw3.c.driver_reply: the reading of the C driver's replies, on plain bytes as the protocol lays them out
(driver_reply's docstring): what an honest reply says, and each way a reply from the submission's process can
fail to be the protocol (BadReply, never a wrong reading)."""

import struct

import pytest

from oracle.hw3.c.driver_reply import REPLY_BOUND, Pointer, parse_reply
from oracle.native.native_heap import HeapFacts
from oracle.native.reply_pipe import BadReply, Fatal, reply_length

_RESULT = struct.Struct("<qIIBQQQ")  # ret, call allocations, call frees, fault fired, allocations, live blocks, bytes


def _reply(status: int, body: bytes) -> bytes:
    return struct.pack("<IB", 5 + len(body), status) + body


def _fatal(status: int, words: bytes, declared: int | None = None) -> bytes:
    return _reply(status, struct.pack("<H", len(words) if declared is None else declared) + words)


def test_a_result_says_the_return_value_and_the_process_own_heap_counts() -> None:
    data = _reply(0, _RESULT.pack(-1, 3, 2, 1, 99, 7, 448))
    assert reply_length(data, REPLY_BOUND) == len(data)
    assert parse_reply(data) == (-1, HeapFacts(3, 2, True, 7, 448))
    assert parse_reply(_reply(0, _RESULT.pack(0x7F00DEAD0010, 0, 0, 0, 0, 0, 0))) == (0x7F00DEAD0010, HeapFacts(0, 0, False, 0, 0))


@pytest.mark.parametrize("status, heap", [(2, False), (4, True)])
def test_a_fatal_reply_gives_the_driver_words_and_whether_the_heap_was_corrupted(status: int, heap: bool) -> None:
    assert parse_reply(_fatal(status, b"free(0x10): not a live block")) == Fatal("free(0x10): not a live block", heap)
    assert parse_reply(_fatal(status, b"\xff\xfe bytes")) == Fatal("\ufffd\ufffd bytes", heap)


@pytest.mark.parametrize("length", [0, 5, REPLY_BOUND + 1, 2**32 - 1])
def test_a_length_no_honest_reply_has_is_refused_before_the_rest_is_read(length: int) -> None:
    with pytest.raises(BadReply, match=f"^a length of {length} bytes$"):
        reply_length(struct.pack("<I", length), REPLY_BOUND)


@pytest.mark.parametrize("data, words", [
    (_reply(3, _RESULT.pack(0, 0, 0, 0, 0, 0, 0)), "^status 3$"),  # a probe's status, in a graded call
    (_reply(7, b""), "^status 7$"),
    (_reply(0, _RESULT.pack(0, 0, 0, 0, 0, 0, 0)[:-1]), f"^{4 + _RESULT.size} bytes$"),
    (_reply(0, _RESULT.pack(0, 0, 0, 0, 0, 0, 0) + b"x"), f"^{6 + _RESULT.size} bytes$"),
    (_reply(2, b"\x05"), "^a fatal reply of 6 bytes$"),
    (_fatal(4, b"short", declared=400), "^a text of 400 bytes in a reply of 12$"),
])
def test_a_reply_that_is_not_the_protocol_is_a_bad_reply(data: bytes, words: str) -> None:
    with pytest.raises(BadReply, match=words):
        parse_reply(data)


def test_a_pointer_shows_its_address_in_hex() -> None:
    assert repr(Pointer(0x7F00DEAD0010, generation=3)) == "Pointer(0x7f00dead0010)"
