"""The HW3 driver: one program's calls, each made on the model and on the implementation and compared, for the
machine built from HW3's table of operations (oracle/hw3/machine.py, by the core's oracle/table_machine.py).

After every step the implementation must agree with the model on the return value, the engine's counters,
every ref_count, the active list's order and integrity, each sequence's kv_count, block table and contents,
the whole pool byte for byte, the guard zones and, where the adapter counts them, heap allocations
(oracle/hw3/compare.py). A disagreement raises Divergence with one line naming it and the call after which it
appeared; the rule it breaks is named when it becomes a Finding (checks.finding_from: it needs the calls and the
pool before the call)."""

from typing import Any

from hypothesis.stateful import multiple

from oracle import checked
from oracle.checked import Checked
from oracle.difference import Difference
from oracle.hw3.adapters import Adapter
from oracle.hw3.call import Call, returned_value, shown
from oracle.hw3.compare import agrees, first_difference
from oracle.hw3.difference import RETURN, crash
from oracle.hw3.model import NULL, Model, Outcome
from oracle.hw3.observation import ImplementationFailure, Observation
from oracle.hw3.spec import INT32_MIN, KV_PER_BLOCK, L2_PT_SIZE, MAX_KV, MAX_LOGICAL_BLOCKS
from oracle.hw3.step import call_on, predict
from oracle.hw3.unread import filled
from oracle.program import Step
from oracle.stats import RunStats


class Divergence(checked.Divergence):
    """The implementation and the model disagree; the message is the first difference, located.

    `calls` is every call of the program up to the one that diverged, and `model` the state expected
    after it, so that a failing program can be replayed elsewhere (as C, say). `seen` is the state the
    implementation showed after it (None when it could not be read: a crash, say), and `step` the line of
    the printed program that made the call (1 = the first line after `state = ...`; a `branch` line makes
    two calls, `teardown` one). `before`: the state the implementation showed before the call (None: not observed).
    """

    def __init__(self, message: str, calls: list[Call], model: Model, seen: Observation | None = None, step: int = 0,
                 difference: Difference | None = None, before: Observation | None = None):
        AssertionError.__init__(self, message)
        self.call, self.op = (str(calls[-1]), calls[-1].api) if calls else ("", "")
        self.difference, self.rule, self.made, self.adapter = difference, "", [], None  # type: ignore[assignment]
        self.calls, self.model, self.seen, self.step, self.before = calls, model, seen, step, before


def _int32(value: int) -> int:
    return (value - INT32_MIN) % 2**32 + INT32_MIN


