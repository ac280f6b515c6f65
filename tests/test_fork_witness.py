"""oracle/hw3/fork_witness.py: a fork whose references are wrong, told from calls of the graded program only: an
append of the graded run to a block the fork's parent and child share wrote its record in place
(effects.wrote_in_place, read by run.py from the graded step), and the same program's later calls, as written, show
a free of the parent or child followed by a grant that an engine whose references hold must refuse; and rules.py
charging what follows such a fork to the fork."""

import copy
import struct
from pathlib import Path

import pytest

from oracle.difference import Difference
from oracle.hw3 import load_adapter, programs
from oracle.hw3.difference import CONTENTS, GUARD, POOL, RETURN
from oracle.hw3.effects import wrote_elsewhere, wrote_held, wrote_in_place
from oracle.hw3.fork_witness import AppendsInPlace, ForkWitness, program_returns, references_missed
from oracle.hw3.call import Call
from oracle.hw3.model import Model
from oracle.hw3.observation import UNREAD, Observation
from oracle.hw3.pool import initial_pool
from oracle.hw3.pyremote import served
from oracle.hw3.resync import TrackedModel
from oracle.hw3.rules import FIRST_FIT, MEMORY_SAFETY, TASKS, Effects, rule_of
from oracle.hw3.run import Trace, run
from oracle.hw3.step import predict
from oracle.program import Program, Step

# a parent of two blocks forked, the child's append (in place when the fork took no reference), then the parent
# freed and a create of 9 blocks of the 10, which must be refused (the child still holds blocks 0 and 1, or 0 and 2)
FORKED = [Step("llm_init", (640,)), Step("create_sequence", (1, 20)), Step("append_kv", (1, 7)),
          Step("fork_sequence", (1, 2)), Step("append_kv", (2, 8)), Step("free_sequence", (1,)),
          Step("create_sequence", (3, 144))]
IN_PLACE = [(4, frozenset({1, 2}))]  # FORKED's append, in place into block 1, which 1 and 2 share


def _graded(spec: str, steps: list[Step]) -> Trace:
    """`steps` run as a graded item runs a Python submission (`spec`: a module or a .py file): served in its child
    process, its objects unread, beside the model, a fresh process of it for each second opinion."""
    with served(spec) as remote:
        return run(Program("graded", steps), remote(), TrackedModel(), fresh=remote)


def _blamed(trace: Trace) -> list[int]:
    """The steps (numbered from 1) whose difference a fork shown wrong takes."""
    return [ran.number for ran in trace.steps if ran.effects is not None and ran.effects.wrong_fork]


@pytest.mark.parametrize("impl", ["tests.broken.fork_no_incref", "tests.broken.probe_bugs:fork_shares_no_block"])
def test_a_fork_that_takes_no_reference_is_shown_wrong_at_the_append_that_wrote_in_place(impl: str) -> None:
    assert _blamed(_graded(impl, FORKED)) == [5]
    assert ForkWitness(load_adapter(impl), FORKED).shown_wrong(5, IN_PLACE)


@pytest.mark.parametrize("impl", ["engine.llm_memory", "tests.broken.no_cow", "tests.broken.last_fit", "tests.broken.cow_copies_written_only"])
def test_a_fork_that_takes_its_references_is_not_shown_wrong(impl: str) -> None:
    assert _blamed(_graded(impl, FORKED)) == []  # their bugs are the append's or first fit's
    assert not ForkWitness(load_adapter(impl), FORKED).shown_wrong(5, IN_PLACE)  # even were the append in place


