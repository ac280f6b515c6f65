"""The shrinker (oracle.shrink): our own loop over a failing program (oracle/program.py), replayed through the
family's driver. Steps the failure does not need go, with the steps that use what they returned; literal arguments
get simpler; the program that is left still fails the same way; every replay is counted against a budget, and the
same program and budget give the same result. Programs are written here as Hypothesis prints them (`parse`), and
the shrunk one is printed so again (`render`)."""

from oracle.hw3 import load_adapter
from oracle.hw3.machine import Divergence, Driver, machine_for, machine_of
from oracle.program import Program, Step
from oracle.shrink import Budget, Made, Shrinker, _without_steps, parse, render, replay
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


def program(lines: list[str]) -> Program:
    return parse(no_cow(), lines)


def printed(shrunk: Program) -> list[str]:
    return render(no_cow(), shrunk)


def test_a_printed_program_reads_as_steps_and_prints_back_the_same() -> None:
    padded = program(PADDED)
    assert [step.op for step in padded.steps] == ["init", "blind_call", "create", "free", "create", "blind_call",
                                                  "branch"]
    assert padded.steps[2] == Step("create", (3, 5)) and padded.steps[3] == Step("free", (Made(2),))
    assert printed(padded) == PADDED


def test_without_steps_drops_the_steps_that_use_what_they_returned() -> None:
    steps = program(PADDED).steps
    assert _without_steps(steps, 2, 1) == program(PADDED[:3] + PADDED[5:]).steps
    assert _without_steps(steps, 4, 1) == program(PADDED[:5] + PADDED[6:7] + PADDED[8:]).steps
    assert _without_steps(steps, 1, 2) == program(PADDED[:2] + PADDED[5:]).steps
    assert _without_steps(steps, 6, 5) == program(PADDED[:7] + PADDED[8:]).steps


def test_shrink_deletes_idle_steps_simplifies_arguments_and_keeps_a_failure() -> None:
    failure, at, values = replay(no_cow(), program(PADDED))
    assert isinstance(failure, Divergence) and at == 6 and values == [None, None, 5, None, 1, None]
    budget = Budget(500)
    shrunk, kept = Shrinker(no_cow(), budget).shrink(program(PADDED), failure)
    assert printed(shrunk) == MINIMAL
    assert isinstance(kept, Divergence) and str(kept).splitlines()[0] == "return value: expected -1, got 0 after append_kv(engine, 1, 0)"
    assert [str(call) for call in kept.calls] == ["llm_init(pool, 64)", "create_sequence(engine, 0, 1)",
                                                   "fork_sequence(engine, 0, 1)", "append_kv(engine, 1, 0)"]
    assert 0 < budget.spent < 500 and budget.cut_short is None
    again = Budget(500)
    assert Shrinker(no_cow(), again).shrink(program(PADDED), failure)[0] == shrunk and again.spent == budget.spent


def test_shrink_stops_at_its_replay_budget_with_a_failing_program() -> None:
    failure = replay(no_cow(), program(PADDED)).failure
    budget = Budget(1)  # two replays reach a program as short as the minimal one (keeping what the failing step needs)
    shrunk, kept = Shrinker(no_cow(), budget).shrink(program(PADDED), failure)
    assert budget.spent == 1 and budget.cut_short == "replays"
    assert len(MINIMAL) < len(printed(shrunk)) <= len(PADDED) and isinstance(replay(no_cow(), shrunk)[0], Divergence)
    assert isinstance(kept, Divergence)


def test_shrink_stops_at_its_deadline() -> None:
    failure = replay(no_cow(), program(PADDED)).failure
    budget = Budget(500, late=lambda: True)  # its time limit long past
    assert printed(Shrinker(no_cow(), budget).shrink(program(PADDED), failure)[0]) == PADDED
    assert budget.spent == 0 and budget.cut_short == "seconds"


def test_replay_of_a_passing_or_invalid_program_is_no_failure() -> None:
    engine = machine_for(load_adapter("engine"), RunStats())
    assert replay(engine, program(PADDED))[:2] == (None, len(PADDED) - 2)  # no step failed, nor the end
    # a step that uses a result no step made
    assert replay(engine, Program("p", (Step("init", (64, False)), Step("append", (0, Made(5))))))[0] is None
    # a refused create returns no sequence: a later step may not pass its (empty) result on
    refused = ["state = HW3Machine()", "state.init(pool_size=64, null_pool=False)",
               "sequences_0 = state.create(initial_kv_len=0, seq_id=0)",
               "state.branch(kv_data=0, new_seq_id=1, parent_seq_id=sequences_0)", "state.teardown()"]
    assert replay(no_cow(), program(refused))[0] is None