class Driver(Checked):
    failure = ImplementationFailure

    def __init__(self, adapter: Adapter, stats: RunStats | None = None):
        super().__init__(adapter, stats, lambda difference, op: "")  # the rule: at the Finding (checks.finding_from)
        self.model = Model()
        self.engine: Any = None
        self.calls: list[Call] = []
        self.line = 0  # the program line running (operations and the end), as Divergence.step
        self.diverged = False  # once a step has failed, the end only cleans up
        self.seen: Observation | None = None  # the state after the last call checked
        self.before: Observation | None = None  # the state before the call being made, when it was checked

    def begin(self, operation: str) -> None:
        """A line of the program begins: counted under its operation."""
        self.stats.steps += 1
        self.stats.rules[operation] += 1
        self.line += 1

    def _differs(self, difference: Difference, message: str, seen: Observation | None = None) -> None:
        self.diverged = True
        raise Divergence(message, self.calls, self.model, seen, self.line, difference, self.before)

    # -- one call, checked ----------------------------------------------------------------------------

    def make(self, api: str, *args: int, null: bool = False, check: bool = True) -> Outcome:
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
            self.check(call, failed=expected.returned is NULL or expected.returned == -1)  # worded only if it fails
        return expected

    def check(self, made: object, failed: bool) -> None:
        """The state after the call `made` (a Call, or words) against the model's."""
        try:
            seen = filled(self.impl.observe(self.engine), self.model)
        except ImplementationFailure as failure:
            self._differs(crash(failure), f"observing the state after {made}: {failure}")
        difference = None if agrees(self.model, seen, failed) else first_difference(self.model, seen, failed)
        if difference:
            self._differs(difference, f"{difference} after {made}", seen)
        self.seen = seen

    def free_blocks(self) -> int:
        """The model's free blocks; read off the last state checked while it still stands (it agreed with the
        model, and no call has been made since): a precondition asks before every step."""
        if self.seen is not None and self.seen.engine is not None:
            return self.seen.engine.free_local_blocks
        return self.model.free_blocks()

    # -- the operations -----------------------------------------------------------------------------------

    def init(self, pool_size: int, null_pool: bool) -> None:
        self.make("llm_init", pool_size, null=null_pool)

    def destroy_and_reinit(self, pool_size: int, null_pool: bool) -> None:
        if self.engine is not None:
            self.make("llm_destroy")
        self.make("llm_init", pool_size, null=null_pool)

    def append(self, seq_id: int, kv_data: int) -> None:
        self.make("append_kv", seq_id, kv_data)

    def free(self, seq_id: int) -> None:
        self.make("free_sequence", seq_id)

    def new_sequence(self, api: str, seq_id: int, *args: int) -> Any:
        """create_sequence(seq_id, *args) or fork_sequence(*args, seq_id): the id, when accepted, for the bundle."""
        made = self.make(api, *args, seq_id) if api == "fork_sequence" else self.make(api, seq_id, *args)
        return seq_id if made.returned else multiple()

    def create_filling_pool(self, seq_id: int, slack: int) -> Any:
        """Ask for all one sequence can take (every free block, at most 256), `slack` records short of it.

        A negative slack asks for more than there is: OOM on a small pool, the 256-block cap on a large one.
        """
        room = min(self.model.free_blocks(), MAX_LOGICAL_BLOCKS) * KV_PER_BLOCK
        return self.new_sequence("create_sequence", seq_id, room - slack)

    def branch(self, parent_seq_id: int, new_seq_id: int, kv_data: int) -> Any:
        """Fork, then append to the child: "regenerate response", where copy-on-write happens."""
        if not self.make("fork_sequence", parent_seq_id, new_seq_id).returned:
            return multiple()
        self.make("append_kv", new_seq_id, kv_data)
        return new_seq_id

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
            last = _int32(kv_data + made - 1)
            self.check(f"append_kv(engine, {seq_id}, {last}), append {made} of a burst of {count}", True)
        else:
            self.check(f"append_kv(engine, {seq_id}, ...), a burst of {count}", False)

    def _appends(self, seq_id: int, kv_data: int, count: int) -> tuple[int, bool]:
        """append_kv(engine, seq_id, kv_data + i) (wrapped to int32) for i up to `count`, return values checked, up
        to the first the model refuses: how many were made, and whether the last was refused. What
        `make(..., check=False)` does for each, in one loop (a burst to the cap is 4096 calls)."""
        if self.engine is None:  # each call is refused (a NULL engine): the first ends it
            return 1, self.make("append_kv", seq_id, _int32(kv_data), check=False).returned == -1
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

    def blind_call(self, api: str, null_engine: bool, seq_id: int, other: int) -> None:
        """A call with ids drawn blind (mostly unknown, sometimes live), or with a NULL engine.

        Every API must answer NULL/-1 to a NULL engine or an unknown id, and touch nothing.
        """
        args = {"llm_destroy": (), "free_sequence": (seq_id,)}.get(api, (seq_id, other))
        if api == "llm_destroy" and not null_engine:
            return  # destroying the live engine is destroy_and_reinit's job
        self.make(api, *args, null=null_engine)

    def end(self) -> None:
        """The program's last line (teardown): the live engine destroyed, checked (destroy with live sequences,
        and (C) no leak after it). Not run after a failed step."""
        self.line += 1
        if self.engine is not None and not self.diverged:
            self.make("llm_destroy")


def observed(impl: Adapter, engine: Any, model: Model) -> Observation | None:
    """The implementation's state after a call that already failed, for its picture; None when it cannot be read."""
    try:
        return filled(impl.observe(engine), model)
    except ImplementationFailure:
        return None
