"""oracle/hw3/fork_witness.py: a fork whose references are wrong, told from the graded run alone: an append of the
graded run to a block the fork's parent and child share wrote its record in place (effects.wrote_in_place, read by
run.py from the graded step), and the same run's later calls, the program as written made on in its own process
(graded_calls.py), show a free of the parent or child followed by a grant that an engine whose references hold must
refuse; and rules.py charging what follows such a fork to the fork."""

from contextlib import closing
from pathlib import Path

import pytest

from oracle.hw3 import load_adapter, programs
from oracle.hw3.fork_witness import ForkWitness, references_missed
from oracle.hw3.graded_calls import GradedCalls
from oracle.hw3.pyremote import served
from oracle.hw3.resync import TrackedModel
from oracle.hw3.rules import TASKS
from oracle.hw3.run import Trace, run
from oracle.program import Program, Step
from tests.conftest import broken_python

# a parent of two blocks forked, the child's append (in place when the fork took no reference), then the parent
# freed and a create of 9 blocks of the 10, which must be refused (the child still holds blocks 0 and 1, or 0 and 2)
FORKED = [Step("llm_init", (640,)), Step("create_sequence", (1, 20)), Step("append_kv", (1, 7)),
          Step("fork_sequence", (1, 2)), Step("append_kv", (2, 8)), Step("free_sequence", (1,)),
          Step("create_sequence", (3, 144))]
IN_PLACE = [(4, frozenset({1, 2}))]  # FORKED's append, in place into block 1, which 1 and 2 share


def _returns(impl: str, steps: list[Step]) -> list[bool | int | None]:
    """`steps`' returns on the Python implementation `impl` in this process, from the first (graded_calls.py's
    program_returns: each call made and its state read, as a graded run makes them)."""
    with closing(load_adapter(impl)()) as adapter:
        return GradedCalls(adapter, steps).program_returns(None)


def _witness(impl: str, steps: list[Step], at: int, in_place: list[tuple[int, frozenset[int]]]) -> bool:
    """ForkWitness's answer at step index `at`, the returns `impl`'s of `steps`."""
    return ForkWitness(steps).shown_wrong(at, in_place, lambda: _returns(impl, steps))


def _graded(spec: str, steps: list[Step]) -> Trace:
    """`steps` run as a graded item runs a Python submission (`spec`: a module or a .py file): served in its child
    process, its objects unread, beside the model, a fresh process of it for each second opinion (none for a
    fork's)."""
    with served(spec) as remote:
        return run(Program("graded", steps), remote(), TrackedModel(), fresh=remote)


def _blamed(trace: Trace) -> list[int]:
    """The steps (numbered from 1) whose difference a fork shown wrong takes."""
    return [ran.number for ran in trace.steps if ran.effects is not None and ran.effects.wrong_fork]


def test_a_fork_that_takes_no_reference_is_shown_wrong_at_the_append_that_wrote_in_place() -> None:
    impl = broken_python("fork_no_incref")
    assert _blamed(_graded(impl, FORKED)) == [5]
    assert _witness(impl, FORKED, 5, IN_PLACE)


@pytest.mark.parametrize("impl", ["engine.llm_memory", broken_python("no_cow"), broken_python("last_fit"), broken_python("cow_copies_written_only")])
def test_a_fork_that_takes_its_references_is_not_shown_wrong(impl: str) -> None:
    assert _blamed(_graded(impl, FORKED)) == []  # their bugs are the append's or first fit's
    assert not _witness(impl, FORKED, 5, IN_PLACE)  # even were the append in place


def test_without_an_append_in_place_in_the_graded_run_no_fork_is_shown_wrong() -> None:
    impl = broken_python("fork_no_incref")
    assert not _witness(impl, FORKED, 5, [])  # the references alone never blame the fork
    assert not _witness(impl, FORKED, 5, [(2, frozenset({1, 2}))])  # before the fork
    assert not _witness(impl, FORKED, 5, [(4, frozenset({2, 3}))])  # a block the fork's two do not both hold
    # fork_references.txt shows the missing references only by a create granted after the parent's free, which a
    # greedy free after a correct fork shows as well: the create keeps its own rule there
    steps = programs.load("fork_references").steps
    refused = next(at for at, step in enumerate(steps) if step.op == "create_sequence" and step.args == (4, 1))
    assert _blamed(_graded(broken_python("fork_no_incref"), steps[: refused + 1])) == []