def test_shrink_passes_a_value_instead_of_a_result_when_the_step_that_made_it_can_go(submission) -> None:
    """create_free's free_sequence of an unknown id returns 0: the free needs no create before it."""
    machine = machine_for(load_adapter(str(submission("broken", "create_free"))), RunStats())
    lines = ["state = HW3Machine()", "state.init(pool_size=64, null_pool=False)",
             "sequences_0 = state.create(initial_kv_len=1, seq_id=3)",
             "state.destroy_and_reinit(null_pool=False, pool_size=64)",
             "state.free(seq_id=sequences_0)", "state.teardown()"]
    failure = replay(machine, parse(machine, lines)).failure
    assert str(failure).startswith("return value: expected -1, got 0 after free_sequence(engine, 3)")
    shrunk, kept = Shrinker(machine, Budget(500)).shrink(parse(machine, lines), failure)
    assert render(machine, shrunk) == ["state = HW3Machine()", "state.init(pool_size=64, null_pool=False)",
                                       "state.free(seq_id=0)", "state.teardown()"], shrunk  # one engine is enough
    assert str(kept).startswith("return value: expected -1, got 0 after free_sequence(engine, 0)")


def test_shrink_first_keeps_the_failing_step_with_what_it_uses_and_a_set_up_step() -> None:
    """The failing branch uses sequences_1 only: alone (no engine) it passes; after the init it fails."""
    failure = replay(no_cow(), program(PADDED)).failure
    budget = Budget(2)
    shrunk, _ = Shrinker(no_cow(), budget).shrink(program(PADDED), failure)
    kept = [PADDED[0], PADDED[1], PADDED[5], PADDED[7], PADDED[8]]
    assert printed(shrunk) == [line.replace("sequences_1", "sequences_0") for line in kept]
    assert budget.cut_short == "replays"


def test_shrink_reaches_the_minimal_program_through_few_failing_candidates() -> None:
    """A failing candidate may wait out a hang's whole per-call timeout, a passing one is quick: the passes
    jump (what the failing step needs, all of a step's literals at once, integers up in powers of two)."""
    drivers = []

    class Counted(Driver):  # each replay's driver, to count those that diverged
        def __init__(self, *args) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*args)
            drivers.append(self)

    machine = machine_of(Counted)(load_adapter(broken_python("no_cow")), RunStats())
    failure = replay(no_cow(), program(PADDED)).failure
    shrunk, _ = Shrinker(machine, Budget(500)).shrink(program(PADDED), failure)
    failing = sum(driver.diverged for driver in drivers)
    assert printed(shrunk) == MINIMAL and 0 < failing <= 6, failing  # 16 for a bisecting, one-at-a-time shrinker


def test_shrink_points_an_argument_at_an_earlier_result_and_drops_the_step_that_made_the_old_one() -> None:
    """The branch forks a fork of sequences_0: forking sequences_0 itself fails the same way, and the fork
    that made sequences_1 goes with it (deleting it alone would take the branch along)."""
    lines = ["state = HW3Machine()", "state.init(pool_size=256, null_pool=False)",
             "sequences_0 = state.create(initial_kv_len=1, seq_id=0)",
             "sequences_1 = state.fork(new_seq_id=1, parent_seq_id=sequences_0)",
             "state.branch(kv_data=0, new_seq_id=2, parent_seq_id=sequences_1)", "state.teardown()"]
    failure = replay(no_cow(), program(lines)).failure
    assert isinstance(failure, Divergence)
    shrunk, _ = Shrinker(no_cow(), Budget(500)).shrink(program(lines), failure)
    assert printed(shrunk) == MINIMAL, shrunk


def test_a_program_of_another_family_reads_as_steps_and_prints_back_the_same() -> None:
    """The prefix family's machine: a list and a word among the arguments, a result passed on."""
    from oracle.family import families

    prefix = families()["prefix"]
    machine = prefix.machine_for(prefix.load_adapter("engine"), RunStats())
    lines = ["state = PrefixMachine()", "state.start(num_blocks=4, block_size=2)",
             "requests_0 = state.admit(base=0, count=1, cut='blocks_plus_one', tail=[1, 2])",
             "state.free(rid=requests_0)", "state.teardown()"]
    read = parse(machine, lines)
    assert read is not None and read.steps[1] == Step("admit", (0, 1, "blocks_plus_one", [1, 2]))
    assert read.steps[2] == Step("free", (Made(1),)) and render(machine, read) == lines
    assert replay(machine, read)[:2] == (None, 3)  # the engine agrees with the model
