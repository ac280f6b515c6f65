"""A Python submission judged on its calls' return values and the grader-owned pool alone (oracle/hw3/unread.py):
the model's own state stands in for the engine's objects, which are never read, and each broken Python
fixture still costs the items of the rule its bug breaks where the returns and the pool show it, once, plus
possibly fuzz."""

from pathlib import Path

import pytest

import copy
import struct

from oracle.difference import Difference
from oracle.hw3.difference import CONTENTS, POOL, RETURN
from oracle.hw3.grade import grade, load
from oracle.hw3.call import Call
from oracle.hw3.model import Model
from oracle.hw3.observation import UNREAD, EngineState, Observation
from oracle.hw3.pool import initial_pool
from oracle.hw3.effects import wrote_elsewhere
from oracle.hw3.rules import FIRST_FIT, FREE_BLOCK_CONSISTENCY, TASKS, Effects, rule_of
from oracle.hw3.unread import filled, modelled
from tests.conftest import broken_python
from tests.fixtures import HW3_PYTHON_FAILS, HW3_PYTHON_UNREAD
from tests.test_grade import small_rubric


def test_an_unread_engine_is_the_models_state_and_a_read_one_is_left_as_it_is() -> None:
    model = Model()
    model.llm_init(4 * 64)
    model.create_sequence(False, 7, 20)
    pool = bytes(4 * 64)
    state = filled(Observation(UNREAD, pool), model)
    assert state is not None and state.engine == modelled(model) and state.pool is pool and not state.state_read
    assert state.engine.free_local_blocks == 2 and state.engine.ref_count == (1, 1, 0, 0)
    assert [(s.seq_id, s.kv_count) for s in state.engine.sequences] == [(7, 20)]
    read = Observation(EngineState(4, 0, (0, 0, 0, 0), ()), pool)
    assert filled(read, model) is read  # a C engine's state is its own
    assert filled(Observation(None, pool), model) == Observation(None, pool)  # a NULL handle is NULL
    model.llm_destroy(False)
    assert filled(Observation(UNREAD, pool), model) == Observation(None, pool, state_read=False)  # none held


def _appended_at(pool: bytes, block: int, offset: int, value: int) -> bytes:
    at = (block * 16 + offset) * 4
    return pool[:at] + struct.pack("<i", value) + pool[at + 4 :]


def test_a_record_in_another_block_than_the_models_and_the_shared_one_is_wrote_elsewhere() -> None:
    model = Model()
    model.llm_init(4 * 64)
    model.create_sequence(False, 1, 16)  # block 0, full
    model.fork_sequence(False, 1, 2)  # block 0 shared
    was = copy.deepcopy(model)
    model.append_kv(False, 2, 9)  # a new block: 1, record 16 at offset 0
    before = Observation(UNREAD, initial_pool(4 * 64))
    call = Call("append_kv", (2, 9), False, 0)
    landed = lambda block: Observation(UNREAD, _appended_at(before.pool, block, 0, 9))  # noqa: E731
    assert not wrote_elsewhere(call, was, model, before, landed(1))  # the model's block
    assert wrote_elsewhere(call, was, model, before, landed(3))  # a block first fit would not take
    model = copy.deepcopy(was)
    model.create_sequence(False, 3, 15)  # block 1, one record short of full
    was = copy.deepcopy(model)
    model.fork_sequence(False, 3, 4)
    was = copy.deepcopy(model)
    model.append_kv(False, 4, 9)  # shared: copied to block 2, record 15 at offset 15
    landed = lambda block: Observation(UNREAD, _appended_at(before.pool, block, 15, 9))  # noqa: E731
    assert not wrote_elsewhere(Call("append_kv", (4, 9), False, 0), was, model, before, landed(1))  # in place: no copy
    assert wrote_elsewhere(Call("append_kv", (4, 9), False, 0), was, model, before, landed(3))


def test_the_facts_read_from_the_pool_and_the_returns_name_first_fit_and_the_free_count() -> None:
    append, create = Call("append_kv", (1, 5), False, 0), Call("create_sequence", (1, 5), False, True)
    contents, refused = Difference(CONTENTS, "seq 1 record 0 (block 0)", 5, 0, seq=1), Difference(RETURN, "", 0, -1)
    none = Effects(frozenset(), frozenset())
    assert rule_of(contents, append, Effects(frozenset(), frozenset(), elsewhere=True)) == FIRST_FIT
    assert rule_of(Difference(POOL, "pool", 1, 2), append, Effects(frozenset(), frozenset(), elsewhere=True)) == FIRST_FIT
    assert rule_of(contents, append, none) == TASKS["append_kv"]
    for call in (append, create):
        assert rule_of(refused, call, Effects(frozenset(), frozenset(), short=True)) == FREE_BLOCK_CONSISTENCY
        assert rule_of(refused, call, none) == TASKS[call.api]


# the items each fails, fuzz aside: the same as for C where the returns and the pool show the bug (tests/fixtures.py)
@pytest.mark.parametrize("name", sorted(HW3_PYTHON_UNREAD))
def test_a_broken_python_fixture_fails_the_items_its_returns_and_pool_show(name: str, tmp_path: Path) -> None:
    report = grade(broken_python(name), load(small_rubric(tmp_path / "rubric.toml")), tmp_path, timeout=2.0)
    failed = {item.id for item in report.items if item.status == "failed"}
    assert failed - {"fuzz"} == HW3_PYTHON_FAILS[name], [(i.id, i.message) for i in report.items if i.id in failed]
    left_out = {item.id for item in report.items if item.status == "not_applicable"}
    assert left_out == {"compiles", "big_pool", "memory_safety", "alloc_failure", "l1_traversal", "tail_insertion"}
