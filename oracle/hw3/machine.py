"""The HW3 state machine: fires the six calls at an implementation and at the model, and compares.

After every step the implementation must agree with the model on the return value, the engine's counters,
every ref_count, the active list's order and integrity, each sequence's kv_count, block table and contents,
the whole pool byte for byte, the guard zones and, where the adapter counts them, heap allocations.
A disagreement raises Divergence with one line naming it and the call after which it appeared.

    from oracle.hw3.adapters import load_python
    from oracle.hw3.machine import machine_for
    TestEngine = machine_for(load_python("engine.llm_memory")).TestCase   # a pytest/unittest test
"""

import sys
from functools import wraps
from typing import Any, Callable

from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, multiple, precondition, rule

from oracle.hw3 import strategies as st
from oracle.hw3.adapters import Adapter
from oracle.hw3.call import Call, returned_value, shown
from oracle.hw3.compare import agrees, first_difference
from oracle.hw3.unread import filled
from oracle.difference import Difference
from oracle.hw3.difference import RETURN, crash
from oracle.hw3.model import NULL, Model, Outcome
from oracle.hw3.observation import ImplementationFailure, Observation
from oracle.hw3.step import call_on, predict
from oracle.hw3.spec import INT32_MIN, KV_PER_BLOCK, L2_PT_SIZE, MAX_KV, MAX_LOGICAL_BLOCKS
from oracle.program import Step
from oracle.stats import RunStats
from oracle.step_strategy import install

class Divergence(AssertionError):
    """The implementation and the model disagree; the message is the first difference, located.

    `calls` is every call of the program up to the one that diverged, and `model` the state expected
    after it, so that a failing program can be replayed elsewhere (as C, say). `seen` is the state the
    implementation showed after it (None when it could not be read: a crash, say), and `step` the line of
    the printed program that made the call (1 = the first line after `state = ...`; a `branch` line makes
    two calls, `teardown` one).
    """

    def __init__(self, message: str, calls: list[Call], model: Model, seen: Observation | None = None, step: int = 0,
                 difference: Difference | None = None, before: Observation | None = None):
        super().__init__(message)
        self.calls, self.model, self.seen, self.step = calls, model, seen, step
        self.difference = difference  # the structured value behind the message
        self.before = before  # the state the implementation showed before the call (None: not observed)


def _counted(step: Callable) -> Callable:
    @wraps(step)
    def counted(self: "HW3Machine", **kwargs: Any) -> Any:
        self.stats.steps += 1
        self.stats.rules[step.__name__] += 1
        self.step += 1
        return step(self, **kwargs)

    return counted


def _int32(value: int) -> int:
    return (value - INT32_MIN) % 2**32 + INT32_MIN


