"""The blockspace driver's checks (oracle/blockspace/driver.py), each made to fire by a manager that breaks one
fact, and named by its aspect and rule: our engine with one method changed, run in-process."""

import pytest

from engine.blockspace import AllocStatus, BlockSpaceManager
from oracle.blockspace.adapter import Adapter
from oracle.blockspace.driver import Driver
from oracle.checked import Divergence


def diverges(manager: type, steps) -> Divergence:
    driver = Driver(Adapter(manager))
    with pytest.raises(Divergence) as caught:
        driver.start(4, 8, 8, 0.0)
        steps(driver)
    return caught.value


def two_sequences(driver: Driver) -> None:
    driver.arrive(6)
    driver.arrive(5)
    driver.admit()
    driver.admit()


class AllocatesWhenAsked(BlockSpaceManager):
    def can_allocate(self, seq_group):
        self.gpu_allocator.allocate()
        return AllocStatus.OK


class ReturnsJunkPairs(BlockSpaceManager):
    def append_slots(self, seq, num_lookahead_slots):
        return "not pairs"


class TableOutOfRange(BlockSpaceManager):
    def get_block_table(self, seq):
        return [99] * len(self.block_tables[seq.seq_id])


class CannotBeRead(BlockSpaceManager):
    def get_num_free_cpu_blocks(self):
        raise RuntimeError("no")


class RaisesWhenBuilt(BlockSpaceManager):
    def __init__(self, *args):
        raise MemoryError("too big")


class HandsOutAHeldBlock(BlockSpaceManager):
    def append_slots(self, seq, num_lookahead_slots):
        table = self.block_tables[seq.seq_id]
        other = next(t for s, t in self.block_tables.items() if s != seq.seq_id)
        if len(table) < self._num_blocks(seq):
            table.append(other[0])  # a block another sequence holds
            other[0].ref_count += 1
            return []
        return super().append_slots(seq, num_lookahead_slots)


class SwapPairsCrossed(BlockSpaceManager):
    def swap_out(self, seq_group):
        pairs = super().swap_out(seq_group)
        return [(a, b) for (a, _), (_, b) in zip(pairs, pairs[::-1])]


class RefCountsOffByOne(BlockSpaceManager):
    def fork(self, parent_seq, child_seq):
        super().fork(parent_seq, child_seq)
        self.block_tables[child_seq.seq_id][0].ref_count += 1


@pytest.mark.parametrize("manager, steps, aspect, rule, words", [
    (AllocatesWhenAsked, two_sequences, "unchanged", "block_table", "can_allocate (a query)"),
    (ReturnsJunkPairs, lambda d: (two_sequences(d), d.append(0)), "crash", "copy_on_write", "not a list of (src, dst)"),
    (TableOutOfRange, two_sequences, "sharing", "sharing", "a gpu block id in 0..7"),
    (CannotBeRead, lambda d: None, "crash", "block_table", "state unreadable: RuntimeError: no"),
    (RaisesWhenBuilt, lambda d: None, "crash", "block_table", "the constructor raised MemoryError: too big"),
    (HandsOutAHeldBlock, lambda d: (two_sequences(d), d.append(1), d.append(1), d.append(1), d.append(1)),
     "shared write", "copy_on_write", "held by seq 0 too"),
    (SwapPairsCrossed, lambda d: (d.arrive(9), d.admit(), d.swap(0, out=True)), "swap mapping", "swap", "mapped by"),
    (RefCountsOffByOne, lambda d: (two_sequences(d), d.fork(0)), "ref counts", "sharing",
     "(the live tables holding it)"),
])
def test_each_check_fires_with_its_aspect_and_rule(manager, steps, aspect, rule, words):
    divergence = diverges(manager, steps)
    assert (divergence.difference.aspect, divergence.rule) == (aspect, rule), str(divergence)
    assert words in str(divergence)


def test_a_table_reordered_between_calls_is_caught_by_the_contents_a_worker_holds():
    """A table is only names: a manager may number blocks as it likes, but a block must keep its KV. One that
    swaps two entries while it appends has seq 0's logical block 0 name the block holding tokens 4..7."""

    class Reorders(BlockSpaceManager):
        def append_slots(self, seq, num_lookahead_slots):
            table = self.block_tables[seq.seq_id]
            table[0], table[1] = table[1], table[0]
            return super().append_slots(seq, num_lookahead_slots)

    divergence = diverges(Reorders, lambda d: (d.arrive(8), d.admit(), d.append(0)))
    assert (divergence.difference.aspect, divergence.rule) == ("kv contents", "copy_on_write"), str(divergence)
    assert "block_table[0] (gpu block 1): expected the KV of tokens [0, 1, 2, 3], got the KV of tokens [4, 5, 6, 7]" \
        in str(divergence)