def test_without_the_programs_own_free_and_grant_no_fork_is_shown_wrong() -> None:
    """The references are seen in the graded program's calls only: a program that frees neither of the fork's two
    after the append, or asks nothing of the blocks a free gave back, shows nothing, and the in-place append keeps
    append_cow's rule (no call the grader chose follows the fork)."""
    assert _blamed(_graded(broken_python("fork_no_incref"), FORKED[:5])) == []
    assert _blamed(_graded(broken_python("fork_no_incref"), FORKED[:6])) == []
    unrelated = [*FORKED[:4], Step("create_sequence", (4, 1)), FORKED[4], Step("free_sequence", (4,)),
                 Step("create_sequence", (3, 144))]  # a free of a third sequence, then the same create: refused
    assert _blamed(_graded(broken_python("fork_no_incref"), unrelated)) == []


# each call the submission is made, printed by its own process as it is made
PRINTS_CALLS = """
import sys as _sys


def _printed(name, call):
    def printed(engine, *args):
        print("CALLED", name, *args, file=_sys.stderr, flush=True)
        return call(engine, *args)
    return printed


for _name in ("llm_init", "create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy"):
    globals()[_name] = _printed(_name, globals()[_name])
"""


def test_the_forks_evidence_is_the_graded_runs_own_calls_made_once_in_one_process(tmp_path: Path) -> None:
    """By construction: no second process makes the program's calls. The graded run's own process makes the
    program as written, each call once, the calls after the append in place too (made ahead of the judging for
    the fork's references, then judged on what they returned there), and no call of the grader's own."""
    from tests.test_tamper_review import python_module

    (tmp_path / "no_incref_printed.py").write_text(python_module("fork_no_incref", PRINTS_CALLS))
    with served(str(tmp_path / "no_incref_printed.py")) as remote:
        remote().llm_init(640)  # the child serves an earlier adapter: the graded run starts in a fresh process
        started = remote.child.generation
        trace = run(Program("graded", FORKED), remote(), TrackedModel(), fresh=remote)
        processes, printed = remote.child.generation - started, remote.child.output(0)
    assert _blamed(trace) == [5]
    assert processes == 1  # the graded run's own, and no other
    made = [line.split()[1:] for line in printed.splitlines() if line.startswith("CALLED ")]
    assert made == [[step.op, *map(str, step.args)] for step in FORKED]  # the first argument, pool or engine, unprinted
    assert [call.api for call in trace.calls] == [step.op for step in FORKED]  # and every one judged or listed


def test_a_finding_shows_what_was_printed_up_to_its_step_not_what_the_calls_made_ahead_printed(tmp_path: Path) -> None:
    from oracle.hw3.replay import replay
    from tests.test_tamper_review import python_module

    (tmp_path / "no_incref_printing.py").write_text(python_module("fork_no_incref", PRINTS_CALLS))
    with served(str(tmp_path / "no_incref_printing.py")) as remote:
        finding = replay(remote(), Program("graded", FORKED), owns=lambda rule: rule == TASKS["fork_sequence"],
                         fresh=remote)
    assert finding is not None and finding.step == 5  # the append in place, the fork's after its later calls
    printed = [line.split()[1] for line in finding.output.splitlines() if line.startswith("CALLED ")]
    assert printed == [step.op for step in FORKED[:5]]


def _greedy_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str = "greedy_free", more: str = "") -> str:
    """tests/hostile_review5/free_drops_shared.py's engine, as module `name` (with `more` after it): a correct fork,
    a free that gives back every reference of a block it shares at once."""
    root = Path(__file__).parents[1]
    engine, bug = root / "engine" / "llm_memory.py", root / "tests" / "hostile_review5" / "free_drops_shared.py"
    (tmp_path / f"{name}.py").write_text(f"{engine.read_text()}\n\n{bug.read_text()}{more}")
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def test_a_greedy_free_after_a_correct_fork_is_not_the_forks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = _greedy_free(tmp_path, monkeypatch)
    spec = str(tmp_path / f"{name}.py")
    # the references' calls alone would blame the fork: the freed parent gives back the blocks the child holds ...
    assert references_missed(FORKED, _returns(name, FORKED), 3)
    # ... but the fork took its references: the child's append copies the block they share, in the graded run
    assert _blamed(_graded(spec, FORKED)) == []
    # fork_sequence.txt: two forks, the first parent freed (every reference of its blocks dropped), then an append
    # to a block the second fork's two share, in place: nothing of the program shows that fork's references
    assert _blamed(_graded(spec, programs.load("fork_sequence").steps)) == []