class HW3Machine(RuleBasedStateMachine):
    sequences = Bundle("sequences")  # ids that create or fork accepted (later calls may have freed them)
    adapter_factory: Callable[[], Adapter]
    stats: RunStats

    def __init__(self) -> None:
        super().__init__()
        install(self)  # each step drawn as a few plain choices (oracle/step_strategy.py)
        self.stats.examples += 1
        self.impl = self.adapter_factory()
        self.model = Model()
        self.engine: Any = None
        self.calls: list[Call] = []
        self.step = 0  # the program line running (rules and teardown), as Divergence.step
        self.diverged = False  # once a step has failed, teardown only cleans up
        self.difference: Difference | None = None
        self.seen: Observation | None = None  # the state after the last call checked
        self.before: Observation | None = None  # the state before the call being made, when it was checked

    def _diverge(self, message: str, seen: Observation | None = None) -> None:
        self.diverged = True
        raise Divergence(message, self.calls, self.model, seen, self.step, self.difference, self.before)

    def _differs(self, difference: Difference, message: str, seen: Observation | None = None) -> None:
        self.difference = difference  # the structured value behind the message, for the Divergence
        self._diverge(message, seen)

    # -- one call, checked ----------------------------------------------------------------------------

    def _call(self, api: str, *args: int, null: bool = False, check: bool = True) -> Outcome:
        """Make one call on the model and the implementation; compare return values and (if `check`) state.

        `null` passes a NULL engine (for llm_init: a NULL pool); so does a call made while the engine is NULL.
        """
        call, expected = predict(self.model, Step(api, args, null), live=self.engine is not None)
        self.calls.append(call)
        self.before, self.seen = self.seen, None
        try:
            self.engine, returned = call_on(self.impl, Step(api, args, call.null), self.engine)
        except ImplementationFailure as failure:
            self._differs(crash(failure), f"{call} {failure}")
        for event in expected.events:
            self.stats.events[event] += 1
        got = returned_value(api, returned)
        if got != expected.returned:
            difference = Difference(RETURN, "return value", shown(api, expected.returned), shown(api, got))
            self._differs(difference, f"{difference} after {call}", observed(self.impl, self.engine, self.model))
        if check:
            self._check(call, failed=expected.returned is NULL or expected.returned == -1)  # worded only if it fails
        return expected

    def _check(self, made: object, failed: bool) -> None:
        """The state after the call `made` (a Call, or words) against the model's."""
        try:
            seen = filled(self.impl.observe(self.engine), self.model)
        except ImplementationFailure as failure:
            self._differs(crash(failure), f"observing the state after {made}: {failure}")
        difference = None if agrees(self.model, seen, failed) else first_difference(self.model, seen, failed)
        if difference:
            self._differs(difference, f"{difference} after {made}", seen)
        self.seen = seen

    def _free_blocks(self) -> int:
        """The model's free blocks; read off the last state checked while it still stands (it agreed with the
        model, and no call has been made since): a precondition asks before every step."""
        if self.seen is not None and self.seen.engine is not None:
            return self.seen.engine.free_local_blocks
        return self.model.free_blocks()

    # -- rules ------------------------------------------------------------------------------------------

    @initialize(pool_size=st.pool_sizes, null_pool=st.null_pools)
    @_counted
    def init(self, pool_size: int, null_pool: bool) -> None:
        self._call("llm_init", pool_size, null=null_pool)

    @precondition(lambda self: not self.model.live or len(self.model.sequences) >= 2)
    @rule(pool_size=st.pool_sizes, null_pool=st.null_pools)
    @_counted
    def destroy_and_reinit(self, pool_size: int, null_pool: bool) -> None:
        if self.engine is not None:
            self._call("llm_destroy")
        self._call("llm_init", pool_size, null=null_pool)

    def _new_sequence(self, api: str, seq_id: int, *args: int) -> Any:
        accepted = self._call(api, *args, seq_id).returned if api == "fork_sequence" else self._call(api, seq_id, *args).returned
        return seq_id if accepted else multiple()

    @rule(target=sequences, seq_id=st.seq_ids, initial_kv_len=st.lengths)
    @_counted
    def create(self, seq_id: int, initial_kv_len: int) -> Any:
        return self._new_sequence("create_sequence", seq_id, initial_kv_len)

    @precondition(lambda self: self.model.live and self._free_blocks() > 0)
    @rule(target=sequences, seq_id=st.seq_ids, slack=st.fill_slack)
    @_counted
    def create_filling_pool(self, seq_id: int, slack: int) -> Any:
        """Ask for all one sequence can take (every free block, at most 256), `slack` records short of it.

        A negative slack asks for more than there is: OOM on a small pool, the 256-block cap on a large one.
        """
        room = min(self.model.free_blocks(), MAX_LOGICAL_BLOCKS) * KV_PER_BLOCK
        return self._new_sequence("create_sequence", seq_id, room - slack)

    @rule(target=sequences, parent_seq_id=sequences, new_seq_id=st.seq_ids)
    @_counted
    def fork(self, parent_seq_id: int, new_seq_id: int) -> Any:
        return self._new_sequence("fork_sequence", new_seq_id, parent_seq_id)

    @rule(target=sequences, parent_seq_id=sequences, new_seq_id=st.seq_ids, kv_data=st.kv_values)
    @_counted
    def branch(self, parent_seq_id: int, new_seq_id: int, kv_data: int) -> Any:
        """Fork, then append to the child: "regenerate response", where copy-on-write happens."""
        if not self._call("fork_sequence", parent_seq_id, new_seq_id).returned:
            return multiple()
        self._call("append_kv", new_seq_id, kv_data)
        return new_seq_id

    @rule(seq_id=sequences, kv_data=st.kv_values)
    @_counted
    def append(self, seq_id: int, kv_data: int) -> None:
        self._call("append_kv", seq_id, kv_data)

    @rule(seq_id=sequences, to=st.burst_targets, past=st.burst_past, kv_data=st.kv_values)
    @_counted
    def append_burst(self, seq_id: int, to: str, past: int, kv_data: int) -> None:
        """Append kv_data, kv_data+1, ... up to the end of the current block, L2 table or the cap, then `past` more.

        Only the return values are checked inside the burst; the full state is checked before the first
        refused call (which must then change nothing) and at the end.
        """
        seq = self.model.sequences.get(seq_id)
        kv_count = len(seq.values) if seq else 0
        unit = {"block": KV_PER_BLOCK, "l2": KV_PER_BLOCK * L2_PT_SIZE, "cap": MAX_KV}[to]
        count = max(1, unit - kv_count % unit + past)
        made, refused = self._appends(seq_id, kv_data, count)
        if refused:  # it must have changed nothing
            self._check(f"append_kv(engine, {seq_id}, {_int32(kv_data + made - 1)}), append {made} of a burst of {count}",
                        True)
        else:
            self._check(f"append_kv(engine, {seq_id}, ...), a burst of {count}", False)

    def _appends(self, seq_id: int, kv_data: int, count: int) -> tuple[int, bool]:
        """append_kv(engine, seq_id, kv_data + i) (wrapped to int32) for i up to `count`, return values checked, up
        to the first the model refuses: how many were made, and whether the last was refused. What
        `_call(..., check=False)` does for each, in one loop (a burst to the cap is 4096 calls)."""
        if self.engine is None:  # each call is refused (a NULL engine): the first ends it
            return 1, self._call("append_kv", seq_id, _int32(kv_data), check=False).returned == -1
        model, impl, engine, calls, events = self.model, self.impl, self.engine, self.calls, self.stats.events
        append_kv = impl.append_kv
        self.before, self.seen = self.seen, None
        for made in range(1, count + 1):
            value = _int32(kv_data + made - 1)
            expected = model.append_kv(False, seq_id, value)
            call = Call("append_kv", (seq_id, value), False, expected.returned)
            calls.append(call)
            try:
                returned = append_kv(engine, seq_id, value)
            except ImplementationFailure as failure:
                self._differs(crash(failure), f"{call} {failure}")
            for event in expected.events:
                events[event] += 1
            if returned != expected.returned:
                difference = Difference(RETURN, "return value", str(expected.returned), str(returned))
                self._differs(difference, f"{difference} after {call}", observed(impl, engine, model))
            if expected.returned == -1:
                return made, True
            self.before = None  # the state before each later call was not observed
        return count, False

    @rule(seq_id=consumes(sequences))
    @_counted
    def free(self, seq_id: int) -> None:
        self._call("free_sequence", seq_id)

    @rule(api=st.blind_calls, null_engine=st.null_engines, seq_id=st.seq_ids, other=st.seq_ids)
    @_counted
    def blind_call(self, api: str, null_engine: bool, seq_id: int, other: int) -> None:
        """A call with ids drawn blind (mostly unknown, sometimes live), or with a NULL engine.

        Every API must answer NULL/-1 to a NULL engine or an unknown id, and touch nothing.
        """
        args = {"llm_destroy": (), "free_sequence": (seq_id,)}.get(api, (seq_id, other))
        if api == "llm_destroy" and not null_engine:
            return  # destroying the live engine is destroy_and_reinit's job
        self._call(api, *args, null=null_engine)

    def teardown(self) -> None:
        self.step += 1
        # Hypothesis runs teardown in a `finally`: a step that raised anything (a divergence, or an error of the
        # grader's own) is the run's failure, which a later check must not replace
        failed = self.diverged or sys.exc_info()[1] is not None
        try:
            if self.engine is not None and not failed:
                self._call("llm_destroy")  # checked: destroy with live sequences, and (C) no leak after it
        finally:
            self.impl.close()


def observed(impl: Adapter, engine: Any, model: Model) -> Observation | None:
    """The implementation's state after a call that already failed, for its picture; None when it cannot be read."""
    try:
        return filled(impl.observe(engine), model)
    except ImplementationFailure:
        return None


def machine_for(adapter_factory: Callable[[], Adapter], stats: RunStats | None = None) -> type[HW3Machine]:
    """A machine class bound to an implementation; `stats` collects what its runs fire and reach."""
    return type(
        "HW3Machine",
        (HW3Machine,),
        {"adapter_factory": staticmethod(adapter_factory), "stats": stats if stats is not None else RunStats()},
    )
