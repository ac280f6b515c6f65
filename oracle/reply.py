"""Decoding what a submission's process sent back: a strict, bounded decoder of plain data.

A reply comes from a process the submission controls, so it is untrusted input. Its size is bounded before
it is read (the reader refuses a length over the bound it was given: oracle/child.py), and `decode` turns
its bytes into plain data (dict, list, str, int, float, bool, None) or raises Unreadable, never anything
else: strict UTF-8, JSON without NaN or Infinity, with at most `values` values (at most `containers` of them
objects or arrays), nested at most `depth` deep, ints of at most INT_DIGITS digits, and strings that are
valid Unicode (no lone surrogates). Counting is done on the bytes before they are parsed, so the memory the
parse takes is bounded too (a few dozen bytes per value at most). Never pickle, never eval: the shapes the
protocol gives each value are checked afterwards (oracle/reply_shape.py, where oracle/served.py receives it).
"""

import json
from typing import Any

MAX_VALUES = 1 << 21  # values in one reply: a 64 MiB pool's ref_count is 2^20 of them
MAX_CONTAINERS = 1 << 17  # objects and arrays in one reply: 5000 sequences' tables are about 10^4
MAX_DEPTH = 32
INT_DIGITS = 40  # a 64-bit int is at most 20 digits: a longer one is refused before it is converted
_DIGIT_MARKS = bytes(0x31 if 0x30 <= byte <= 0x39 else 0 for byte in range(256))  # a digit -> "1", the rest -> 0


_PLAIN = frozenset({int, float, bool, type(None)})


class Unreadable(Exception):
    """A reply that is not plain data within the bounds: the text says why, in the grader's words."""


def _constant(name: str) -> Any:
    raise Unreadable(f"not JSON: {name}")


def _integer(digits: str) -> int:
    if len(digits) > INT_DIGITS:
        raise Unreadable(f"an integer of {len(digits)} digits")
    return int(digits)


def _long_digits(body: bytes) -> bool:
    """Whether `body` holds a run of more than INT_DIGITS digits (only then is each int looked at: it costs)."""
    return b"1" * (INT_DIGITS + 1) in body.translate(_DIGIT_MARKS)


def decode(body: bytes, *, values: int = MAX_VALUES, containers: int = MAX_CONTAINERS, depth: int = MAX_DEPTH) -> Any:
    """The plain data `body` holds (UTF-8 JSON), or Unreadable with the reason."""
    try:
        text = body.decode("utf-8")  # strict: invalid UTF-8 is refused, not replaced
    except UnicodeDecodeError as exc:
        raise Unreadable(f"not UTF-8 at byte {exc.start}") from None
    opened = body.count(b"[") + body.count(b"{")  # an upper bound (brackets inside strings count too)
    if opened > containers:
        raise Unreadable(f"more than {containers} arrays and objects")
    if opened + body.count(b",") + 1 > values:
        raise Unreadable(f"more than {values} values")
    try:
        long = _long_digits(body)
        data = json.loads(text, parse_constant=_constant, parse_int=_integer if long else None)
    except Unreadable:
        raise
    except RecursionError:
        raise Unreadable(f"nested more than {depth} deep") from None
    except ValueError:  # json.JSONDecodeError
        raise Unreadable("not JSON") from None
    if opened > depth or b"\\u" in body:  # else neither too deep nor a lone surrogate (only a \\u escape makes one)
        _check(data, depth)
    return data


def _check(data: Any, depth: int) -> None:
    """Every container at most `depth` deep, every string (and key) valid Unicode."""
    level: list[Any] = [data]
    for _ in range(depth):
        below: list[Any] = []
        for value in level:
            if type(value) is dict:
                for key, item in value.items():
                    _valid(key)
                    if type(item) is str:
                        _valid(item)
                    elif type(item) in (dict, list):
                        below.append(item)
            elif type(value) is list and not _PLAIN.issuperset(map(type, value)):  # a list of numbers: nothing below
                for item in value:
                    if type(item) is str:
                        _valid(item)
                    elif type(item) in (dict, list):
                        below.append(item)
            elif type(value) is str:
                _valid(value)
        if not below:
            return
        level = below
    raise Unreadable(f"nested more than {depth} deep")


def _valid(text: str) -> None:
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise Unreadable("a string that is not valid Unicode (a lone surrogate)") from None
