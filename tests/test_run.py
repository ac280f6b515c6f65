"""oracle/hw3/run.py: the one loop that applies a program to an implementation and the model together, on plain
values: the in-process Python engine (and variants of it made here), a TrackedModel, no processes."""

from typing import Any

from oracle.difference import CRASH
from oracle.hw3 import load_adapter
from oracle.hw3 import programs
from oracle.hw3.difference import LIST_ORDER, RETURN
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.resync import TrackedModel
from oracle.hw3.run import run
from oracle.hw3.step import expected_calls


class Variant:
    """The reference engine in process, with what a test changes: calls counted, one operation made to crash,
    the state unreadable after some call, a create that puts the new sequence at the head of the list."""

    def __init__(self, crash_on: str = "", unreadable_after: int = 0, at_head: bool = False) -> None:
        self.engine = load_adapter("engine")()
        self.made: list[str] = []
        self.crash_on, self.unreadable_after, self.at_head = crash_on, unreadable_after, at_head

    def __getattr__(self, op: str) -> Any:
        def call(*args: Any) -> Any:
            self.made.append(op)
            if op == self.crash_on:
                raise ImplementationFailure(f"{op} crashed (SIGSEGV)")
            returned = getattr(self.engine, op)(*args)
            if op == "create_sequence" and self.at_head and returned is not None:
                seq = returned
                seq.node.unlink()
                seq.node.add_tail(args[0].active_seqs.next)  # before the first node: the head
            return returned
        return call

    def observe(self, engine: Any) -> Any:
        if self.unreadable_after and len(self.made) >= self.unreadable_after:
            raise ImplementationFailure("reading the state crashed (SIGSEGV)")
        return self.engine.observe(engine)


def test_the_reference_agrees_on_every_step_and_the_calls_are_the_models() -> None:
    program = programs.load("append_kv")
    trace = run(program, Variant(), TrackedModel())
    assert not trace.cut and len(trace.steps) == len(program.steps)
    assert [ran.found for ran in trace.steps] == [[]] * len(program.steps)
    assert trace.calls == expected_calls(program)[0]  # the same calls and returns as the model predicts alone


def test_a_call_s_effects_are_recorded_from_the_states_before_and_after() -> None:
    trace = run(programs.parse("llm_init 640\ncreate_sequence 1 17\ncreate_sequence 2 1\nfree_sequence 1\n", "p"),
                Variant(), TrackedModel())
    first, second, freed = (ran.effects for ran in trace.steps[1:])
    assert first.taken == frozenset({0, 1}) and first.moved == frozenset({1}) and not first.wrote
    assert second.taken == frozenset({2}) and second.picked == frozenset({2})
    assert freed.taken == frozenset()


def test_after_a_difference_the_model_takes_over_and_later_steps_are_judged_on_what_they_change() -> None:
    text = "llm_init 640\ncreate_sequence 1 1\ncreate_sequence 2 1\nappend_kv 1 5\ncreate_sequence 3 1\n"
    trace = run(programs.parse(text, "p"), Variant(at_head=True), TrackedModel())
    found = [[d.aspect for d in ran.found] for ran in trace.steps]
    # seq 2 goes to the head: a difference; the append changes no order; seq 3 at the head differs again
    assert found == [[], [], [LIST_ORDER], [], [LIST_ORDER]]
    assert not trace.cut


def test_the_judge_stops_the_run_and_no_later_call_is_made() -> None:
    implementation = Variant()
    program = programs.load("tail_insertion")
    trace = run(program, implementation, TrackedModel(), judge=lambda ran: ran.number == 3)
    assert [ran.number for ran in trace.steps] == [1, 2, 3] and len(implementation.made) == 3
    assert not trace.cut


def test_a_crash_is_a_difference_and_ends_the_run() -> None:
    implementation = Variant(crash_on="fork_sequence")
    trace = run(programs.parse("llm_init 640\ncreate_sequence 1 1\nfork_sequence 1 2\nfree_sequence 1\n", "p"),
                implementation, TrackedModel())
    last = trace.steps[-1]
    assert last.number == 3 and last.stopped and last.seen is None and [d.aspect for d in last.found] == [CRASH]
    assert trace.cut and implementation.made == ["llm_init", "create_sequence", "fork_sequence"]


def test_a_state_that_cannot_be_read_leaves_return_values_alone_judged() -> None:
    """After the state cannot be read, a call with an engine is made but not judged (the model cannot say), and
    a NULL-engine call's return value is still compared."""
    text = "llm_init 640\ncreate_sequence 1 1\nappend_kv 1 5\ncreate_sequence NULL 2 1\nllm_destroy\n"
    trace = run(programs.parse(text, "p"), Variant(unreadable_after=2), TrackedModel())
    unread = trace.steps[1]
    assert unread.seen is None and not unread.stopped and [d.aspect for d in unread.found] == [CRASH]
    judged = [(ran.number, ran.return_only) for ran in trace.steps]
    assert judged == [(1, False), (2, False), (4, True)]
    assert [(call.api, call.judged) for call in trace.calls] == [
        ("llm_init", True), ("create_sequence", True), ("append_kv", False), ("create_sequence", True),
        ("llm_destroy", False)]
    assert not trace.cut


def test_a_wrong_return_value_is_the_call_s_difference_alone() -> None:
    class RefusesForks(Variant):
        def fork_sequence(self, engine: Any, parent: int, child: int) -> Any:
            self.made.append("fork_sequence")
            return None

    trace = run(programs.parse("llm_init 640\ncreate_sequence 1 1\nfork_sequence 1 2\n", "p"), RefusesForks(),
                TrackedModel())
    (difference,) = trace.steps[2].found
    assert (difference.aspect, difference.expected, difference.got) == (RETURN, "a Sequence", "NULL")