def test_without_an_append_in_place_in_the_graded_run_no_fork_is_shown_wrong() -> None:
    fresh = load_adapter("tests.broken.fork_no_incref")
    assert not ForkWitness(fresh, FORKED).shown_wrong(5, [])  # the references alone never blame the fork
    assert not ForkWitness(fresh, FORKED).shown_wrong(5, [(2, frozenset({1, 2}))])  # before the fork
    assert not ForkWitness(fresh, FORKED).shown_wrong(5, [(4, frozenset({2, 3}))])  # a block the fork's two do not both hold
    # fork_references.txt shows the missing references only by a create granted after the parent's free, which a
    # greedy free after a correct fork shows as well: the create keeps its own rule there
    steps = programs.load("fork_references").steps
    refused = next(at for at, step in enumerate(steps) if step.op == "create_sequence" and step.args == (4, 1))
    assert _blamed(_graded("tests.broken.fork_no_incref", steps[: refused + 1])) == []


def test_without_the_programs_own_free_and_grant_no_fork_is_shown_wrong() -> None:
    """The references are seen in the graded program's calls only: a program that frees neither of the fork's two
    after the append, or asks nothing of the blocks a free gave back, shows nothing, and the in-place append keeps
    append_cow's rule (no call the grader chose follows the fork)."""
    assert _blamed(_graded("tests.broken.fork_no_incref", FORKED[:5])) == []
    assert _blamed(_graded("tests.broken.fork_no_incref", FORKED[:6])) == []
    unrelated = [*FORKED[:4], Step("create_sequence", (4, 1)), FORKED[4], Step("free_sequence", (4,)),
                 Step("create_sequence", (3, 144))]  # a free of a third sequence, then the same create: refused
    assert _blamed(_graded("tests.broken.fork_no_incref", unrelated)) == []


class _Logged:
    """An adapter factory whose adapters record every API call they are made, one list per adapter."""

    def __init__(self, impl: str):
        self.factory, self.runs = load_adapter(impl), []

    def __call__(self) -> "_LoggedAdapter":
        return _LoggedAdapter(self.factory(), self.runs)


class _LoggedAdapter:
    def __init__(self, adapter, runs: list) -> None:
        self._adapter, self.calls = adapter, []
        runs.append(self.calls)

    def __getattr__(self, name: str):
        found = getattr(self._adapter, name)
        if name not in programs.SIGNATURES:
            return found

        def call(*args):
            self.calls.append((name, args[:1] if name == "llm_init" else args[1:]))
            return found(*args)
        return call


def test_the_witness_makes_the_programs_calls_as_written_and_no_other() -> None:
    """By construction: the witness's process sees the program from its first call to its last, nothing of the
    grader's own, so it is a graded run of that program to the submission."""
    fresh = _Logged("tests.broken.fork_no_incref")
    assert ForkWitness(fresh, FORKED).shown_wrong(5, IN_PLACE)
    assert fresh.runs == [[(step.op, step.args) for step in FORKED]]


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
    assert references_missed(FORKED, program_returns(load_adapter(name), FORKED), 3)
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
    trace = _graded("tests.broken.no_cow", FORKED)
    assert trace.steps[4].found and _blamed(trace) == []  # in place, the append's own bug
    assert not references_missed(FORKED, program_returns(load_adapter("tests.broken.no_cow"), FORKED), 3)


def test_in_a_full_pool_the_append_the_model_refuses_is_in_place_after_a_fork_without_references() -> None:
    # failing_calls.txt's end: no block free for the copy, so the model refuses the child's append; a fork that took
    # no reference lets it write in place, and return 0; the parent's free then gives blocks back
    full = [Step("llm_init", (640,)), Step("create_sequence", (1, 20)), Step("create_sequence", (2, 128)),
            Step("fork_sequence", (1, 3)), Step("append_kv", (3, 5)), Step("free_sequence", (1,)),
            Step("create_sequence", (4, 1))]
    assert _blamed(_graded("tests.broken.fork_no_incref", full)) == [5]
    assert _blamed(_graded("engine.llm_memory", full)) == []
    assert _blamed(_graded("tests.broken.no_cow", full)) == []


