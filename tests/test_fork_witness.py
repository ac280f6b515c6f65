"""oracle/hw3/fork_witness.py: a fork whose references are wrong, told from the pool and the returns: an append of the
graded run to a block the fork's parent and child share wrote its record in place (effects.wrote_in_place, read by
run.py from the graded step), and the checks of its references, replayed in a fresh process (the parent freed, the pool
filled, one create that must be refused), fail where a control without the fork passes; and rules.py charging what
follows such a fork to the fork."""

import copy
import struct
from pathlib import Path

import pytest

from oracle.difference import Difference
from oracle.hw3 import load_adapter, programs
from oracle.hw3.difference import CONTENTS, GUARD, POOL, RETURN
from oracle.hw3.effects import wrote_elsewhere, wrote_held, wrote_in_place
from oracle.hw3.fork_witness import INT_MAX, MOST_FILLING, _ids, _references_missed, _with_checks, fork_shown_wrong
from oracle.hw3.call import Call
from oracle.hw3.model import Model
from oracle.hw3.observation import UNREAD, Observation
from oracle.hw3.pool import initial_pool
from oracle.hw3.pyremote import served
from oracle.hw3.resync import TrackedModel
from oracle.hw3.rules import FIRST_FIT, MEMORY_SAFETY, TASKS, Effects, rule_of
from oracle.hw3.run import Trace, run
from oracle.program import Program, Step

# a parent of two blocks forked, then the child's append (in place when the fork took no reference)
FORKED = [Step("llm_init", (640,)), Step("create_sequence", (1, 20)), Step("append_kv", (1, 7)),
          Step("fork_sequence", (1, 2)), Step("append_kv", (2, 8))]
IN_PLACE = [(4, frozenset({1, 2}))]  # FORKED's last append, in place into block 1, which 1 and 2 share


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
    assert fork_shown_wrong(load_adapter(impl), FORKED, IN_PLACE)


@pytest.mark.parametrize("impl", ["engine.llm_memory", "tests.broken.no_cow", "tests.broken.last_fit", "tests.broken.cow_copies_written_only"])
def test_a_fork_that_takes_its_references_is_not_shown_wrong(impl: str) -> None:
    assert _blamed(_graded(impl, FORKED)) == []  # their bugs are the append's or first fit's
    assert not fork_shown_wrong(load_adapter(impl), FORKED, IN_PLACE)  # even were the append in place: references held


def test_without_an_append_in_place_in_the_graded_run_no_fork_is_shown_wrong() -> None:
    fresh = load_adapter("tests.broken.fork_no_incref")
    assert not fork_shown_wrong(fresh, FORKED, [])  # the references alone never blame the fork
    assert not fork_shown_wrong(fresh, FORKED, [(2, frozenset({1, 2}))])  # before the fork
    assert not fork_shown_wrong(fresh, FORKED, [(4, frozenset({2, 3}))])  # a block the fork's two do not both hold
    # fork_references.txt shows the missing references only by a create granted after the parent's free, which a
    # greedy free after a correct fork shows as well: the create keeps its own rule there
    steps = programs.load("fork_references").steps
    refused = next(at for at, step in enumerate(steps) if step.op == "create_sequence" and step.args == (4, 1))
    assert _blamed(_graded("tests.broken.fork_no_incref", steps[: refused + 1])) == []


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
    fresh, forked, spec = load_adapter(name), FORKED[:4], str(tmp_path / f"{name}.py")
    # the references' checks alone would blame the fork: the freed parent gives back the blocks the child holds ...
    assert _references_missed(fresh, forked, forked[:3], 1, _ids(FORKED))
    # ... but the fork took its references: the child's append copies the block they share, in the graded run
    assert _blamed(_graded(spec, FORKED)) == []
    # fork_sequence.txt: two forks, the first parent freed (every reference of its blocks dropped), then an append
    # to a block the second fork's two share, in place: the control without that fork fails the same way
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
    fresh, forked = load_adapter("tests.broken.no_cow"), FORKED[:4]
    assert not _references_missed(fresh, forked, forked[:3], 1, _ids(FORKED))


