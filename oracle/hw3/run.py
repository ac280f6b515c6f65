"""The one loop: a program applied to an implementation and the model together, step by step. Per step the model
predicts, the implementation is called and observed, the two are compared into structured differences, and what
the call did is recorded (effects.py). After a difference the model takes over the observed state (resync.py),
so each later step is judged on what it changes; differences the model cannot take over are carried, and only
new ones count.

Where the model cannot follow (it lost the counts, or a state it cannot take over), the calls are made and
listed unjudged; where a call returned but its state cannot be read, only return values are compared from then
on. A crash or hang ends the run, as does a step the model cannot follow and no call can be made for.

    trace = run(program, adapter, TrackedModel())

`judge(ran)`, when given, is asked after each judged step, before the model takes over, whether to stop there
(replay.py's judge stops at the first difference of its item's rule)."""

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable

from oracle.difference import Difference
from oracle.hw3.alone import Aside
from oracle.hw3.compare import differences, state_changes
from oracle.hw3.difference import LIST_ORDER, RETURN, crash
from oracle.hw3.effects import effects_of, wrote_in_place
from oracle.hw3.fork_witness import ForkWitness
from oracle.hw3.fresh_pool import search_failed
from oracle.hw3.graded_calls import GradedCalls
from oracle.hw3.call import Call, returned_value, shown
from oracle.hw3.observation import UNREAD, ImplementationFailure, Observation
from oracle.hw3.resync import ModelLost, TrackedModel, resync
from oracle.hw3.rules import WALKS, Effects, fails
from oracle.hw3.spec import L2_PT_SIZE, UNMAPPED
from oracle.hw3.unread import filled
from oracle.program import Program, Step


@dataclass
class Ran:
    """One judged step as run: the call as made (with the return the model expected), every call made so far,
    the differences after it (none: the implementation agreed), the state the implementation showed (None when
    it crashed, hung, or its state could not be read) and what the call did to it (None when unknown)."""

    number: int  # the step's number in the program, from 1
    call: Call
    calls: list[Call]
    found: list[Difference]
    seen: Observation | None = None
    effects: Effects | None = None
    stopped: bool = False  # the call, or the observation after it, crashed or hung
    return_only: bool = False  # the state could not be read since an earlier step: the return value alone was compared
    walk: bool = False  # a free or fork of blocks in two L1 slots or more: one that skips a slot can show
    refused: bool = False  # a create or append refused where the model took blocks it had free (free count unread)
    counted: bool = False  # a call before it since the last llm_init moved the free count, in the model
    printed: str | None = None  # what the submission printed up to it, where later calls were made ahead (None:
    # the adapter's output is up to it)


@dataclass
class Trace:
    """A run: its judged steps, every call made (judged or not), and whether it ended before its last step
    (a crash or hang, or a state the model could not follow)."""

    steps: list[Ran] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    cut: bool = False