# free_drops_shared's greedy free, and an append that writes in place only where the in-place witness's history
# differs from every graded one: right after its sequence was forked, the record the last append wrote again
PLANTED_IN_PLACE = """
_last = {"forked": None, "record": None}
_fork, _append = fork_sequence, append_kv


def fork_sequence(engine, parent_seq_id, new_seq_id):
    child = _fork(engine, parent_seq_id, new_seq_id)
    _last["forked"] = new_seq_id if child is not None else None
    return child


def append_kv(engine, seq_id, kv_data):
    planted, _last["forked"] = _last["forked"] == seq_id and kv_data == _last["record"], None
    _last["record"] = kv_data
    seq = _engine(engine).find(seq_id) if planted else None
    if seq is None:
        return _append(engine, seq_id, kv_data)
    logical, offset = divmod(seq.kv_count, KV_PER_BLOCK)
    block = seq.block_table[logical // L2_PT_SIZE][logical % L2_PT_SIZE]
    _RECORD.pack_into(engine.pool_base_ptr, block * BLOCK_SIZE + offset * KV_SIZE, kv_data)
    seq.kv_count += 1
    return 0
"""

def test_an_append_in_place_planted_where_only_a_witness_would_look_does_not_blame_a_correct_fork(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-place evidence is the graded run's own (no call of the grader's after the fork): an append that writes
    in place only in a history the graded programs never make is never seen, and a greedy free keeps its rule."""
    module = str(tmp_path / f"{_greedy_free(tmp_path, monkeypatch, 'greedy_free_planted_in_place', PLANTED_IN_PLACE)}.py")
    for name in ("fork_references", "fork_sequence", "fork_shares_blocks", "create_sequence", "append_kv"):
        assert _blamed(_graded(module, programs.load(name).steps)) == [], name


def test_an_append_that_never_copies_writes_in_place_but_the_references_hold() -> None:
    trace = _graded(broken_python("no_cow"), FORKED)
    assert trace.steps[4].found and _blamed(trace) == []  # in place, the append's own bug
    assert not references_missed(FORKED, _returns(broken_python("no_cow"), FORKED), 3)


def test_in_a_full_pool_the_append_the_model_refuses_is_in_place_after_a_fork_without_references() -> None:
    # failing_calls.txt's end: no block free for the copy, so the model refuses the child's append; a fork that took
    # no reference lets it write in place, and return 0; the parent's free then gives blocks back
    full = [Step("llm_init", (640,)), Step("create_sequence", (1, 20)), Step("create_sequence", (2, 128)),
            Step("fork_sequence", (1, 3)), Step("append_kv", (3, 5)), Step("free_sequence", (1,)),
            Step("create_sequence", (4, 1))]
    assert _blamed(_graded(broken_python("fork_no_incref"), full)) == [5]
    assert _blamed(_graded("engine.llm_memory", full)) == []
    assert _blamed(_graded(broken_python("no_cow"), full)) == []


def test_the_fork_item_shows_a_fork_without_references_in_the_graded_run() -> None:
    # fork_shares_blocks.txt: the child's append to the block it shares with its parent, right after the fork
    steps = programs.load("fork_shares_blocks").steps
    assert _blamed(_graded(broken_python("fork_no_incref"), steps)) == [5]
    trace = _graded("engine.llm_memory", steps)
    assert _blamed(trace) == [] and not any(ran.found for ran in trace.steps)


def test_a_count_bug_that_shows_without_the_fork_is_not_the_forks() -> None:
    # a free that never raises the free count: the create after the parent's free is refused, as it must be
    assert not _witness(broken_python("free_count_not_incremented"), FORKED, 5, IN_PLACE)
    # a create that counts a block free again grants what it must refuse, but before any sharer's free: not the fork's
    early = [*FORKED[:5], Step("create_sequence", (3, 144)), FORKED[5]]
    assert not references_missed(early, _returns(broken_python("create_takes_no_block"), early), 3)


def test_a_crash_before_the_create_gives_no_opinion_and_one_at_it_is_no_refusal() -> None:
    returns = _returns(broken_python("fork_no_incref"), FORKED)
    assert references_missed(FORKED, returns, 3)
    assert not references_missed(FORKED, returns[:6], 3)  # the create never made
    assert not references_missed(FORKED, [*returns[:5], None], 3)  # the free crashed: nothing after it
    assert references_missed(FORKED, [*returns[:6], None], 3)  # the create crashed on its way past the refusal


def test_only_the_forks_of_the_engine_now_live_are_asked() -> None:
    impl = broken_python("fork_no_incref")
    assert not _witness(impl, FORKED, 3, IN_PLACE)  # no fork yet
    again = [*FORKED[:5], Step("llm_init", (640,)), Step("create_sequence", (1, 3)), *FORKED[5:]]
    assert not _witness(impl, again, 7, IN_PLACE)
    assert not references_missed(again, _returns(impl, again), 3)  # its engine gone before the free
    refused = [FORKED[0], FORKED[1], Step("fork_sequence", (5, 2)), *FORKED[4:]]  # an unknown parent: no fork made
    assert not _witness(impl, refused, 4, [(3, frozenset({5, 2}))])


def test_each_forks_verdict_is_kept_for_the_program() -> None:
    witness, asked = ForkWitness(FORKED), []
    returns = lambda: asked.append(1) or _returns(broken_python("fork_no_incref"), FORKED)  # noqa: E731
    assert witness.shown_wrong(5, IN_PLACE, returns)
    assert witness.known == {3: True} and len(asked) == 1
    witness.known[3] = False  # a verdict kept is not asked again
    assert not witness.shown_wrong(5, IN_PLACE, returns) and len(asked) == 1


# FORKED's returns as a graded run records them (pointer calls: whether a handle came back), up to the create of 9
# blocks after the parent's free: granted by a fork that took no reference, refused by one that took them
GRANTED = [True, True, 0, True, 0, 0, True]
REFUSED = [True, True, 0, True, 0, 0, False]


def test_the_verdict_rests_on_the_recorded_returns_of_the_graded_run() -> None:
    """No process: a recorded run in, a verdict out. The returns are asked only where an in-place append of the
    graded run found a block the fork's two share, and then once for the program."""
    asked: list[int] = []

    def recorded(returns: list[bool | int | None]):
        return lambda: asked.append(1) or returns

    assert ForkWitness(FORKED).shown_wrong(5, IN_PLACE, recorded(GRANTED))
    assert not ForkWitness(FORKED).shown_wrong(5, IN_PLACE, recorded(REFUSED))
    assert len(asked) == 2
    assert not ForkWitness(FORKED).shown_wrong(5, [], recorded(GRANTED)) and len(asked) == 2  # nothing in place
    assert ForkWitness(FORKED).shown_wrong(5, IN_PLACE, recorded([*GRANTED[:6], None]))  # crashed past the refusal
    assert not ForkWitness(FORKED).shown_wrong(5, IN_PLACE, recorded(GRANTED[:6]))  # the run stopped before it
    # a wrong return before the grant (the parent's free refused) is the first difference: not the fork's
    assert not ForkWitness(FORKED).shown_wrong(5, IN_PLACE, recorded([True, True, 0, True, 0, -1, True]))


