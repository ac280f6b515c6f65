"""fork_witness.copies_after and effects.copied_a_block: an append that wrote a block a fork's parent and child share
in place, in a graded run whose appends also copy a block (before it, as the model copied; after it, by the pool of
the program's later calls made ahead in the same process), is charged to the fork's rule as well as Task 4's
(rules.rules_of, Effects.fork_too): a fork without references, or a copy-on-write that copies only sometimes, and
the references it shows afterwards cannot excuse the fork (review 11's refs_settled_once_shown, review 9's
fork_marked_in_page_cache). An engine whose appends never copy keeps Task 4's rule alone, and a fork the later
calls show without references takes the difference alone, as before."""

import struct
from pathlib import Path

import pytest

from oracle.hw3 import programs
from oracle.hw3.effects import copied_a_block
from oracle.hw3.pyremote import served
from oracle.hw3.replay import replay
from oracle.hw3.resync import TrackedModel
from oracle.hw3.rules import TASKS, rules_of
from oracle.hw3.run import Trace, run
from oracle.hw3.spec import BLOCK_SIZE, KV_SIZE
from oracle.hw3.step import call_on
from oracle.program import Program
from tests.conftest import broken_python
from tests.tamper_grading import python_module

ROOT = Path(__file__).resolve().parents[1]
FORK, APPEND = TASKS["fork_sequence"], TASKS["append_kv"]

# the engine's fork number FIRST (from 0) takes no reference (fork_no_incref's, `_bug_fork`), the others take theirs:
# forks of one block mixed in one run
FIRST_FORK_WRONG = """
_forks_made = {}


def fork_sequence(engine, parent_seq_id, new_seq_id):
    made = _forks_made.get(id(_engine(engine)), 0) if engine is not None else 0
    if engine is not None:
        _forks_made[id(_engine(engine))] = made + 1
    return (_bug_fork if made == FIRST else base.fork_sequence)(engine, parent_seq_id, new_seq_id)


def llm_init(pool_addr, pool_size):
    engine = base.llm_init(pool_addr, pool_size)
    _forks_made.clear()
    return engine
"""


def _module(tmp_path: Path, name: str, base: str, attack: str) -> str:
    path = tmp_path / f"{name}.py"
    path.write_text(python_module(base, attack))
    return str(path)


def _settled(tmp_path: Path) -> str:
    return _module(tmp_path, "settled", "fork_no_incref",
                   (ROOT / "tests" / "hostile_review11" / "refs_settled_once_shown.py").read_text())


def _mixed(tmp_path: Path, first: int) -> str:
    """fork_no_incref's fork for the engine's fork number `first` (from 0), correct forks for the others."""
    attack = f"_bug_fork = fork_sequence\nFIRST = {first}\n{FIRST_FORK_WRONG}"
    return _module(tmp_path, f"mixed_{first}", "fork_no_incref", attack)


def _graded(spec: str, name: str) -> Trace:
    with served(spec) as remote:
        return run(programs.load(name), remote(), TrackedModel(), fresh=remote)


def _charged(trace: Trace) -> list[tuple[int, tuple[str, ...]]]:
    """Each step with a difference, and the rules its first difference is charged to."""
    return [(ran.number, rules_of(ran.found[0], ran.call, ran.effects)) for ran in trace.steps if ran.found][:1]


def _pool(blocks: dict[int, dict[int, int]], count: int = 4) -> bytes:
    pool = bytearray(count * BLOCK_SIZE)
    for block, slots in blocks.items():
        for slot, value in slots.items():
            struct.pack_into("<i", pool, block * BLOCK_SIZE + slot * KV_SIZE, value)
    return bytes(pool)


def test_a_copy_is_read_from_the_pool_as_records_another_block_holds_and_the_appends_record() -> None:
    shared = {0: 5, 1: 6, 2: 7}
    before = _pool({1: shared, 3: {0: -1, 1: -1}})
    assert copied_a_block(9, before, _pool({1: shared, 2: {**shared, 3: 9}, 3: {0: -1, 1: -1}}))  # block 1 to 2
    assert not copied_a_block(9, before, _pool({1: {**shared, 3: 9}, 3: {0: -1, 1: -1}}))  # in place
    assert not copied_a_block(9, before, _pool({1: shared, 3: {0: 0, 1: 0, 2: 9}}))  # a fresh block zeroed
    assert not copied_a_block(8, before, _pool({1: shared, 2: {**shared, 3: 9}, 3: {0: -1, 1: -1}}))  # not its record


@pytest.mark.parametrize("impl, copies", [("engine.llm_memory", True), (broken_python("no_cow"), False),
                                          (broken_python("fork_no_incref"), False)])
def test_the_engines_own_append_to_a_shared_block_copies_it_or_not(impl: str, copies: bool) -> None:
    steps = programs.load("fork_shares_blocks").steps[:5]  # the child's append to the block it shares
    with served(impl) as remote:
        adapter, engine, pools = remote(), None, []
        for step in steps:
            engine, _ = call_on(adapter, step, engine)
            pools.append(adapter.observe(engine).pool)
    assert copied_a_block(8, pools[-2], pools[-1]) == copies


def test_references_paid_once_the_bug_has_shown_cost_the_fork_and_append_cow(tmp_path: Path) -> None:
    # review 11's attack: the child's append writes in place, then the engine pays its references and the next
    # append (the parent's) copies the block the two share: the in-place write is both rules'
    trace = _graded(_settled(tmp_path), "fork_shares_blocks")
    assert _charged(trace) == [(5, (APPEND, FORK))]
    assert trace.steps[4].effects is not None and trace.steps[4].effects.fork_too and not trace.steps[4].effects.wrong_fork


def test_the_first_difference_is_each_items_own_where_it_is_charged_to_both(tmp_path: Path) -> None:
    spec = _settled(tmp_path)
    for rule in (FORK, APPEND):
        with served(spec) as remote:
            found = replay(remote(), programs.load("fork_shares_blocks"), owns=lambda r, rule=rule: r == rule,
                           fresh=remote)
        assert found is not None and (found.step, found.rule) == (5, rule)


@pytest.mark.parametrize("first, step", [(0, 5), (1, 8)])
def test_forks_of_one_block_mixed_in_a_run_cost_the_fork(tmp_path: Path, first: int, step: int) -> None:
    # fork_shares_blocks: the first fork without references, the second with (its append copies after the child's
    # in place), or the reverse (the child's append copied before the grandchild's in place)
    assert _charged(_graded(_mixed(tmp_path, first), "fork_shares_blocks")) == [(step, (APPEND, FORK))]


@pytest.mark.parametrize("name", ["fork_shares_blocks", "append_kv", "append_kv_shared_by_four", "fork_sequence"])
def test_an_append_that_never_copies_keeps_its_own_rule_alone(name: str) -> None:
    assert [rules for _, rules in _charged(_graded(broken_python("no_cow"), name))] == [(APPEND,)]


@pytest.mark.parametrize("name", ["fork_shares_blocks", "append_kv", "append_kv_shared_by_four"])
def test_a_fork_the_later_calls_show_without_references_takes_the_difference_alone(name: str) -> None:
    trace = _graded(broken_python("fork_no_incref"), name)
    assert [rules for _, rules in _charged(trace)] == [(FORK,)]
    assert not any(ran.effects is not None and ran.effects.fork_too for ran in trace.steps)


def test_a_correct_engine_is_charged_nothing() -> None:
    for name in ("fork_shares_blocks", "append_kv_shared_by_four", "fork_references", "fork_sequence"):
        assert _charged(_graded("engine.llm_memory", name)) == [], name
