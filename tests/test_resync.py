"""The re-synchronised model (oracle/hw3/resync.py): what it takes over from an implementation's observed state,
and which calls it can still judge when the counts it took over are no state any call leaves."""

import pytest

from oracle.difference import Difference
from oracle.hw3.compare import first_difference
from oracle.hw3.exact import WILD_WORDS
from oracle.hw3.difference import TABLE_SHAPE
from oracle.hw3.model import NOT_NULL, NULL
from oracle.hw3.observation import WILD, EngineState, Observation, SequenceState
from oracle.hw3.renamed import renamed_differences
from oracle.hw3.resync import ModelLost, TrackedModel, resync
from oracle.hw3.spec import BLOCK_SIZE, L1_PT_SIZE, L2_PT_SIZE, UNMAPPED

BLOCKS = 4


def seen_after_init(model: TrackedModel, ref_count: tuple[int, ...], free: int,
                    sequences: tuple[SequenceState, ...] = ()) -> Observation:
    return Observation(EngineState(BLOCKS, free, ref_count, sequences), model.pool_image())


def one_block_table(block: int) -> tuple[tuple[int, ...] | None, ...]:
    return ((block,) + (UNMAPPED,) * (L2_PT_SIZE - 1),) + (None,) * (L1_PT_SIZE - 1)


def test_a_negative_count_leaves_the_model_unable_to_judge_what_reads_the_counts() -> None:
    model = TrackedModel()
    model.llm_init(BLOCKS * BLOCK_SIZE)
    assert resync(model, seen_after_init(model, (-1515870811,) * BLOCKS, BLOCKS)) is None
    assert "ref_count[0] is -1515870811" in model.lost
    with pytest.raises(ModelLost, match="no block can be judged free or shared"):
        model.create_sequence(False, 1, 1)  # which block first fit takes, or whether any is free: unknown
    # calls decided before the counts are still judged
    assert model.create_sequence(True, 1, 1).returned == NULL  # a NULL engine
    assert model.create_sequence(False, 1, 0).returned == NULL  # a bad length
    assert model.append_kv(False, 9, 1).returned == -1  # an unknown id


def test_llm_init_makes_the_counts_known_again() -> None:
    model = TrackedModel()
    model.llm_init(BLOCKS * BLOCK_SIZE)
    resync(model, seen_after_init(model, (-1,) * BLOCKS, BLOCKS))
    model.llm_init(BLOCKS * BLOCK_SIZE)
    assert model.lost == ""
    assert model.create_sequence(False, 1, 1).returned == NOT_NULL


def test_counts_that_are_only_wrong_are_taken_over_and_judged_by() -> None:
    model = TrackedModel()
    model.llm_init(BLOCKS * BLOCK_SIZE)
    resync(model, seen_after_init(model, (0, 2, 0, 0), BLOCKS - 1))  # a stray count: another rule's bug
    assert model.lost == ""
    assert model.create_sequence(False, 1, 1).returned == NOT_NULL
    assert model.sequences[1].blocks == [0]  # first fit skips the block the implementation holds


def test_the_renamed_comparison_keeps_a_stray_count_the_model_took_over() -> None:
    """A block neither side maps keeps the count the model took over; before, it had to be 0, and every later
    call showed the same old difference again."""
    model = TrackedModel()
    model.llm_init(BLOCKS * BLOCK_SIZE)
    table = SequenceState(1, 1, one_block_table(0))
    resync(model, seen_after_init(model, (1, 0, 0, 7), BLOCKS - 2, (table,)))
    same = seen_after_init(model, (1, 0, 0, 7), BLOCKS - 2, (table,))
    assert [str(d) for d in renamed_differences(model, same, False) if d.location.startswith("ref_count")] == []
    other = seen_after_init(model, (1, 0, 0, 0), BLOCKS - 2, (table,))
    assert [str(d) for d in renamed_differences(model, other, False) if d.location.startswith("ref_count")] == [
        "ref_count[3]: expected 7, got 0"]


