"""oracle.hw3.c.driver_reply: the reading of the C driver's replies, on plain bytes as the protocol lays them out
(driver_reply's docstring): what an honest reply says, and each way a reply from the submission's process can
fail to be the protocol (BadReply, never a wrong observation)."""

import struct

import pytest

from oracle.hw3.c.driver_reply import MAX_OBSERVED_BLOCKS, BadReply, Pointer, parse_engine, pool_changes
from oracle.hw3.observation import WILD, EngineState, ImplementationFailure, SequenceState
from oracle.hw3.spec import L1_PT_SIZE, L2_PT_SIZE


def _text(words: bytes) -> bytes:
    return struct.pack("<H", len(words)) + words


def _chunks(*chunks: tuple[int, bytes]) -> bytes:
    return struct.pack("<I", len(chunks)) + b"".join(struct.pack("<I", index) + data for index, data in chunks)


def test_the_changed_chunks_of_the_pool_are_read_where_they_lie() -> None:
    data = b"head" + _chunks((0, bytes(range(64))), (2, b"\xff" * 16)) + b"rest"
    changes, at = pool_changes(data, 4, 64 * 2 + 16)  # the last chunk ends with the region
    assert changes == [(0, 64, 12), (128, 144, 80)]
    assert data[12:76] == bytes(range(64)) and data[80:96] == b"\xff" * 16 and data[at:] == b"rest"
    assert pool_changes(_chunks(), 0, None) == ([], 4)


@pytest.mark.parametrize("data, region, words", [
    (struct.pack("<I", 1000) + b"\0" * 16, 4096, "1000 chunks of the pool"),
    (_chunks((64, b"\0" * 64)), 4096, "chunk 64, past the pool"),
    (_chunks((1, b"\0" * 10)), 4096, "a chunk cut short"),
])
def test_chunks_that_are_not_the_protocol_are_a_bad_reply(data: bytes, region: int, words: str) -> None:
    with pytest.raises(BadReply, match=words):
        pool_changes(data, 0, region)


def _engine(total: int, free: int, ref: tuple[int, ...], sequences: bytes, n_seq: int, list_error: bytes = b"") -> bytes:
    head = struct.pack(f"<BiiI{len(ref)}i", 1, total, free, len(ref), *ref)
    return head + struct.pack("<I", n_seq) + sequences + _text(list_error)


def test_an_engine_with_its_sequences_tables_and_a_wild_slot_is_read() -> None:
    table = tuple(range(100, 100 + L2_PT_SIZE))
    # seq 7: L1 slot 0 an L2 table, slot 3 wild (its pointer faulted), the rest NULL; seq 9: no table at all
    seq7 = struct.pack("<iiBHH", 7, 5, 1, 0b1001, 0b1000) + struct.pack(f"<{L2_PT_SIZE}i", *table)
    seq9 = struct.pack("<iiBHH", 9, 0, 0, 0, 0)
    data = b"xx" + _engine(4, 3, (1, 0, 0, 0), seq7 + seq9, 2, b"prev of seq 9 is not seq 7")
    expected_table = (table, None, None, WILD) + (None,) * (L1_PT_SIZE - 4)
    assert parse_engine(data, 2, made=1) == EngineState(
        4, 3, (1, 0, 0, 0), (SequenceState(7, 5, expected_table), SequenceState(9, 0, ())), "prev of seq 9 is not seq 7")
    assert parse_engine(_engine(1, 1, (0,), b"", 0), 0, made=0) == EngineState(1, 1, (0,), (), None)


def test_no_engine_and_an_unreadable_one_are_said_as_such() -> None:
    assert parse_engine(b"\0", 0, made=0) is None
    with pytest.raises(ImplementationFailure, match="^engine->active_seqs points outside your memory$"):
        parse_engine(b"\x02" + _text(b"engine->active_seqs points outside your memory"), 0, made=0)


def test_counts_no_honest_reply_holds_are_a_bad_reply() -> None:
    too_many_blocks = struct.pack("<BiiI", 1, 1, 1, MAX_OBSERVED_BLOCKS + 1) + b"\0" * 64
    with pytest.raises(BadReply, match=f"a ref_count of {MAX_OBSERVED_BLOCKS + 1} entries"):
        parse_engine(too_many_blocks, 0, made=0)
    cut_short = struct.pack("<BiiI", 1, 1, 1, 10) + b"\0" * 8
    with pytest.raises(BadReply, match="a ref_count of 10 entries"):
        parse_engine(cut_short, 0, made=0)
    seq = struct.pack("<iiBHH", 1, 0, 0, 0, 0)
    with pytest.raises(BadReply, match="3 sequences, after 1 creates and forks"):
        parse_engine(_engine(1, 1, (0,), seq * 3, 3), 0, made=1)


def test_a_pointer_shows_its_address_in_hex() -> None:
    assert repr(Pointer(0x7F00DEAD0010, generation=3)) == "Pointer(0x7f00dead0010)"
