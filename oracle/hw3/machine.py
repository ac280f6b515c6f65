"""The HW3 state machine: the core's (oracle/table_machine.py), built from HW3's table of operations. Each operation
makes the six calls on the model and on an implementation through the driver (oracle/hw3/driver.py), which
compares every aspect after each call and raises Divergence at the first difference. The bundle `sequences`
holds the ids create and fork accepted (later calls may have freed them); the arguments' strategies are
oracle/hw3/strategies.py. The table's order is what shrinking aims at (its first operation first).

    from oracle.hw3.adapters import load_python
    from oracle.hw3.machine import machine_for
    TestEngine = machine_for(load_python("engine.llm_memory")).TestCase   # a pytest/unittest test
"""

from typing import Any, Callable

from hypothesis.stateful import Bundle, consumes

from oracle.hw3 import strategies as st
from oracle.hw3.driver import Divergence, Driver
from oracle.table_machine import Operation, table_machine

__all__ = ["Divergence", "Driver", "machine_for", "machine_of"]

sequences = Bundle("sequences")


def _counted(name: str, act: Callable[..., Any]) -> Callable[..., Any]:
    """`act`, a line of the program counted under the operation `name`."""
    def counted(driver: Driver, **arguments: Any) -> Any:
        driver.begin(name)
        return act(driver, **arguments)

    return counted


def _operation(name: str, act: Callable[..., Any], arguments: dict, target: Bundle | None = None,
               when: Callable[[Driver], bool] | None = None) -> tuple[str, Operation]:
    return name, Operation(_counted(name, act), arguments, target, when)


START = Operation(_counted("init", Driver.init), {"pool_size": st.pool_sizes, "null_pool": st.null_pools})
OPERATIONS = dict([
    _operation("free", Driver.free, {"seq_id": consumes(sequences)}),
    _operation("append", Driver.append, {"seq_id": sequences, "kv_data": st.kv_values}),
    _operation("destroy_and_reinit", Driver.destroy_and_reinit,
               {"pool_size": st.pool_sizes, "null_pool": st.null_pools},
               when=lambda d: not d.model.live or len(d.model.sequences) >= 2),
    _operation("append_burst", Driver.append_burst, {"seq_id": sequences, "to": st.burst_targets,
                                                     "past": st.burst_past, "kv_data": st.kv_values}),
    _operation("blind_call", Driver.blind_call, {"api": st.blind_calls, "null_engine": st.null_engines,
                                                 "seq_id": st.seq_ids, "other": st.seq_ids}),
    _operation("create", lambda d, seq_id, initial_kv_len: d.new_sequence("create_sequence", seq_id, initial_kv_len),
               {"seq_id": st.seq_ids, "initial_kv_len": st.lengths}, sequences),
    _operation("create_filling_pool", Driver.create_filling_pool, {"seq_id": st.seq_ids, "slack": st.fill_slack},
               sequences, when=lambda d: d.model.live and d.free_blocks() > 0),
    _operation("fork", lambda d, parent_seq_id, new_seq_id: d.new_sequence("fork_sequence", new_seq_id, parent_seq_id),
               {"parent_seq_id": sequences, "new_seq_id": st.seq_ids}, sequences),
    _operation("branch", Driver.branch, {"parent_seq_id": sequences, "new_seq_id": st.seq_ids,
                                         "kv_data": st.kv_values}, sequences),
])


def machine_of(driver: type[Driver] = Driver) -> Callable[..., type]:
    """`machine_for(adapter_factory, stats=None)` of a machine whose programs run through `driver` (a Driver)."""
    return table_machine("HW3Machine", START, OPERATIONS, lambda impl, stats, factory: driver(impl, stats),
                         start_name="init", end=driver.end)


machine_for = machine_of()
