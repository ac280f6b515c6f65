"""The server that runs a Python submission (oracle/hw3/pyserve.py), driven here in this process on the
built-in engine: each op, the frames it writes, and how a call that does not return is worded. In grading
it runs in the sandbox under the system Python (tests/test_pyremote.py does that for real)."""

import errno
import json
import os
import struct
import sys

import pytest

from engine import llm_memory as base
from oracle.hw3.pool import GUARD, GUARD_SIZE
from oracle.hw3.pool_file import PoolFile
from oracle.hw3.pyreply import engine_state
from oracle.hw3.pyserve import OPS, Server, _value, read_engine
from oracle.serve import Fatal, load, load_error

FRAME = struct.Struct("<I")


def replies(fd: int) -> list[dict]:
    data = b""
    while chunk := os.read(fd, 1 << 16):
        data += chunk
    out = []
    while data:
        (n,) = FRAME.unpack_from(data)
        out.append(json.loads(data[4 : 4 + n]))
        data = data[4 + n :]
    return out


def served(impl: object, requests: list[dict]) -> list[dict]:
    """serve() over real pipes: the requests written, the write end closed, every reply read back."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    for request in requests:
        body = json.dumps(request).encode()
        os.write(req_w, FRAME.pack(len(body)) + body)
    os.close(req_w)
    Server(impl, rep_w).serve(req_r)
    os.close(req_r)
    os.close(rep_w)
    try:
        return replies(rep_r)
    finally:
        os.close(rep_r)


@pytest.fixture
def pools():
    made = PoolFile()
    yield made
    made.close()


def _init(pools: PoolFile, size: int, pattern: bytes = b"\0", **more: object) -> dict:
    """An init request on a fresh window of `pools` holding `pattern` repeated."""
    offset = pools.window(size, GUARD, pattern=pattern)
    return {"op": "init", "size": size, "guard": GUARD_SIZE, "memory": pools.fd, "offset": offset, **more}


def test_serve_answers_calls_and_observations_in_order(pools: PoolFile) -> None:
    got = served(base, [
        {**_init(pools, 128, b"\x01\x02\x03"), "reset": True, "then": "new"},
        {"op": "call", "api": "create_sequence", "engine": 1, "args": [7, 17], "then": 1},
        {"op": "call", "api": "append_kv", "engine": 1, "args": [7, -5]},
        {"op": "observe", "engine": 1},
        {"op": "observe", "engine": 1},
        {"op": "call", "api": "free_sequence", "engine": 99, "args": [7]},
    ])
    assert got[0]["ret"] == 1 and got[0]["state"]["total"] == 2
    assert got[1]["ret"] == 2 and [s[:2] for s in got[1]["state"]["sequences"]] == [[7, 17]]
    assert got[2] == {"ret": 0}
    assert all(set(reply) <= {"ret", "state"} for reply in got[:5])  # the pool is never sent: the grader reads it
    region = pools.read(0, 128 + 2 * GUARD_SIZE)  # the append wrote record 17 into the grader's file: block 1, slot 1
    assert region[GUARD_SIZE + 68 : GUARD_SIZE + 72] == struct.pack("<i", -5)
    assert region[:GUARD_SIZE] == GUARD and region[-GUARD_SIZE:] == GUARD and region[GUARD_SIZE:GUARD_SIZE + 3] == b"\1\2\3"
    assert engine_state(got[3]["state"]).sequences[0].kv_count == 18
    assert got[5] == {"failure": "raised ValueError: no such handle: 99", "fatal": False}


def test_the_state_read_is_the_in_process_adapter_s(pools: PoolFile) -> None:
    server = Server(base, -1)
    server.op_init(64 * 40, 0, pools.fd, pools.window(64 * 40, b""), reset=True)
    server.op_call("create_sequence", 1, [1, 300])
    server.op_call("fork_sequence", 1, [1, 2])
    engine = server.handles[1]
    assert server.op_observe(1)["state"] == read_engine(engine, server.owners)
    engine.active_seqs.next.prev = None  # a broken list is described, not followed
    assert server.op_observe(1)["state"]["list_error"] == "position 0 (seq 1): prev does not point to the node before it"
    engine.ref_count = [0, "x"]
    assert server.op_observe(1) == {"ret": None, "state_error": "ref_count[1] is 'x', not an integer"}


def test_probe_ops_report_what_they_see_and_none_edits_the_objects(pools: PoolFile) -> None:
    """The server runs in the submission's interpreter, so no verdict rests on an edit made there
    (oracle/hw3/evidence.py): it has no op that edits the submission's objects, only ops that read them."""
    server = Server(base, -1)
    server.op_init(64 * 40, 0, pools.fd, pools.window(64 * 40, b"", pattern=b"\x07"), reset=True)
    seq = server.op_call("create_sequence", 1, [1, 33 * 16])["ret"]
    assert set(OPS) == {"init", "call", "calls", "observe", "counts", "sequence", "reset"}
    view = server.op_sequence(seq)["ret"]
    assert view["table"][0] == list(range(16)) and view["table"][1] == list(range(16, 32)) and view["table"][2][0] == 32
    assert view["table"][3] is None and len(view["table"]) == 16 and view["l2_ids"][3] is None
    counts = server.op_counts(1, 10)["ret"]
    assert (counts["total"], counts["free"], counts["length"], counts["empty"]) == (40, 7, 1, False)
    assert server.op_counts(1, None)["ret"]["length"] is None
    assert pools.read(0, 2560) == b"\x07" * 2560  # the creates wrote nothing into the pool
    server.op_reset()
    with pytest.raises(ValueError, match="no such handle"):
        server.op_sequence(seq)