def test_a_wild_slot_is_taken_over_and_stops_only_the_calls_that_would_read_it() -> None:
    """A table with a wild L1 slot (its pointer faulted when read): the model takes it over, compares it as
    the same wild slot after later calls (no difference), and refuses to judge a call that reads it: free,
    fork of that sequence, an append whose record falls in that slot, llm_destroy."""
    model = TrackedModel()
    model.llm_init(BLOCKS * BLOCK_SIZE)
    model.create_sequence(False, 1, 1)
    table = one_block_table(0)[:3] + (WILD,) + (None,) * (L1_PT_SIZE - 4)
    seen = seen_after_init(model, (1, 0, 0, 0), BLOCKS - 1, (SequenceState(1, 1, table),))
    assert first_difference(model, seen, False) == Difference(TABLE_SHAPE, "seq 1 block_table[3]", "NULL", WILD_WORDS, seq=1)
    assert resync(model, seen) is None and model.sequences[1].wild == {3}
    assert first_difference(model, seen, False) is None
    assert model.append_kv(False, 1, 7).returned == 0  # record 1 is in slot 0
    assert model.create_sequence(False, 2, 1).returned == NOT_NULL  # create reads no other sequence
    assert model.fork_sequence(False, 2, 3).returned == NOT_NULL
    for call in (lambda: model.free_sequence(False, 1), lambda: model.fork_sequence(False, 1, 4),
                 lambda: model.llm_destroy(False)):
        with pytest.raises(ModelLost, match=r"block_table\[3\], a wild pointer"):
            call()
    model.sequences[1].values = [0] * (3 * L2_PT_SIZE * 16)  # its next record falls in slot 3
    with pytest.raises(ModelLost, match="append_kv would read"):
        model.append_kv(False, 1, 8)


def test_records_in_a_wild_slot_are_taken_over_as_holes_and_stop_the_calls_that_read_them() -> None:
    """A fork that shared its parent's L2 table, and the parent freed: the child's 20 records lie in a slot whose
    table is freed (wild). Before, the model could take over nothing of that state, and every later call was
    judged against a model that still held the child's blocks (a first-fit or free-count difference, the fork's
    bug's consequence). Now the records are holes in a wild slot: the counts are the implementation's, a create
    is judged on them, and a call that reads the slot (an append into it, free, fork, destroy) ends the run."""
    model = TrackedModel()
    model.llm_init(BLOCKS * BLOCK_SIZE)
    model.create_sequence(False, 2, 20)
    table = (WILD,) + (None,) * (L1_PT_SIZE - 1)
    seen = seen_after_init(model, (0, 0, 0, 0), BLOCKS, (SequenceState(2, 20, table),))
    assert resync(model, seen) is None
    assert model.sequences[2].blocks == [UNMAPPED, UNMAPPED] and model.sequences[2].wild == {0}
    assert first_difference(model, seen, False) is None  # the same wild slot: no difference
    assert next(renamed_differences(model, seen, False), None) is None
    assert model.create_sequence(False, 3, 1).returned == NOT_NULL and model.sequences[3].blocks == [0]
    for call in (lambda: model.append_kv(False, 2, 7), lambda: model.free_sequence(False, 2),
                 lambda: model.fork_sequence(False, 2, 4), lambda: model.llm_destroy(False)):
        with pytest.raises(ModelLost, match=r"block_table\[0\], a wild pointer"):
            call()


