"""oracle/hw3/pyreply.py: every field of a Python child's reply checked for its type and shape; anything else is
BadReply (the submission's failure), never a traceback of the grader's."""

import pytest

from oracle.hw3.pyreply import BadReply, engine_state, handle, integer, integers, returned, table, text

GOOD = {"total": 4, "free": 3, "ref_count": [1, 0, 0, 0], "sequences": [[7, 1, [[0] + [-1] * 15] + [None] * 15]],
        "list_error": None}


def test_a_well_formed_engine_state_is_read_field_by_field():
    state = engine_state(GOOD)
    assert (state.total_local_blocks, state.free_local_blocks, state.ref_count) == (4, 3, (1, 0, 0, 0))
    assert state.sequences[0].seq_id == 7 and state.sequences[0].block_table[1] is None
    assert engine_state({**GOOD, "list_error": "x" * 5000}).list_error == "x" * 2000  # cut at its limit


@pytest.mark.parametrize("reply, says", [
    ([], "not an object with a list of sequences"),
    ({**GOOD, "sequences": {}}, "not an object with a list of sequences"),
    ({**GOOD, "sequences": [[1, 2]]}, "a sequence is not [seq_id, kv_count, block_table]"),
    ({**GOOD, "total": 1 << 64}, "total is not a 64-bit integer"),
    ({**GOOD, "free": True}, "free is not a 64-bit integer"),
    ({**GOOD, "ref_count": "1,0"}, "ref_count is not a list"),
    ({**GOOD, "ref_count": [1.5]}, "ref_count is not a list of 64-bit integers"),
    ({**GOOD, "sequences": [[7, 1, {}]]}, "block_table is not a list"),
    ({**GOOD, "list_error": 3}, "list_error is not a string"),
])
def test_a_malformed_engine_state_is_a_bad_reply(reply, says):
    with pytest.raises(BadReply) as bad:
        engine_state(reply)
    assert says in str(bad.value)


def test_handles_and_return_values():
    assert handle(None) is None and handle(3) == 3
    for bad in (0, -1, True, "3", 2.0):
        with pytest.raises(BadReply, match="not a positive integer"):
            handle(bad)
    assert returned(True) is True and returned(-1) == -1 and returned("x" * 500) == "x" * 200
    with pytest.raises(BadReply):
        returned(1 << 70)
    assert integer(5, "n") == 5 and integers([1, 2], "xs") == (1, 2) and text("ab", "t") == "ab"
    assert table([None, [1]], "t") == (None, (1,))