def test_calls_streams_one_reply_per_call_up_to_the_first_null(pools: PoolFile) -> None:
    got = served(base, [
        _init(pools, 64 * 3, reset=True),
        {"op": "calls", "api": "create_sequence", "engine": 1, "args": [[i, 16] for i in range(5)], "stop": "null"},
        {"op": "calls", "api": "free_sequence", "engine": 1, "args": [[0], [1], [7], [2]], "stop": "nonzero"},
    ])
    assert [r["ret"] for r in got[1:]] == [2, 3, 4, None, 0, 0, -1]


class _Raises:
    def __init__(self, exc: BaseException):
        self.exc = exc

    def __getattr__(self, name: str):
        def call(*args):
            raise self.exc
        return call


@pytest.mark.parametrize("exc, label", [
    (SystemExit(0), "called sys.exit(0) in llm_init"),
    (SystemExit(), "called sys.exit() in llm_init"),
    (KeyboardInterrupt(), "raised KeyboardInterrupt in llm_init"),
    (BaseException("why"), "raised BaseException: why in llm_init"),
    (OSError(errno.EFBIG, "File too large"), "wrote more output than allowed (File too large) in llm_init"),
])
def test_a_call_that_does_not_return_is_fatal_with_its_label(exc: BaseException, label: str, pools: PoolFile) -> None:
    with pytest.raises(Fatal, match=f"^{label.replace('(', '[(]').replace(')', '[)]')}$"):
        Server(_Raises(exc), -1).op_init(64, 0, pools.fd, pools.window(64, b""))


def test_an_exception_is_not_fatal_and_a_child_process_is(pools: PoolFile) -> None:
    got = served(_Raises(KeyError("boom")), [_init(pools, 64)])
    assert got == [{"failure": "raised KeyError: 'boom'", "fatal": False}]
    server = Server(base, -1)
    server.forked = True
    with pytest.raises(Fatal, match=r"^started a child process \(fork\) in llm_init$"):
        server.op_init(64, 0, pools.fd, None)


def test_values_are_sent_as_they_are_or_as_their_text() -> None:
    assert [_value(v) for v in (0, -1, True, None, 2**70, "x")] == [0, -1, True, "None", str(2**70), "x"]


def test_a_value_that_is_an_int_is_sent_as_that_int() -> None:
    """A correct submission may return an IntEnum or any integer type (operator.index): its value is compared,
    not its text; an __index__ that raises leaves the value's text, which equals no expected value."""
    import enum

    class Status(enum.IntEnum):
        OK, FAILED = 0, -1

    class Wrong:
        def __index__(self) -> int:
            raise ValueError("no")

        def __str__(self) -> str:
            return "wrong"

    got = [_value(v) for v in (Status.OK, Status.FAILED, Wrong())]
    assert got == [0, -1, "wrong"] and [type(v) for v in got] == [int, int, str]


def test_load_errors_are_words() -> None:
    try:
        compile("def f(:\n", "memory.py", "exec")
    except SyntaxError as exc:
        assert load_error(exc) == "SyntaxError: invalid syntax (memory.py, line 1)"
    assert load_error(SystemExit(2)) == "called sys.exit(2) while loading"
    assert load_error(ImportError("no x")) == "ImportError: no x"


def test_load_imports_a_module_by_name_or_file(tmp_path) -> None:
    (tmp_path / "served_by_file.py").write_text("def llm_init(pool, size):\n    return 'mine'\n")
    saved = list(sys.path)
    try:
        assert load(str(tmp_path), "served_by_file.py", "").llm_init(None, 0) == "mine"
        holder = load(str(tmp_path), "served_by_file", "llm_init")
        assert holder(None, 0) == "mine"
    finally:
        sys.path[:] = saved
        sys.modules.pop("served_by_file", None)


def test_an_int_the_grader_cannot_compare_is_unreadable_with_its_place() -> None:
    """pyserve._int and _ints: an int past 64 bits, a value that is no int, a list past MAX_ITEMS, each named."""
    from oracle.hw3.pyserve import MAX_ITEMS, Unreadable, _int, _ints

    assert _int(True, "flag") == 1 and _ints((1, -2, 3), "ref_count") == [1, -2, 3]
    with pytest.raises(Unreadable, match=r"^free_local_blocks is \d+, beyond 64 bits$"):
        _int(1 << 64, "free_local_blocks")
    with pytest.raises(Unreadable, match=r"^ref_count\[1\] is '2', not an integer$"):
        _ints([1, "2", 3], "ref_count")
    with pytest.raises(Unreadable, match=r"^ref_count\[0\] is -?\d+, beyond 64 bits$"):
        _ints([-(1 << 70)], "ref_count")

    def endless():
        while True:
            yield 0

    with pytest.raises(Unreadable, match=f"^ref_count has more than {MAX_ITEMS} entries$"):
        _ints(endless(), "ref_count")
