"""oracle/kv_worker.py: what a simulated worker's blocks hold follows only the writes, copies and moves it is told
of, and the first block that does not hold what the model says is named with both contents."""

from oracle.kv_worker import KV_CONTENTS, Worker


def test_writes_copies_and_moves_carry_the_tokens():
    worker = Worker(("gpu", "cpu"))
    worker.write("gpu", [(3, (0, 1, 2, 3)), (5, (4,))])
    worker.write_slot("gpu", 5, 1, 9)  # the second slot of block 5
    worker.copy("gpu", "gpu", [(5, 6)])  # copy-on-write
    worker.write_slot("gpu", 6, 1, 7)  # overwrites the copy's second slot
    worker.copy("gpu", "cpu", [(3, 0), (4, 1)])  # a swap; block 4 was never written
    assert worker.blocks == {"gpu": {3: (0, 1, 2, 3), 5: (4, 9), 6: (4, 7)}, "cpu": {0: (0, 1, 2, 3), 1: None}}
    worker.write_slot("cpu", 1, 0, 8)  # a slot of a block that holds nothing yet
    assert worker.blocks["cpu"][1] == (8,)


def test_the_first_block_not_holding_the_models_tokens_is_the_difference():
    worker = Worker(("gpu",))
    worker.write("gpu", [(3, (0, 1))])
    assert worker.difference([("seq 0 block_table[0]", "gpu", 3, (0, 1))]) is None
    found = worker.difference([("seq 0 block_table[0]", "gpu", 3, (0, 1)), ("seq 1 block_table[0]", "gpu", 4, (5,))])
    assert (found.aspect, found.location) == (KV_CONTENTS, "seq 1 block_table[0] (gpu block 4)")
    assert (found.expected, found.got) == ("the KV of tokens [5]", "nothing")
