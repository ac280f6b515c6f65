"""oracle/hw3/refusal_rule.py and run.py: whose rule a create refused where the model had the blocks is, for an engine
whose free count the grader does not read (a Python submission's), decided by graded runs alone: before any call since
llm_init moved the free count, the call's own; after such calls, the free count's unless the create's own item's
programs, run as that item runs them, show that call (as many records) refused before any call moved the count."""

from typing import Any

from oracle.hw3 import programs
from oracle.hw3.pyremote import served
from oracle.hw3.call import Call
from oracle.hw3.refusal_rule import Shown, refused_alone, same_call
from oracle.hw3.resync import TrackedModel
from oracle.hw3.rules import FREE_BLOCK_CONSISTENCY, TASKS, rule_of
from oracle.hw3.run import Ran, Trace, run
from oracle.hw3.verdicts import LENIENT
from oracle.program import Program, Step
from tests.conftest import broken_python

CREATE = TASKS["create_sequence"]
CREATE_PROGRAMS = programs.for_item("create_free", {})
FREE_COUNT = list(programs.load("free_count").steps)
REFUSED_AT = FREE_COUNT.index(Step("create_sequence", (4, 160))) + 1  # 10 blocks, after frees gave back 4


CAP_PROGRAM = list(CREATE_PROGRAMS[1].steps)  # llm_init of 300 blocks, a create of 4097 records (refused), then 4096


def _shown(fresh: Any, op: str) -> Shown:
    return refused_alone(fresh, op, CREATE_PROGRAMS if op == "create_sequence" else programs.for_item("append_cow", {}),
                         TASKS[op], LENIENT)


def _graded(spec: str, steps: list[Step], asked: list[str]) -> Trace:
    """`steps` run as a graded item runs a Python submission: served in its child process, unread, a fresh process of it
    for each second opinion, refusals after frees decided by the create's programs (each call asked of in `asked`)."""

    def decide(call: Call, fresh: Any) -> bool:
        asked.append(str(call))
        return same_call(call, _shown(fresh, call.api))

    with served(spec) as remote:
        return run(Program("graded", steps), remote(), TrackedModel(), fresh=remote, refuses_alone=decide)


def _refusal(trace: Trace) -> Ran:
    refused = [ran for ran in trace.steps if ran.refused]
    assert len(refused) == 1, [(ran.number, ran.call, ran.found) for ran in trace.steps]
    return refused[0]


CREATE_160 = "create_sequence(engine, 4, 160)"  # free_count.txt's create of 10 blocks, after frees gave back 4
# create_sequence_cap.txt's pool, then a create and a free of one block, then its 4096 records: 256 of 300 blocks
AFTER_A_FREE = [CAP_PROGRAM[0], Step("create_sequence", (2, 16)), Step("free_sequence", (2,)),
                Step("create_sequence", (5, 4096))]


def test_the_same_call_is_one_of_the_same_kind_and_records_whatever_its_sequence_id() -> None:
    """The decision itself, without processes: only the very call the item's programs showed refused alone (as many
    records) makes a later refusal the call's own; another of its kind refused alone makes it no one's but the count's."""
    create = lambda seq, records: Call("create_sequence", (seq, records), False, True)  # noqa: E731
    shown = frozenset({(4096,)})
    assert same_call(create(1, 4096), shown) and same_call(create(5, 4096), shown)
    assert not same_call(create(4, 160), shown) and not same_call(create(1, 4097), shown)
    assert not same_call(create(4, 160), frozenset())
    assert same_call(create(4, 160), frozenset({(4096,), (160,)}))


def test_a_refusal_after_frees_is_the_free_counts_when_the_creates_own_programs_refuse_nothing_alone() -> None:
    asked: list[str] = []
    ran = _refusal(_graded(broken_python("free_count_not_incremented"), FREE_COUNT[:REFUSED_AT], asked))
    assert ran.number == REFUSED_AT and ran.counted and ran.effects is not None and ran.effects.short
    assert rule_of(ran.found[0], ran.call, ran.effects) == FREE_BLOCK_CONSISTENCY
    assert asked == [CREATE_160]


def test_a_refusal_after_frees_is_the_free_counts_when_the_creates_programs_show_only_another_create_refused() -> None:
    """refuses_long_creates refuses every create over 128 records; its item's programs show one refused alone, of 4096
    records, not free_count.txt's 160: either rule may have made this refusal, so it is the free count's (create_free
    fails by its own programs: both items are charged, each once). A plant of one refused create pays for nothing more."""
    for spec in ("tests.refusal_bugs:refuses_long_creates", "tests.refusal_bugs:free_count_with_a_planted_refusal"):
        asked: list[str] = []
        ran = _refusal(_graded(spec, FREE_COUNT[:REFUSED_AT], asked))
        assert ran.number == REFUSED_AT and ran.counted and ran.effects is not None and ran.effects.short, spec
        assert rule_of(ran.found[0], ran.call, ran.effects) == FREE_BLOCK_CONSISTENCY and asked == [CREATE_160], spec


