"""The runner's last pass over a shrunk program: steps the divergence does not need go, with the steps that
use what they returned; the program that is left still fails the same way, and is returned with its failure."""

from oracle.hw3 import load_adapter
from oracle.hw3.machine import Divergence, machine_for
from oracle.runner import _replay, _without_idle_steps, _without_step
from oracle.stats import RunStats

PADDED = [
    "state = HW3Machine()",
    "state.init(pool_size=640, null_pool=False)",
    "state.blind_call(api='create_sequence', null_engine=False, other=0, seq_id=0)",  # a bad length: no-op
    "sequences_0 = state.create(initial_kv_len=3, seq_id=5)",
    "state.free(seq_id=sequences_0)",  # with the create above: a pair that changes nothing
    "sequences_1 = state.create(initial_kv_len=1, seq_id=1)",
    "state.blind_call(api='free_sequence', null_engine=True, other=0, seq_id=1)",
    "state.branch(kv_data=0, new_seq_id=0, parent_seq_id=sequences_1)",  # fork, then append: the CoW no_cow skips
    "state.teardown()",
]


def test_a_step_goes_with_the_steps_that_use_what_it_returned() -> None:
    assert _without_step(PADDED, 3) == PADDED[:3] + PADDED[5:]
    assert _without_step(PADDED, 5) == PADDED[:5] + PADDED[6:7] + PADDED[8:]
    assert _without_step(PADDED, 2) == PADDED[:2] + PADDED[3:]


def test_idle_steps_are_deleted_and_the_failure_kept() -> None:
    machine = machine_for(load_adapter("tests.broken.no_cow"), RunStats())
    failure = _replay({"HW3Machine": machine}, PADDED)
    assert isinstance(failure, Divergence)
    divergence = str(failure).splitlines()[0]
    assert divergence.startswith("free_local_blocks: expected 8, got 9 ") and divergence.endswith(" after append_kv(engine, 0, 0)")

    steps, kept = _without_idle_steps(machine, PADDED, divergence, failure)
    assert steps == [PADDED[0], PADDED[1], PADDED[5], PADDED[7], PADDED[8]]
    assert isinstance(kept, Divergence) and str(kept).splitlines()[0] == divergence
    assert [str(call) for call in kept.calls][-1] == "append_kv(engine, 0, 0)" and len(kept.calls) == 4


def test_a_program_without_the_divergence_replays_to_none() -> None:
    machine = machine_for(load_adapter("engine"), RunStats())
    assert _replay({"HW3Machine": machine}, PADDED) is None
    assert _replay({"HW3Machine": machine}, ["state = HW3Machine()", "state.append(seq_id=undefined)"]) is None