def run(program: Program, implementation: Any, model: TrackedModel, modulo: frozenset[str] = frozenset(),
        fresh: Callable[[], Any] | None = None, judge: Callable[[Ran], bool] | None = None,
        refuses_alone: Callable[[Call, Callable[[], Any]], bool] | None = None) -> Trace:
    """Applies `program` to `implementation` and `model` together, comparing after every call (leniently on the
    aspects in `modulo`). `fresh` opens another implementation, for a second opinion on a create or append that
    left a block unmapped (fresh_pool.py), never while the run's own process is alive (alone.py). For an engine
    whose objects are not read, a difference that follows a fork is asked of the fork (fork_witness.py), on the
    program's later calls made ahead in the run's own process (graded_calls.py). `judge` may stop the run after
    a step. `refuses_alone(call, fresh)`, for an engine whose free count is not read, says whether the graded
    runs of the call's own item show that call refused before any call moved the free count (refusal_rule.py):
    a refusal of it after such calls is then the call's own, else the free count's (without it, or without
    `fresh`, the free count's)."""
    trace, engine, aside = Trace(), None, Aside(implementation, fresh)
    graded = GradedCalls(implementation, program.steps)  # the calls made, and those made ahead of the judging
    before: Observation | None = None
    carried: set[str] = set()  # differences the model could not take over
    blind = False  # the model lost the counts, then a state it could not take over: NULL-engine calls only
    unreadable = False  # a call returned, but its state could not be read: return values alone are compared
    unread = False  # the engine's objects are not read (a Python submission's, unread.py): its calls' returns say
    counted = False  # what they did; a call since the last llm_init moved the free count, in the model
    forks = ForkWitness(program.steps)  # fork_witness.py
    in_place: list[tuple[int, frozenset[int]]] = []  # the appends that wrote a shared block in place, and its sharers
    copied = False  # an append of the run copied a shared block where the model did (fork_witness.py)
    for number, step in enumerate(program.steps, 1):
        try:
            if not graded.made_ahead(number - 1):  # in a fresh process after a second opinion
                engine = aside.resumed(engine, trace.calls)
        except ImplementationFailure:
            trace.cut = True
            return trace
        was = copy.deepcopy(model) if unread else None  # the model before the call: what a failing call leaves
        null_engine = step.null if step.op == "llm_init" else step.null or engine is None
        mapped = model.mapped()
        walked = model.sequences.get(step.args[0]) if step.op in WALKS and not null_engine else None
        walk = walked is not None and len({i // L2_PT_SIZE for i, block in enumerate(walked.blocks) if block != UNMAPPED}) > 1
        free_before = model.free_count()
        try:
            if step.op == "llm_init":
                blind, unreadable, expected = False, False, model.llm_init(step.args[0], step.null)
            elif (blind or unreadable) and not null_engine:
                raise ModelLost("the model could not take over the state the last call left")
            else:
                expected = getattr(model, step.op)(null_engine, *step.args)
        except ModelLost:
            if (model.lost or unreadable) and engine is not None and trace.steps:
                engine, returned, seen = _unjudged(graded, number - 1, step, engine, trace.calls, observe=not unreadable)
                seen = filled(seen, model)
                if seen is not None:  # the model takes over what it left, or carries what it cannot
                    blind = resync(model, seen) is not None
                    carried = {str(d) for d in differences(model, seen, False, modulo=modulo)} if blind else set()
                    before = seen
                    continue
                if returned and unreadable:
                    continue
            trace.cut = True
            return trace
        call = Call(step.op, step.args, null_engine, expected.returned)
        trace.calls.append(call)
        ran = Ran(number, call, list(trace.calls), [], walk=walk, counted=counted)
        counted = step.op != "llm_init" and (counted or model.free_count() != free_before)
        trace.steps.append(ran)
        failed, returned_normally, got = False, False, None
        try:
            engine, returned = graded.call(number - 1, engine)
            returned_normally = True
            got = returned_value(step.op, returned)
            if got != expected.returned:
                ran.found.append(Difference(RETURN, "return value", shown(step.op, expected.returned), shown(step.op, got)))
            failed = fails(step.op, expected.returned) and got == expected.returned  # Constraint 2 binds a failing call
            if unreadable:
                ran.return_only, ran.printed = True, graded.printed(number - 1)
                if judge is not None and judge(ran):
                    return trace
                continue
            observed = graded.observe(number - 1, engine)
            unread, ran.seen = observed.engine is UNREAD, filled(observed, model)
            if not ran.found:  # a wrong return value is the call's rule; the state it leaves follows from it
                ran.found += [d for d in differences(model, ran.seen, failed, modulo=modulo) if str(d) not in carried]
            if failed and not ran.found and before is not None and step.op != "llm_init":
                ran.found += state_changes(before, ran.seen)
        except ImplementationFailure as failure:
            ran.found.append(crash(failure))
        ran.stopped = ran.seen is None and not returned_normally
        ran.effects = effects_of(call, before, ran.seen, frozenset(model.mapped() - mapped), (was, model) if unread else None)
        if ran.effects is not None and any(d.aspect != LIST_ORDER for d in ran.found):
            ran.effects = dataclasses.replace(ran.effects, reordered_only=False)
        sharers = wrote_in_place(call, was, before, ran.seen) if was is not None else frozenset()
        if sharers:
            in_place.append((number - 1, sharers))  # the graded run's own evidence of a fork's references
        granted = bool(ran.found) and ran.found[0].aspect == RETURN and "oom_refusal" in expected.events and not fails(step.op, got)
        if (ran.effects is not None and was is not None and ran.found
                and (ran.effects.held or ran.effects.elsewhere or granted)):  # its references unread: the later
            if forks.shown_wrong(number - 1, in_place, lambda: graded.program_returns(engine)):  # calls made ahead
                ran.effects = dataclasses.replace(ran.effects, wrong_fork=True)
            elif (sharers and ran.seen is not None and forks.shares_a_fork(number - 1, sharers)  # in place, and the
                  and (copied or forks.copies_after(number - 1, ran.seen.pool, graded.program_pools(engine)))):
                ran.effects = dataclasses.replace(ran.effects, fork_too=True)  # run's appends copy: both rules
        copied = copied or (was is not None and step.op == "append_kv" and "cow_copy" in expected.events
                            and not ran.found)  # an append of the graded run copied a shared block, as the model
        if (ran.effects is not None and fresh is not None and step.op in ("create_sequence", "append_kv")
                and step.args[0] in model.sequences
                and search_failed(aside.fresh, ran.found, program.steps[:number],
                                  len(model.sequences[step.args[0]].values), "cow_copy" in expected.events,
                                  len(ran.effects.picked or ()), len(ran.effects.taken))):
            ran.effects = dataclasses.replace(ran.effects, search_failed=True)
        ran.refused = (ran.effects is not None and was is not None and bool(ran.effects.picked) and bool(ran.found)
                       and ran.found[0].aspect == RETURN and fails(step.op, got))  # its free count unread
        if (ran.refused and ran.counted and ran.effects is not None
                and (refuses_alone is None or fresh is None or not refuses_alone(call, aside.fresh))):
            ran.effects = dataclasses.replace(ran.effects, short=True)
        ran.printed = graded.printed(number - 1)
        if judge is not None and judge(ran):
            return trace
        if not ran.found:
            before = ran.seen
            continue
        if ran.seen is None and returned_normally:  # its state cannot be read: the model follows no further,
            unreadable, before = True, None  # NULL-engine calls' returns are still judged
            continue
        if ran.seen is None:  # it crashed or hung: nothing further can be checked
            trace.cut = True
            return trace
        if was is not None and (ran.found[0].aspect == RETURN or step.op == "append_kv"):  # an engine whose objects
            unreadable, before = True, None  # are not read: what it holds after a call that returned otherwise than
            continue  # the model's, or an append the pool shows astray, nothing says; the model follows no further
        if resync(model, ran.seen) is None:
            carried = set()
        carried |= {str(d) for d in differences(model, ran.seen, failed, modulo=modulo)}
        before = ran.seen
    return trace


def _unjudged(graded: GradedCalls, at: int, step: Step, engine: object, calls: list[Call],
              observe: bool = True) -> tuple[object, bool, Observation | None]:
    """A call whose outcome depends on state the model has lost (a negative ref count, or a state that cannot be
    read, after another rule's bug): step `at` made, not judged, and listed. The engine handle, whether the call
    (and the observation) returned, and the state it left (None when it did not, or `observe` is False)."""
    try:
        engine, returned = graded.call(at, engine)
        seen = graded.observe(at, engine) if observe else None
    except ImplementationFailure:
        return engine, False, None
    got = returned_value(step.op, returned)
    calls.append(Call(step.op, step.args, False, got, judged=False))
    return engine, True, seen