def test_a_refusal_after_frees_is_the_creates_own_where_its_programs_show_that_call_refused_alone() -> None:
    """A create of 4096 records refused after a free: create_sequence_cap.txt shows one refused on a fresh engine."""
    asked: list[str] = []
    ran = _refusal(_graded("tests.refusal_bugs:refuses_long_creates", AFTER_A_FREE, asked))
    assert ran.number == 4 and ran.counted and ran.effects is not None and not ran.effects.short
    assert rule_of(ran.found[0], ran.call, ran.effects) == CREATE and asked == ["create_sequence(engine, 5, 4096)"]


def test_a_refusal_before_any_call_moved_the_count_is_the_calls_own_and_asks_nothing() -> None:
    asked: list[str] = []
    steps = [Step("llm_init", (640,)), Step("create_sequence", (1, 0)), Step("free_sequence", (7,)),
             Step("create_sequence", (2, 144))]  # two calls that must fail, moving nothing; then 9 of 10 blocks
    ran = _refusal(_graded("tests.refusal_bugs:refuses_long_creates", steps, asked))
    assert ran.number == 4 and not ran.counted and ran.effects is not None and not ran.effects.short
    assert rule_of(ran.found[0], ran.call, ran.effects) == CREATE and asked == []


def test_a_refusal_after_a_create_that_miscounted_is_the_free_counts() -> None:
    """tests/broken/probes/create_miscounts counts one block more than each create takes: with no free at all, the refusal
    its count makes is Constraint 5's, as a C engine's count itself would show (it refuses no create alone)."""
    asked: list[str] = []
    steps = [Step("llm_init", (640,)), Step("create_sequence", (1, 16)), Step("create_sequence", (2, 144))]
    ran = _refusal(_graded(broken_python("create_miscounts"), steps, asked))
    assert ran.number == 3 and ran.counted and ran.effects is not None and ran.effects.short
    assert rule_of(ran.found[0], ran.call, ran.effects) == FREE_BLOCK_CONSISTENCY
    assert asked == ["create_sequence(engine, 2, 144)"]


def test_the_creates_own_programs_show_the_calls_each_engine_refuses_alone() -> None:
    with served(broken_python("free_count_not_incremented")) as remote:
        assert _shown(remote, "create_sequence") == frozenset()  # it refuses only after frees (create 6 576)
    for spec in ("tests.refusal_bugs:refuses_long_creates", "tests.refusal_bugs:free_count_with_a_planted_refusal"):
        with served(spec) as remote:
            assert _shown(remote, "create_sequence") == frozenset({(4096,)}), spec  # create_sequence_cap's third call
    for spec in ("engine.llm_memory", broken_python("last_fit"), broken_python("init_free_one_short")):
        with served(spec) as remote:
            assert _shown(remote, "create_sequence") == frozenset() == _shown(remote, "append_kv"), spec


class _Recording:
    """An adapter that notes every call made on it (op and arguments, the engine left out)."""

    def __init__(self, adapter: Any, calls: list[tuple[str, tuple[int, ...]]]):
        self._adapter, self.calls = adapter, calls

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._adapter, name)
        if name not in programs.SIGNATURES:
            return found

        def noted(*args: Any) -> Any:
            self.calls.append((name, tuple(args[:1]) if name == "llm_init" else tuple(args[1:])))
            return found(*args)

        return noted


def test_the_creates_own_programs_are_run_as_graded_their_pools_and_calls_each_in_a_fresh_implementation() -> None:
    """Nothing tells these runs from the create_free item's: each is one of its programs, from its first call, on a
    fresh implementation, stopping no later than the program does."""
    opened: list[list[tuple[str, tuple[int, ...]]]] = []
    with served("tests.refusal_bugs:refuses_long_creates") as remote:

        def fresh() -> _Recording:
            opened.append([])
            return _Recording(remote(), opened[-1])

        assert _shown(fresh, "create_sequence") == frozenset({(4096,)})
    made = [calls for calls in opened if calls]
    assert len(made) == 2  # each program, whatever the first showed: create_sequence_cap's refusal at its third call
    for calls, program in zip(made, CREATE_PROGRAMS):
        steps = [(step.op, step.args) for step in program.steps]
        assert calls == steps[: len(calls)] and calls[0] == steps[0]
    assert made[1] == [(step.op, step.args) for step in CREATE_PROGRAMS[1].steps[:3]]
