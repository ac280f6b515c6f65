"""oracle/difference.py: one Difference for every family, its text made last by the wording of the family that
owns its aspect (plain otherwise)."""

import pytest

import oracle.hw3.difference  # noqa: F401  (words hw3's aspects)
import oracle.prefix.difference  # noqa: F401  (words the prefix family's)
from oracle.difference import CRASH, Difference, word


def test_an_aspect_no_family_words_reads_plainly() -> None:
    assert str(Difference("unworded", "seq 2 kv_count", 3, 4)) == "seq 2 kv_count: expected 3, got 4"
    assert str(Difference("unworded", "ref_count[1]", 1, 0, note="a block the call took")) == (
        "ref_count[1]: expected 1, got 0 (a block the call took)")
    assert str(Difference("unworded", "", [1], [2])) == "unworded: expected [1], got [2]"  # no location: the aspect


def test_each_family_words_its_own_aspects() -> None:
    assert str(Difference("guard", "guard zone after the pool: byte 3", "0x5a", "0x00")) == (
        "guard zone after the pool: byte 3 overwritten with 0x00")
    assert str(Difference("call_allocations", "heap", 0, 2)) == (
        "heap: a failing call must allocate nothing, it allocated 2 time(s)")
    assert str(Difference("ref count", "block 3", 1, 2)) == "ref count: block 3: expected 1, got 2"
    assert str(Difference("block_table", "req 0 block_table[1]", 5, 3)) == "req 0 block_table[1]: expected 5, got 3"


def test_a_crash_is_what_happened_and_render_prefixes_the_call() -> None:
    crash = Difference(CRASH, "", None, "crashed with SIGSEGV in append_kv")
    assert str(crash) == "crashed with SIGSEGV in append_kv"
    assert crash.render("append_kv(engine, 1, 7)") == "append_kv(engine, 1, 7): crashed with SIGSEGV in append_kv"


def test_two_families_cannot_word_one_aspect() -> None:
    def other(difference: Difference) -> str:
        return "another wording"

    with pytest.raises(ValueError, match="the aspect 'guard' is worded by oracle.hw3.difference and "):
        word({"guard": other})
    assert str(Difference("guard", "guard zone", 0, 1)) == "guard zone overwritten with 1"  # unchanged
    word({"guard": oracle.hw3.difference._guard})  # the family again (a reloaded module): allowed
    assert str(Difference("guard", "guard zone", 0, 1)) == "guard zone overwritten with 1"
