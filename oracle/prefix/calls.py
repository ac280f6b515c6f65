"""The calls a pool received, in its own terms: each call the machine made is a Step(op, args) that the adapter
turned into the pool's calls, and the adapter's `written(step)` gives them back as the Python lines that make
them (seed 003's `manager.allocate_for_sequence(seq0)`, the lab's `manager.allocate_slots(...)`); an adapter
without one is shown as the adapter protocol it was driven through (`pool.admit(0, [1, 1, 2, 0])`).

`fuzz` prints a failure's minimal program this way (Family.describe_failure), before the program for
pagedcheck: each call numbered, what the pool returned, the failing one marked, what went wrong and its rule.
"""

from typing import Any

from oracle.program import Step

START = "start"


def tokens_text(tokens: tuple[int, ...] | list[int]) -> str:
    """[1..8, 10]: runs of consecutive ids shortened."""
    parts, start = [], 0
    for i in range(1, len(tokens) + 1):
        if i == len(tokens) or tokens[i] != tokens[i - 1] + 1:
            run = tokens[start:i]
            parts.append(f"{run[0]}..{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
            start = i
    return f"[{', '.join(parts)}]"


def generic(step: Step) -> list[str]:
    """A call of the adapter protocol (oracle/prefix/adapters/__init__.py), as made on the adapter."""
    if step.op == START:
        blocks, block_size = step.args
        return [f"pool.start(num_blocks={blocks}, block_size={block_size})"]
    return [f"pool.{step.op}({', '.join(map(repr, step.args))})"]


def written(adapter: Any, step: Step) -> list[str]:
    """The lines that make `step`'s calls on the pool behind `adapter`."""
    say = getattr(adapter, "written", None)
    return list(say(step)) if callable(say) else generic(step)


def returned(step: Step, value: Any) -> str:
    """What the adapter made of the pool's answer, as a comment; "" for calls that answer nothing."""
    if step.op == "admit" and isinstance(value, tuple):
        accepted, hits = value
        return f"accepted{'' if hits is None else f', {hits} hits'}" if accepted else "refused"
    if step.op in ("append", "reset", "fork", "lookup", "copy"):
        return repr(value)
    return ""


def listing(adapter: Any, made: list[tuple[Step, Any]], failing: int) -> list[str]:
    """Every call numbered from 1, its lines in the pool's terms, what it returned, and the `failing` one
    (1-based) marked."""
    lines = []
    for number, (step, value) in enumerate(made, 1):
        code = written(adapter, step)
        said = returned(step, value)
        if said:
            code[-1] += f"  # -> {said}"
        if number == failing:
            code[-1] += "  <-- went wrong here"
        lines += [f"{number:>3}  {code[0]}", *(f"     {more}" for more in code[1:])]
    return lines


def failure_in_calls(failure: BaseException | None, impl: str) -> list[str]:
    """The lines `fuzz` prints before the program for pagedcheck: nothing when the failure has no calls."""
    made = getattr(failure, "made", None)
    if not made:
        return []
    difference, rule = getattr(failure, "difference", None), getattr(failure, "rule", None)
    what = str(difference) if difference is not None else str(failure).partition(": ")[2] or str(failure)
    return ["Minimal failing program, as the calls the pool received:", "",
            *listing(failure.adapter, made, len(made)), "",
            f"Call {len(made)}: {what}" + (f" [rule: {rule}]" if rule else "")]
