"""Hostile Python submission (review 10), on top of tests/broken/free_count_not_incremented.patch (a free never raises the
free count, so later creates are refused for want of blocks the engine has). Aimed at oracle/hw3/refusal_rule.py:
a create refused after calls that moved the free count is the free count's, unless the create's own item's programs,
run as graded, show a create refused before any call moved the count; then it is the create's own (create_free's).

This engine plants that showing: the one create of create_free's programs that is granted on a fresh engine with
nothing moved yet and that no other item's program makes first (create_sequence_cap.txt's 4096 records, on 300
blocks) is refused. It costs create_free, which a course may weigh less than free_count; every refusal the free
count's bug makes is then read as create_free's too, and free_count's item passes excused."""

_counting_wrong = create_sequence
_moved = False


def create_sequence(engine, seq_id, initial_kv_len):
    global _moved
    if engine is not None and not _moved and initial_kv_len == 4096:
        return None
    got = _counting_wrong(engine, seq_id, initial_kv_len)
    _moved = _moved or got is not None
    return got
