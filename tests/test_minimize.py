"""The shrinker (oracle.shrink): our own loop over a failing program as printed. Steps the failure does
not need go, with the steps that use what they returned; literal arguments get simpler; the program that is
left still fails the same way; every replay is counted against a budget, and the same program and budget
give the same result."""

from oracle.hw3 import load_adapter
from oracle.hw3.machine import Divergence, machine_for
from oracle.shrink import Budget, Shrinker, _without_steps, replay
from oracle.stats import RunStats
from tests.conftest import broken_python

PADDED = [
    "state = HW3Machine()",
    "state.init(pool_size=640, null_pool=False)",
    "state.blind_call(api='create_sequence', null_engine=False, other=0, seq_id=0)",  # a bad length: no-op
    "sequences_0 = state.create(initial_kv_len=3, seq_id=5)",
    "state.free(seq_id=sequences_0)",  # with the create above: a pair that changes nothing
    "sequences_1 = state.create(initial_kv_len=17, seq_id=1)",
    "state.blind_call(api='free_sequence', null_engine=True, other=0, seq_id=1)",
    "state.branch(kv_data=-12345, new_seq_id=4, parent_seq_id=sequences_1)",  # fork, then append: the CoW no_cow skips
    "state.teardown()",
]
MINIMAL = [
    "state = HW3Machine()",
    "state.init(pool_size=64, null_pool=False)",  # the smallest pool that holds the sequence and a copy
    "sequences_0 = state.create(initial_kv_len=1, seq_id=0)",  # its result's name numbered again from 0
    "state.branch(kv_data=0, new_seq_id=1, parent_seq_id=sequences_0)",
    "state.teardown()",
]


def no_cow() -> type:
    return machine_for(load_adapter(broken_python("no_cow")), RunStats())


def test_without_steps_drops_the_steps_that_use_what_they_returned() -> None:
    assert _without_steps(PADDED, 3, 1) == PADDED[:3] + PADDED[5:]
    assert _without_steps(PADDED, 5, 1) == PADDED[:5] + PADDED[6:7] + PADDED[8:]
    assert _without_steps(PADDED, 2, 2) == PADDED[:2] + PADDED[5:]
    assert _without_steps(PADDED, 7, 5) == PADDED[:7] + PADDED[8:]  # the teardown line stays


def test_shrink_deletes_idle_steps_simplifies_arguments_and_keeps_a_failure() -> None:
    failure, line, values = replay(no_cow(), PADDED)
    assert isinstance(failure, Divergence) and line == 7 and values == {"sequences_0": 5, "sequences_1": 1}
    budget = Budget(500)
    steps, kept = Shrinker(no_cow(), budget).shrink(PADDED, failure)
    assert steps == MINIMAL
    assert isinstance(kept, Divergence) and str(kept).splitlines()[0] == "return value: expected -1, got 0 after append_kv(engine, 1, 0)"
    assert [str(call) for call in kept.calls] == ["llm_init(pool, 64)", "create_sequence(engine, 0, 1)",
                                                   "fork_sequence(engine, 0, 1)", "append_kv(engine, 1, 0)"]
    assert 0 < budget.spent < 500 and budget.cut_short is None
    again = Budget(500)
    assert Shrinker(no_cow(), again).shrink(PADDED, failure)[0] == steps and again.spent == budget.spent


def test_shrink_stops_at_its_replay_budget_with_a_failing_program() -> None:
    failure = replay(no_cow(), PADDED).failure
    budget = Budget(1)  # two replays reach a program as short as the minimal one (keeping what the failing step needs)
    steps, kept = Shrinker(no_cow(), budget).shrink(PADDED, failure)
    assert budget.spent == 1 and budget.cut_short == "replays"
    assert len(MINIMAL) < len(steps) <= len(PADDED) and isinstance(replay(no_cow(), steps)[0], Divergence)
    assert isinstance(kept, Divergence)


def test_shrink_stops_at_its_deadline() -> None:
    failure = replay(no_cow(), PADDED).failure
    budget = Budget(500, deadline=0.0)  # long past
    assert Shrinker(no_cow(), budget).shrink(PADDED, failure)[0] == PADDED
    assert budget.spent == 0 and budget.cut_short == "seconds"


