"""The bounded decoder of what a submission's process sends back (oracle/reply.py): plain data comes through
as it was sent; everything else is Unreadable with its reason, never another exception, and within memory
bounded by the reply's size."""

import json
import subprocess
import sys

import pytest

from oracle.reply import INT_DIGITS, MAX_CONTAINERS, MAX_DEPTH, MAX_VALUES, Unreadable, decode


@pytest.mark.parametrize("value", [
    {"ret": 3, "state": {"total": 2, "free": 1, "ref_count": [0, 1], "sequences": [[7, 17, [[1, -1], None]]],
                         "list_error": None}},
    {"failure": "raised KeyError: 'boom' \u00e9\U0001F600", "fatal": False},
    [1.5, -(1 << 63), (1 << 64) - 1, True, None, ""],
    "[{not brackets}]",  # brackets inside strings only make the bound stricter
])
def test_plain_data_comes_through_as_sent(value: object) -> None:
    assert decode(json.dumps(value, ensure_ascii=False).encode()) == value


@pytest.mark.parametrize("body, reason", [
    (b"", "not JSON"),
    (b"{'ret': 1}", "not JSON"),  # Python, not JSON: never evaluated
    (b'{"ret": 1} trailing', "not JSON"),
    (b"\x80\x03}q\x00.", "not UTF-8 at byte 0"),  # a pickle: never unpickled
    (b'{"ret": "\xff"}', "not UTF-8 at byte 9"),
    ('{"ret": 1}'.encode("utf-16"), "not UTF-8 at byte 0"),  # json.loads of bytes would take UTF-16
    (b'{"ret": NaN}', "not JSON: NaN"),
    (b'{"ret": -Infinity}', "not JSON: -Infinity"),
    (b'{"ret": ' + b"9" * (INT_DIGITS + 1) + b"}", f"an integer of {INT_DIGITS + 1} digits"),
    (b'{"ret": ' + b"9" * 100_000 + b"}", "an integer of 100000 digits"),  # past Python's own digit limit too
    (b'{"failure": "\\ud800", "fatal": false}', "a string that is not valid Unicode (a lone surrogate)"),
    (b'{"\\udfff": 1}', "a string that is not valid Unicode (a lone surrogate)"),
    (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), f"nested more than {MAX_DEPTH} deep"),
    (b"[" * 100_000 + b"]" * 100_000, f"nested more than {MAX_DEPTH} deep"),
    (b"[" * (MAX_CONTAINERS + 1), f"more than {MAX_CONTAINERS} arrays and objects"),
    (b"[" + b"{}," * MAX_CONTAINERS + b"{}]", f"more than {MAX_CONTAINERS} arrays and objects"),
    (b"[" + b"0," * MAX_VALUES + b"0]", f"more than {MAX_VALUES} values"),
])
def test_what_is_not_plain_bounded_data_is_unreadable_with_its_reason(body: bytes, reason: str) -> None:
    with pytest.raises(Unreadable) as refused:
        decode(body)
    assert str(refused.value) == reason


def test_the_deepest_and_largest_allowed_replies_decode() -> None:
    deepest = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert decode(deepest) is not None
    assert decode(b"[" + b"0," * (MAX_VALUES - 2) + b"0]") == [0] * (MAX_VALUES - 1)


def test_bounds_can_be_tightened_per_reply() -> None:
    with pytest.raises(Unreadable, match="more than 3 values"):
        decode(b"[1,2,3]", values=3)
    with pytest.raises(Unreadable, match="nested more than 1 deep"):
        decode(b"[[[]]]", depth=1)


def test_the_worst_reply_of_the_size_bound_takes_bounded_memory() -> None:
    """16 MiB of the costliest values there are (short non-Latin-1 strings: one object each) decodes, or is
    refused, within a few hundred MB, in a fresh process whose address space is capped at 1 GiB."""
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))\n"
        "from oracle.reply import Unreadable, decode\n"
        "body = ('[' + ','.join(['\"\\u0101\"'] * ((16 << 20) // 9)) + ']').encode()\n"
        "try:\n"
        "    decode(body)\n"
        "except Unreadable as why:\n"
        "    print('refused:', why)\n"
        "print('peak MB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10)\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-500:]
    assert "peak MB" in ran.stdout, ran.stdout