def test_the_fork_item_shows_a_fork_without_references_in_the_graded_run() -> None:
    # fork_shares_blocks.txt: the child's append to the block it shares with its parent, right after the fork
    steps = programs.load("fork_shares_blocks").steps
    assert _blamed(_graded("tests.broken.fork_no_incref", steps)) == [5]
    trace = _graded("engine.llm_memory", steps)
    assert _blamed(trace) == [] and not any(ran.found for ran in trace.steps)


def test_a_count_bug_that_shows_without_the_fork_is_not_the_forks() -> None:
    # a free that never raises the free count: the create after the parent's free is refused, as it must be
    fresh = load_adapter("tests.broken.free_count_not_incremented")
    assert not ForkWitness(fresh, FORKED).shown_wrong(5, IN_PLACE)
    # a create that counts a block free again grants what it must refuse, but before any sharer's free: not the fork's
    early = [*FORKED[:5], Step("create_sequence", (3, 144)), FORKED[5]]
    assert not references_missed(early, program_returns(load_adapter("tests.broken.probe_bugs:create_takes_no_block"), early), 3)


def test_a_crash_before_the_create_gives_no_opinion_and_one_at_it_is_no_refusal() -> None:
    returns = program_returns(load_adapter("tests.broken.fork_no_incref"), FORKED)
    assert references_missed(FORKED, returns, 3)
    assert not references_missed(FORKED, returns[:6], 3)  # the create never made
    assert not references_missed(FORKED, [*returns[:5], None], 3)  # the free crashed: nothing after it
    assert references_missed(FORKED, [*returns[:6], None], 3)  # the create crashed on its way past the refusal


def test_only_the_forks_of_the_engine_now_live_are_asked() -> None:
    fresh = load_adapter("tests.broken.fork_no_incref")
    assert not ForkWitness(fresh, FORKED).shown_wrong(3, IN_PLACE)  # no fork yet
    again = [*FORKED[:5], Step("llm_init", (640,)), Step("create_sequence", (1, 3)), *FORKED[5:]]
    assert not ForkWitness(fresh, again).shown_wrong(7, IN_PLACE)
    assert not references_missed(again, program_returns(fresh, again), 3)  # its engine gone before the free
    refused = [FORKED[0], FORKED[1], Step("fork_sequence", (5, 2)), *FORKED[4:]]  # an unknown parent: no fork made
    assert not ForkWitness(fresh, refused).shown_wrong(4, [(3, frozenset({5, 2}))])


def test_each_forks_verdict_is_kept_for_the_program() -> None:
    witness = ForkWitness(load_adapter("tests.broken.fork_no_incref"), FORKED)
    assert witness.shown_wrong(5, IN_PLACE)
    assert witness.known == {3: True}
    witness.known[3] = False  # a verdict kept is not asked again
    assert not witness.shown_wrong(5, IN_PLACE)


def test_appends_in_place_never_copy_and_hold_no_more_blocks_than_the_model() -> None:
    for name in ("fork_shares_blocks", "append_kv", "append_kv_shared_by_four", "append_kv_oom_cow", "fork_sequence"):
        model, in_place, live = Model(), AppendsInPlace(), False
        for step in programs.load(name).steps:
            call, outcome = predict(model, step, live)
            _, theirs = predict(in_place, step, live)
            assert "cow_copy" not in theirs.events, (name, step)
            assert in_place.free_blocks() >= model.free_blocks(), (name, step)
            if outcome.returned != theirs.returned:  # only an append the model refuses for want of a block to copy
                assert "oom_on_cow" in outcome.events and theirs.returned == 0, (name, step)
            live = bool(outcome.returned) if step.op == "llm_init" else live and not (step.op == "llm_destroy" and not call.null)


def _appended_at(pool: bytes, block: int, offset: int, value: int) -> bytes:
    at = (block * 16 + offset) * 4
    return pool[:at] + struct.pack("<i", value) + pool[at + 4 :]