def test_graded_calls_made_ahead_are_kept_for_the_steps_that_judge_them() -> None:
    """graded_calls.py on the engine in this process: the rest of the program made once, in order, and each later
    step's call and state handed back as they were, the call not made again (the fork of child 2, made again now
    that 2 lives, would be refused)."""
    with closing(load_adapter("engine.llm_memory")()) as adapter:
        graded = GradedCalls(adapter, FORKED)
        engine = None
        for at in range(3):
            engine, _ = graded.call(at, engine)
        assert graded.returns == [True, True, 0] and not graded.made_ahead(3)
        assert graded.program_returns(engine) == REFUSED
        assert graded.program_returns(engine) == REFUSED  # made once
        assert all(graded.made_ahead(at) for at in range(3, len(FORKED)))
        kept = [graded.call(at, engine)[1] for at in range(3, len(FORKED))]
        assert kept[0] is not None and kept[1:3] == [0, 0] and kept[3] is None  # the fork's child, as made ahead
        last = graded.observe(len(FORKED) - 1, engine)
        assert last.engine is not None and [s.seq_id for s in last.engine.sequences] == [2]
        assert adapter.fork_sequence(engine, 1, 2) is None  # 1 freed, 2 live: the engine is past the program's end


def test_graded_calls_stop_at_a_call_that_crashes_and_hand_its_failure_back(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle.hw3.observation import ImplementationFailure

    engine_text = (Path(__file__).parents[1] / "engine" / "llm_memory.py").read_text()
    crash = "\n\ndef fork_sequence(engine, parent_seq_id, new_seq_id):\n    raise RuntimeError('no fork here')\n"
    (tmp_path / "fork_raises.py").write_text(engine_text + crash)
    monkeypatch.syspath_prepend(str(tmp_path))
    with closing(load_adapter("fork_raises")()) as adapter:
        graded = GradedCalls(adapter, FORKED)
        assert graded.program_returns(None) == [True, True, 0, None]  # the fork crashed: nothing made after it
        assert graded.made_ahead(3) and not graded.made_ahead(4)
        engine, _ = graded.call(0, None)
        with pytest.raises(ImplementationFailure, match="no fork here"):
            graded.call(3, engine)