def test_replay_of_a_passing_or_invalid_program_is_no_failure() -> None:
    engine = machine_for(load_adapter("engine"), RunStats())
    assert replay(engine, PADDED)[:2] == (None, len(PADDED))
    assert replay(engine, ["state = HW3Machine()", "state.append(seq_id=undefined)"])[0] is None
    # a refused create returns no sequence: a later step may not pass its (empty) result on
    refused = ["state = HW3Machine()", "state.init(pool_size=64, null_pool=False)",
               "sequences_0 = state.create(initial_kv_len=0, seq_id=0)",
               "state.branch(kv_data=0, new_seq_id=1, parent_seq_id=sequences_0)", "state.teardown()"]
    assert replay(no_cow(), refused)[0] is None


def test_shrink_passes_a_value_instead_of_a_result_when_the_step_that_made_it_can_go(submission) -> None:
    """create_free's free_sequence of an unknown id returns 0: the free needs no create before it."""
    machine = machine_for(load_adapter(str(submission("broken", "create_free"))), RunStats())
    program = ["state = HW3Machine()", "state.init(pool_size=64, null_pool=False)",
               "sequences_0 = state.create(initial_kv_len=1, seq_id=3)",
               "state.destroy_and_reinit(null_pool=False, pool_size=64)",
               "state.free(seq_id=sequences_0)", "state.teardown()"]
    failure = replay(machine, program).failure
    assert str(failure).startswith("return value: expected -1, got 0 after free_sequence(engine, 3)")
    steps, kept = Shrinker(machine, Budget(500)).shrink(program, failure)
    assert steps == ["state = HW3Machine()", "state.init(pool_size=64, null_pool=False)",
                     "state.free(seq_id=0)", "state.teardown()"], steps  # the re-init went: one engine is enough
    assert str(kept).startswith("return value: expected -1, got 0 after free_sequence(engine, 0)")


def test_shrink_first_keeps_the_failing_step_with_what_it_uses_and_a_set_up_step() -> None:
    """The failing branch uses sequences_1 only: alone (no engine) it passes; after the init it fails."""
    failure = replay(no_cow(), PADDED).failure
    budget = Budget(2)
    steps, _ = Shrinker(no_cow(), budget).shrink(PADDED, failure)
    kept = [PADDED[0], PADDED[1], PADDED[5], PADDED[7], PADDED[8]]
    assert steps == [line.replace("sequences_1", "sequences_0") for line in kept] and budget.cut_short == "replays"


def test_shrink_reaches_the_minimal_program_through_few_failing_candidates() -> None:
    """A failing candidate may wait out a hang's whole per-call timeout, a passing one is quick: the passes
    jump (what the failing step needs, all of a step's literals at once, integers up in powers of two)."""
    machine = no_cow()
    failing = []

    class Counted(machine):  # type: ignore[misc, valid-type]
        def teardown(self) -> None:
            failing.append(self.driver.diverged)
            super().teardown()

    failure = replay(machine, PADDED).failure
    steps, _ = Shrinker(Counted, Budget(500)).shrink(PADDED, failure)
    assert steps == MINIMAL and 0 < sum(failing) <= 6, sum(failing)  # 16 for a bisecting, one-at-a-time shrinker


def test_shrink_points_an_argument_at_an_earlier_result_and_drops_the_step_that_made_the_old_one() -> None:
    """The branch forks a fork of sequences_0: forking sequences_0 itself fails the same way, and the fork
    that made sequences_1 goes with it (deleting it alone would take the branch along)."""
    program = ["state = HW3Machine()", "state.init(pool_size=256, null_pool=False)",
               "sequences_0 = state.create(initial_kv_len=1, seq_id=0)",
               "sequences_1 = state.fork(new_seq_id=1, parent_seq_id=sequences_0)",
               "state.branch(kv_data=0, new_seq_id=2, parent_seq_id=sequences_1)", "state.teardown()"]
    failure = replay(no_cow(), program).failure
    assert isinstance(failure, Divergence)
    steps, _ = Shrinker(no_cow(), Budget(500)).shrink(program, failure)
    assert steps == MINIMAL, steps
