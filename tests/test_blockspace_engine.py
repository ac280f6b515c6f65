"""Our blockspace engine (engine/blockspace) against the model: the state machine under Hypothesis, the fuzz
runner with the paper's memory-waste figure, and the engine's own refusals."""

import pytest
from hypothesis import settings

from engine.blockspace import (AllocStatus, BlockAllocator, BlockSpaceManager, Device, Sequence, SequenceGroup,
                               SequenceStatus)
from oracle.blockspace import FAMILY, load_adapter
from oracle.blockspace.machine import machine_for
from oracle.runner import fuzz

TestEngineAgainstModel = machine_for(load_adapter("engine")).TestCase
TestEngineAgainstModel.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)


def test_fuzz_is_green_and_reaches_every_call_and_boundary():
    report = fuzz(FAMILY, "engine", load_adapter("engine"), examples=200, steps=40, seed=0)
    assert report.passed, report.divergence
    assert {"admit", "append", "fork", "free", "swap_out", "swap_in", "recompute"} <= set(report.stats.rules)
    events = report.stats.events
    for event in ("can_allocate_OK", "can_allocate_LATER", "can_allocate_NEVER", "copy_on_write", "append_refused",
                  "swap_out_ok", "swap_out_refused", "swap_in_ok", "swap_in_refused"):
        assert events[event] > 0, event
    assert 0 < events["gpu_slots_filled"] < events["gpu_slots_allocated"]
    assert FAMILY.describe_run(report.stats).startswith("memory waste: ")


def test_the_waste_is_at_most_one_partly_filled_block_per_sequence():
    """The paper's near-zero waste: in every checked state of a run, the GPU slots holding no token are fewer
    than block_size for each live sequence (only a last block is partly filled; shared blocks count once)."""
    from oracle.blockspace.driver import Driver

    driver, worst = Driver(load_adapter("engine")()), []
    driver.start(4, 64, 16, 0.0)
    for round_ in range(30):
        driver.arrive(1 + round_ % 9, 1 + round_ % 3)
        driver.admit()
        for i in list(driver.model.seqs):
            driver.append(i)
        if round_ % 4 == 3:
            driver.fork(next(iter(driver.model.seqs)))
        if round_ % 5 == 4:
            driver.free(next(iter(driver.model.seqs)))
        slots, filled = driver.model.waste()
        live = sum(1 for s in driver.model.seqs.values() if s.table)
        worst.append((slots - filled, 3 * live))
    assert all(empty <= bound for empty, bound in worst) and worst[-1][0] > 0


def test_the_engine_answers_never_later_and_ok_and_raises_when_a_device_runs_out():
    manager = BlockSpaceManager(block_size=4, num_gpu_blocks=4, num_cpu_blocks=1, watermark=0.25)
    big, small = SequenceGroup("a", [Sequence(0, list(range(16)))]), SequenceGroup("b", [Sequence(1, [1, 2, 3])])
    assert manager.can_allocate(big) == AllocStatus.NEVER and manager.can_allocate(small) == AllocStatus.OK
    manager.allocate(small)
    small.seqs[0].status = SequenceStatus.RUNNING
    assert manager.get_block_table(small.seqs[0]) == [0] and manager.get_num_free_gpu_blocks() == 3
    mid = SequenceGroup("c", [Sequence(2, list(range(12)))])
    assert manager.can_allocate(mid) == AllocStatus.LATER
    with pytest.raises(ValueError, match="double free"):
        manager.gpu_allocator.free(manager.gpu_allocator.blocks[1])
    manager.cpu_allocator.allocate()
    with pytest.raises(ValueError, match="out of cpu blocks"):
        manager.swap_out(small)


def test_the_engines_sequences_and_groups_hold_what_the_manager_reads():
    seq = Sequence(7, (1, 2, 3))
    assert (seq.seq_id, seq.get_token_ids(), seq.get_len(), seq.status) == (7, [1, 2, 3], 3, SequenceStatus.WAITING)
    seq.append_token_id(4)
    assert seq.token_ids == [1, 2, 3, 4] and not seq.is_finished()
    done = Sequence(8, [])
    done.status = SequenceStatus.FINISHED
    group = SequenceGroup("req", [seq, done])
    assert group.request_id == "req" and done.is_finished()
    assert group.get_seqs() == [seq, done] and group.get_seqs(SequenceStatus.FINISHED) == [done]
    assert group.num_seqs(SequenceStatus.WAITING) == 1 and group.num_seqs() == 2


def test_can_allocate_sizes_the_prompt_of_the_waiting_sequence_and_free_of_an_unknown_one_is_a_no_op():
    manager = BlockSpaceManager(block_size=4, num_gpu_blocks=100, num_cpu_blocks=0)
    assert manager.watermark_blocks == 1  # the default watermark: 1% of the GPU blocks
    finished, waiting = Sequence(0, list(range(400))), Sequence(1, [1])
    finished.status = SequenceStatus.FINISHED
    assert manager.can_allocate(SequenceGroup("a", [finished, waiting])) == AllocStatus.OK
    manager.free(waiting)
    assert manager.get_num_free_gpu_blocks() == 100
    assert BlockAllocator(Device.CPU, 3).num_blocks == 3


def test_can_swap_in_counts_one_new_block_per_swapped_sequence_only():
    """A group whose other sample finished asks room for its swapped blocks and one block per swapped sequence:
    the finished one asks nothing (2 blocks of 2 free: OK, not LATER)."""
    manager = BlockSpaceManager(block_size=4, num_gpu_blocks=4, num_cpu_blocks=4, watermark=0.0)
    group = SequenceGroup("a", [Sequence(0, [1, 2, 3, 4]), Sequence(1, [1, 2, 3, 4])])
    manager.allocate(group)
    for seq in group.seqs:
        seq.status = SequenceStatus.RUNNING
    manager.free(group.seqs[1])
    group.seqs[1].status = SequenceStatus.FINISHED
    manager.swap_out(group)
    group.seqs[0].status = SequenceStatus.SWAPPED
    other = SequenceGroup("b", [Sequence(2, list(range(8)))])
    manager.allocate(other)
    assert manager.get_num_free_gpu_blocks() == 2
    assert manager.can_swap_in(group, 0) == AllocStatus.OK
