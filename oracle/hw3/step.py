"""A program's steps applied: to an implementation (call_on) and to the model (predict, expected_calls)."""

from typing import Any

from oracle.hw3.call import Call
from oracle.hw3.model import Model, Outcome
from oracle.program import Program, Step


def call_on(implementation: Any, step: Step, engine: object) -> tuple[object, object]:
    """Makes one call on an implementation: the engine handle afterwards, and what the call returned."""
    if step.op == "llm_init":
        returned = implementation.llm_init(step.args[0], step.null)
        return returned, returned
    returned = getattr(implementation, step.op)(None if step.null else engine, *step.args)
    return (None if step.op == "llm_destroy" and not step.null else engine), returned


def predict(model: Model, step: Step, live: bool) -> tuple[Call, Outcome]:
    """Makes one call on the model: the Call as made (with NULL where the engine goes when the step says so, or
    when no engine is `live`) and the model's outcome."""
    if step.op == "llm_init":
        outcome = model.llm_init(step.args[0], step.null)
        return Call(step.op, step.args, step.null, outcome.returned), outcome
    null = step.null or not live
    outcome = getattr(model, step.op)(null, *step.args)
    return Call(step.op, step.args, null, outcome.returned), outcome


def expected_calls(program: Program) -> tuple[list[Call], Model]:
    """The program as calls with the returns the model expects, and the model after the last one; an engine is
    live after an llm_init the model accepts, until an llm_destroy of it."""
    model, calls, live = Model(), [], False
    for step in program.steps:
        call, outcome = predict(model, step, live)
        calls.append(call)
        if step.op == "llm_init":
            live = bool(outcome.returned)
        elif step.op == "llm_destroy" and not call.null:
            live = False
    return calls, model