def test_a_record_written_in_place_into_a_shared_block_or_into_a_held_one_is_held() -> None:
    model = Model()
    model.llm_init(6 * 64)
    model.create_sequence(False, 1, 15)  # block 0, one record short of full
    model.create_sequence(False, 3, 16)  # block 1
    model.fork_sequence(False, 1, 2)  # block 0 shared
    was = copy.deepcopy(model)
    model.append_kv(False, 2, 9)  # copied to block 2, record 15 at offset 15
    before, call = Observation(UNREAD, initial_pool(6 * 64)), Call("append_kv", (2, 9), False, 0)
    landed = lambda block: Observation(UNREAD, _appended_at(before.pool, block, 15, 9))  # noqa: E731
    assert wrote_held(call, was, model, before, landed(0))  # in place: the block it shares
    assert wrote_held(call, was, model, before, landed(1))  # sequence 3's block
    assert not wrote_held(call, was, model, before, landed(2))  # the model's copy
    assert not wrote_held(call, was, model, before, landed(4)) and wrote_elsewhere(call, was, model, before, landed(4))


def test_a_record_written_in_place_into_the_block_its_sequence_shares_is_wrote_in_place() -> None:
    model = Model()
    model.llm_init(6 * 64)
    model.create_sequence(False, 1, 15)  # block 0, one record short of full
    model.create_sequence(False, 3, 16)  # block 1
    model.fork_sequence(False, 1, 2)  # block 0 shared
    was = copy.deepcopy(model)
    before, call = Observation(UNREAD, initial_pool(6 * 64)), Call("append_kv", (2, 9), False, 0)
    landed = lambda block: Observation(UNREAD, _appended_at(before.pool, block, 15, 9))  # noqa: E731
    assert wrote_in_place(call, was, before, landed(0)) == {1, 2}  # in place: the block 1 and 2 share
    assert wrote_in_place(call, was, before, landed(2)) == set()  # the model's copy
    assert wrote_in_place(call, was, before, landed(1)) == set()  # sequence 3's block: held, not shared by 2
    assert wrote_in_place(call, was, before, before) == set()  # written nowhere
    assert wrote_in_place(Call("append_kv", (3, 9), False, 0), was, before, landed(1)) == set()  # 3's block is full
    assert wrote_in_place(call, None, before, landed(0)) == set()  # the model before the call unknown
    model.append_kv(False, 2, 9)  # 2 has its copy: block 0 is 1's alone now
    assert wrote_in_place(Call("append_kv", (1, 9), False, 0), model, before, landed(0)) == set()


def test_what_follows_a_fork_shown_wrong_is_the_forks() -> None:
    append, create = Call("append_kv", (2, 5), False, 0), Call("create_sequence", (4, 1), False, False)
    contents = Difference(CONTENTS, "seq 2 record 16 (block 2)", 5, 0, seq=2)
    wrong = Effects(frozenset(), frozenset(), held=True, wrong_fork=True)
    assert rule_of(contents, append, wrong) == TASKS["fork_sequence"]
    assert rule_of(Difference(POOL, "pool", 1, 2), append, wrong) == TASKS["fork_sequence"]
    assert rule_of(Difference(RETURN, "", "NULL", "a Sequence"), create, wrong) == TASKS["fork_sequence"]
    assert rule_of(Difference(RETURN, "", -1, 0), Call("append_kv", (2, 5), False, -1), wrong) == TASKS["fork_sequence"]
    assert rule_of(Difference(GUARD, "guard", 1, 2), append, wrong) == MEMORY_SAFETY  # its own rule still
    # without the second opinion, the calls keep their own rules
    assert rule_of(contents, append, Effects(frozenset(), frozenset(), held=True)) == TASKS["append_kv"]
    elsewhere = Effects(frozenset(), frozenset(), elsewhere=True)
    assert rule_of(contents, append, elsewhere) == FIRST_FIT
    assert rule_of(contents, append, Effects(frozenset(), frozenset(), elsewhere=True, wrong_fork=True)) == TASKS["fork_sequence"]
