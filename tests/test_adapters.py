"""The Python adapter on its own: how it reads an implementation white-box, and what it says when the
implementation's structures are broken (a grader must name the breakage, never crash on it)."""

import types

import pytest

from engine import llm_memory as mem
from oracle.hw3.adapters import PythonAdapter, load_python
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.pool import GUARD, initial_pool


def _adapter_with_three_sequences():
    adapter = PythonAdapter(mem)
    engine = adapter.llm_init(64 * 8)
    seqs = [adapter.create_sequence(engine, seq_id, 16) for seq_id in (1, 2, 3)]
    return adapter, engine, seqs


def test_observe_reads_the_engine_the_pool_and_the_guards():
    adapter, engine, _ = _adapter_with_three_sequences()
    adapter.append_kv(engine, 2, -7)
    seen = adapter.observe(engine)
    assert [s.seq_id for s in seen.engine.sequences] == [1, 2, 3]
    assert seen.engine.sequences[1].kv_count == 17
    assert seen.engine.sequences[1].block_table[0][:2] == (1, 3)
    assert seen.engine.free_local_blocks == 4 and seen.engine.list_error is None
    assert seen.pool[:4] == initial_pool(4) and seen.guard_before == seen.guard_after == GUARD


def test_a_prev_pointer_out_of_step_is_named():
    adapter, engine, (first, second, _) = _adapter_with_three_sequences()
    second.node.prev = second.node
    assert adapter.observe(engine).engine.list_error == "position 1 (seq 2): prev does not point to the node before it"


def test_a_node_nobody_returned_is_named():
    adapter, engine, (first, _, _) = _adapter_with_three_sequences()
    stranger = mem.ListNode()
    stranger.prev, stranger.next = first.node, first.node.next
    first.node.next.prev = stranger
    first.node.next = stranger
    assert adapter.observe(engine).engine.list_error == "position 1: the node belongs to no sequence that create or fork returned"


def test_a_list_that_never_returns_to_its_head_is_named_not_walked_forever():
    adapter, engine, (first, second, third) = _adapter_with_three_sequences()
    third.node.next = second.node  # the tail loops back to the middle; every prev left as it was
    assert adapter.observe(engine).engine.list_error == "position 3 (seq 2): prev does not point to the node before it"


def test_a_head_whose_prev_is_not_the_tail_is_named():
    adapter, engine, (first, _, _) = _adapter_with_three_sequences()
    engine.active_seqs.prev = first.node
    assert adapter.observe(engine).engine.list_error == "head.prev is not the last node"


def test_state_of_the_wrong_shape_is_an_implementation_failure():
    adapter, engine, (first, _, _) = _adapter_with_three_sequences()
    first.block_table = None
    with pytest.raises(ImplementationFailure, match="state unreadable"):
        adapter.observe(engine)


def test_an_exception_inside_a_call_is_an_implementation_failure():
    impl = types.SimpleNamespace(**{name: getattr(mem, name) for name in
                                    ("llm_init", "fork_sequence", "append_kv", "free_sequence", "llm_destroy")})
    impl.create_sequence = lambda engine, seq_id, n: 1 // 0
    adapter = PythonAdapter(impl, "impl")
    engine = adapter.llm_init(64)
    with pytest.raises(ImplementationFailure, match="raised ZeroDivisionError"):
        adapter.create_sequence(engine, 1, 1)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("no_such_module_anywhere", "cannot import 'no_such_module_anywhere'"),
        ("engine.llm_memory:nothing", "module 'engine.llm_memory' has no attribute 'nothing'"),
        ("json", "'json' does not define llm_init, create_sequence"),
    ],
)
def test_load_python_refuses_with_one_line(spec, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(")) as refused:
        load_python(spec)
    assert "\n" not in str(refused.value)


def test_load_python_accepts_an_attribute_holding_the_calls():
    holder = types.ModuleType("holder_module")
    holder.impl = mem
    import sys

    sys.modules["holder_module"] = holder
    try:
        adapter = load_python("holder_module:impl")()
        assert adapter.llm_init(64) is not None
    finally:
        del sys.modules["holder_module"]