def test_a_record_with_no_block_is_taken_over_as_a_hole() -> None:
    """A create that mapped too few blocks (a failed search, or a short count): 20 records, logical block 1
    left -1. The model takes the hole over, so free and fork are judged by what they change (the child copies
    the hole), and an append whose record lands in it is the spec's append of an unmapped block: the first
    free block, the record at its offset there, and the hole's earlier records are what that block holds."""
    model = TrackedModel()
    model.llm_init(BLOCKS * BLOCK_SIZE)
    model.create_sequence(False, 1, 20)
    table = (((0,) + (UNMAPPED,) * (L2_PT_SIZE - 1)),) + (None,) * (L1_PT_SIZE - 1)
    seen = seen_after_init(model, (1, 0, 0, 0), BLOCKS - 1, (SequenceState(1, 20, table),))
    assert first_difference(model, seen, False) is not None
    assert resync(model, seen) is None and model.sequences[1].blocks == [0, UNMAPPED]
    assert first_difference(model, seen, False) is None
    assert renamed_differences(model, seen, False) is not None and next(renamed_differences(model, seen, False), None) is None
    assert model.fork_sequence(False, 1, 2).returned == NOT_NULL
    assert model.sequences[2].blocks == [0, UNMAPPED] and model.ref_count() == [2, 0, 0, 0] and model.free_count() == 3
    assert model.append_kv(False, 2, 7).returned == 0
    assert model.sequences[2].blocks == [0, 1] and model.ref_count() == [2, 1, 0, 0] and model.free_count() == 2
    assert model.sequences[2].values[16:] == [model.read(16 + i) for i in range(4)] + [7]
    assert model.free_sequence(False, 2).returned == 0 and model.free_sequence(False, 1).returned == 0
    assert model.ref_count() == [0] * BLOCKS and model.free_count() == BLOCKS


def test_records_with_no_l2_table_are_taken_over_as_holes_in_a_null_slot() -> None:
    """A create that mapped no block for its 5 records and left block_table[0] NULL: taken over as a hole whose
    slot stays NULL (bare), and filled by the next append like any hole, the slot then holding a table."""
    model = TrackedModel()
    model.llm_init(BLOCKS * BLOCK_SIZE)
    model.create_sequence(False, 1, 5)
    seen = seen_after_init(model, (0, 0, 0, 0), BLOCKS, (SequenceState(1, 5, (None,) * L1_PT_SIZE),))
    assert resync(model, seen) is None and model.sequences[1].blocks == [UNMAPPED] and model.sequences[1].bare == {0}
    assert first_difference(model, seen, False) is None
    assert model.fork_sequence(False, 1, 2).returned == NOT_NULL and model.sequences[2].bare == {0}
    assert model.append_kv(False, 1, 7).returned == 0 and model.sequences[1].blocks == [0]
    after = ((0,) + (UNMAPPED,) * (L2_PT_SIZE - 1),) + (None,) * (L1_PT_SIZE - 1)
    states = (SequenceState(1, 6, after), SequenceState(2, 5, (None,) * L1_PT_SIZE))
    assert first_difference(model, seen_after_init(model, (1, 0, 0, 0), BLOCKS - 1, states), False) is None


def test_an_l2_entry_made_early_is_appended_to_as_an_unmapped_block() -> None:
    model = TrackedModel()
    model.llm_init(BLOCKS * BLOCK_SIZE)
    model.create_sequence(False, 1, 16)
    table = ((0,) + (UNMAPPED,) * (L2_PT_SIZE - 1),) + ((UNMAPPED,) * L2_PT_SIZE,) + (None,) * (L1_PT_SIZE - 2)
    seen = seen_after_init(model, (1, 0, 0, 0), BLOCKS - 1, (SequenceState(1, 16, table),))
    assert resync(model, seen) is None and model.sequences[1].blocks == [0] + [UNMAPPED] * L2_PT_SIZE
    assert first_difference(model, seen, False) is None  # the empty L2 table is part of the shape
    assert model.append_kv(False, 1, 7).returned == 0  # record 16 starts logical block 1: a new block
    assert model.sequences[1].blocks == [0, 1] + [UNMAPPED] * (L2_PT_SIZE - 1) and model.free_count() == BLOCKS - 2
    after = ((0, 1) + (UNMAPPED,) * (L2_PT_SIZE - 2),) + table[1:]
    assert first_difference(model, seen_after_init(model, (1, 1, 0, 0), BLOCKS - 2, (SequenceState(1, 17, after),)), False) is None