def test_in_a_full_pool_the_append_the_model_refuses_is_in_place_after_a_fork_without_references() -> None:
    # failing_calls.txt's end: no block free for the copy, so the model refuses the child's append; a fork that took
    # no reference lets it write in place, and return 0
    full = [Step("llm_init", (640,)), Step("create_sequence", (1, 20)), Step("create_sequence", (2, 128)),
            Step("fork_sequence", (1, 3)), Step("append_kv", (3, 5))]
    assert _blamed(_graded("tests.broken.fork_no_incref", full)) == [5]
    assert _blamed(_graded("engine.llm_memory", full)) == []


def test_the_fork_item_shows_a_fork_without_references_in_the_graded_run() -> None:
    # fork_shares_blocks.txt: the child's append to the block it shares with its parent, right after the fork
    steps = programs.load("fork_shares_blocks").steps
    assert _blamed(_graded("tests.broken.fork_no_incref", steps)) == [5]
    trace = _graded("engine.llm_memory", steps)
    assert _blamed(trace) == [] and not any(ran.found for ran in trace.steps)


def test_a_count_bug_that_shows_without_the_fork_is_not_the_forks() -> None:
    # a free that never raises the free count, before the fork: the pool filled after the fork is refused a
    # create, and so is the control's without the fork
    freed_first = [FORKED[0], Step("create_sequence", (5, 16)), Step("free_sequence", (5,)), *FORKED[1:]]
    assert not fork_shown_wrong(load_adapter("tests.broken.free_count_not_incremented"), freed_first, [(6, frozenset({1, 2}))])


def test_a_witness_that_crashes_gives_no_opinion() -> None:
    # each create counts a block free again: the fork's checks ask the engine for a block it has not, and it
    # raises (a crash in a witness shows nothing of the fork)
    assert not fork_shown_wrong(load_adapter("tests.broken.probe_bugs:create_takes_no_block"), FORKED, IN_PLACE)


def test_only_the_forks_of_the_engine_now_live_are_asked() -> None:
    fresh = load_adapter("tests.broken.fork_no_incref")
    assert not fork_shown_wrong(fresh, FORKED[:3], IN_PLACE)  # no fork yet
    again = [*FORKED, Step("llm_init", (640,)), Step("create_sequence", (1, 3))]
    assert not fork_shown_wrong(fresh, again, IN_PLACE)
    refused = [FORKED[0], FORKED[1], Step("fork_sequence", (5, 2))]  # an unknown parent: no fork made
    assert not fork_shown_wrong(fresh, refused, [(3, frozenset({5, 2}))])


def test_each_forks_verdict_is_kept_for_the_program() -> None:
    known: dict[int, bool] = {}
    assert fork_shown_wrong(load_adapter("tests.broken.fork_no_incref"), FORKED, IN_PLACE, known)
    assert known == {3: True}
    known[3] = False  # a verdict kept is not asked again
    assert not fork_shown_wrong(load_adapter("tests.broken.fork_no_incref"), FORKED, IN_PLACE, known)


def test_the_checks_free_the_parent_fill_the_pool_and_make_one_create_that_must_be_refused() -> None:
    steps, checks = _with_checks(FORKED[:4], 1, _ids(FORKED))
    assert steps[:4] == FORKED[:4] and checks == 3  # 10 blocks, 8 free once the parent is: ids past 2
    assert steps[4:] == [Step("free_sequence", (1,)), Step("create_sequence", (3, 128)), Step("create_sequence", (4, 1))]


def test_the_checks_follow_the_programs_pool_and_ids() -> None:
    big = [Step("llm_init", (64 * 600,)), Step("create_sequence", (40, 1)), Step("fork_sequence", (40, 41))]
    steps, checks = _with_checks(big, 40, _ids(big))
    assert steps[3:] == [Step("free_sequence", (40,)), Step("create_sequence", (42, 256 * 16)),
                         Step("create_sequence", (43, 256 * 16)), Step("create_sequence", (44, 87 * 16)),
                         Step("create_sequence", (45, 1))]
    assert _ids([Step("create_sequence", (INT_MAX, 1))])[:2] == [INT_MAX - 1, INT_MAX - 2]  # not past an int's end
    ends = [Step("create_sequence", (INT_MAX, 1)), Step("fork_sequence", (INT_MAX, -INT_MAX - 1)), Step("append_kv", (1, 0))]
    assert _ids(ends)[:3] == [0, 2, 3]  # both ends named: the first ids it does not name
    huge = [Step("llm_init", (64 * 256 * (MOST_FILLING + 1),)), *big[1:]]
    assert _with_checks(huge, 40, _ids(huge))[1] == 0  # too large a pool to fill: no second opinion


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
