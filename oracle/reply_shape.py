"""The shape a served reply must have, checked where the reply enters the grader (oracle/served.py), before any of
the family's code reads it.

A reply is plain data already (oracle/reply.py decodes it), but the submission's process wrote it: a position may be
0.5, a count a string, a table a dict. A family declares what each method answers as a shape, and `misfit` says
where a reply departs from it, in the grader's words (None when it fits); a reply that does not fit is the
submission's failure, "a reply the grader cannot read", never a grader error. Shapes:

    int, bool, str, None      a value of exactly that type (`type(x) is int`: True is no int, 1.0 no int)
    Int(low, high)            an int within [low, high] (an id, a position, a count)
    [shape]                   a list, each element of the shape
    (shape, shape, ...)       a list of exactly that many elements, each of its shape
    {"key": shape, ...}       an object with exactly those keys
    OneOf(shape, ...)         any one of them
    ANY                       anything
"""

from dataclasses import dataclass
from typing import Any

INT64 = 1 << 63


@dataclass(frozen=True)
class Int:
    low: int = -INT64
    high: int = INT64 - 1


class OneOf:
    def __init__(self, *shapes: Any):
        self.shapes = shapes


ANY = object()
COUNT = Int(0)  # a count or a position: not negative
_WORDS = {int: "an integer", bool: "true or false", str: "a string", type(None): "null"}


def misfit(value: Any, shape: Any, where: str = "the reply") -> str | None:
    """Where `value` departs from `shape`, in words ("seq 3's ref count position is 0.5, not an integer"), or None."""
    if shape is ANY:
        return None
    if shape is None:
        return None if value is None else f"{where} is {_shown(value)}, not null"
    if shape in (int, bool, str):
        return None if type(value) is shape else f"{where} is {_shown(value)}, not {_WORDS[shape]}"
    if isinstance(shape, Int):
        if type(value) is not int:
            return f"{where} is {_shown(value)}, not an integer"
        return None if shape.low <= value <= shape.high else f"{where} is {value}, out of [{shape.low}, {shape.high}]"
    if isinstance(shape, OneOf):
        reasons = [misfit(value, each, where) for each in shape.shapes]
        return None if None in reasons else reasons[0]
    if isinstance(shape, list):
        if type(value) is not list:
            return f"{where} is {_shown(value)}, not a list"
        return next((why for i, item in enumerate(value) if (why := misfit(item, shape[0], f"{where}[{i}]"))), None)
    if isinstance(shape, tuple):
        if type(value) is not list or len(value) != len(shape):
            return f"{where} is {_shown(value)}, not a list of {len(shape)}"
        return next((why for i, (item, each) in enumerate(zip(value, shape))
                     if (why := misfit(item, each, f"{where}[{i}]"))), None)
    if isinstance(shape, dict):
        if type(value) is not dict or sorted(value) != sorted(shape):
            return f"{where} is {_shown(value)}, not an object of {', '.join(map(repr, shape))}"
        return next((why for key, each in shape.items() if (why := misfit(value[key], each, f"{where}[{key!r}]"))),
                    None)
    raise TypeError(f"not a reply shape: {shape!r}")  # the family's declaration is wrong: the grader's bug


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
