"""The server that runs a Python submission (oracle/hw3/pyserve.py): its Engines, served by the core's loop
(oracle/serve.py's AdapterServer), driven here in this process on the built-in engine: the calls, the frames
written, and how a call that does not return is worded. In grading it runs in the sandbox under the system Python
(tests/test_pyremote.py does that for real)."""

import errno
import json
import os
import struct
import sys

import pytest

from engine import llm_memory as base
from oracle.hw3 import pyserve
from oracle.hw3.pool import GUARD, GUARD_SIZE
from oracle.hw3.pool_file import PoolFile
from oracle.hw3.engine_objects import read_engine
from oracle.hw3.pyserve import API, Engines, _value
from oracle.serve import AdapterFailure, AdapterServer, Fatal, load, load_error

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
    """The core's loop serving Engines(impl) over real pipes: the requests written, the write end closed, every
    reply read back."""
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    for request in requests:
        body = json.dumps(request).encode()
        os.write(req_w, FRAME.pack(len(body)) + body)
    os.close(req_w)
    AdapterServer(rep_w, Engines, API, AdapterFailure, [impl], lasting=True).serve(req_r)
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


def _call(method: str, *args: object) -> dict:
    return {"op": "call", "method": method, "args": list(args)}


def _init(pools: PoolFile, size: int, pattern: bytes = b"\0", reset: bool = False) -> dict:
    """An llm_init request on a fresh window of `pools` holding `pattern` repeated."""
    return _call("llm_init", size, GUARD_SIZE, pools.fd, pools.window(size, GUARD, pattern=pattern), reset)


def test_serve_answers_calls_in_order_and_never_sends_the_pool(pools: PoolFile) -> None:
    got = served(base, [
        _init(pools, 128, b"\x01\x02\x03", reset=True),
        _call("create_sequence", 1, 7, 17),
        _call("append_kv", 1, 7, -5),
        _call("free_sequence", 99, 7),
    ])
    assert got[:3] == [{"ret": 1}, {"ret": 2}, {"ret": 0}]  # handles, then a value: the pool is the grader's to read
    region = pools.read(0, 128 + 2 * GUARD_SIZE)  # the append wrote record 17 into the grader's file: block 1, slot 1
    assert region[GUARD_SIZE + 68 : GUARD_SIZE + 72] == struct.pack("<i", -5)
    assert region[:GUARD_SIZE] == GUARD and region[-GUARD_SIZE:] == GUARD and region[GUARD_SIZE:GUARD_SIZE + 3] == b"\1\2\3"
    assert got[3] == {"failure": "raised ValueError: no such handle: 99", "fatal": False}
    # only the six calls cross: nothing reads or edits the submission's objects there (oracle/hw3/evidence.py)
    server = AdapterServer(-1, Engines, API, AdapterFailure, [base], lasting=True)
    with pytest.raises(Fatal, match="the grader sent a request the server does not know"):
        server.handle(_call("read_engine", 1))


def test_an_init_with_reset_forgets_every_handle(pools: PoolFile) -> None:
    engines = Engines(base)
    assert engines.llm_init(64 * 4, 0, pools.fd, pools.window(64 * 4, b""), True) == 1
    assert engines.create_sequence(1, 1, 3) == 2
    assert engines.llm_init(64, 0, pools.fd, None, True) is None  # a NULL pool
    with pytest.raises(ValueError, match="no such handle: 1"):
        engines.free_sequence(1, 1)


def test_read_engine_reads_the_objects_and_describes_a_broken_list(pools: PoolFile) -> None:
    engines = Engines(base)
    engines.llm_init(64 * 40, 0, pools.fd, pools.window(64 * 40, b""), True)
    engines.create_sequence(1, 1, 300)
    engines.fork_sequence(1, 1, 2)
    engine, seqs = engines.handles[1], [engines.handles[2], engines.handles[3]]
    owners = {id(getattr(seq, "node", seq)): seq for seq in seqs}
    state = read_engine(engine, owners)
    assert [entry[:2] for entry in state["sequences"]] == [[1, 300], [2, 300]] and state["list_error"] is None
    engine.active_seqs.next.prev = None  # a broken list is described, not followed
    assert read_engine(engine, owners)["list_error"] == "position 0 (seq 1): prev does not point to the node before it"


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
        Engines(_Raises(exc)).llm_init(64, 0, pools.fd, pools.window(64, b""), False)


def test_an_exception_is_not_fatal_and_a_child_process_is(pools: PoolFile) -> None:
    got = served(_Raises(KeyError("boom")), [_init(pools, 64)])
    assert got == [{"failure": "raised KeyError: 'boom'", "fatal": False}]
    pyserve._FORKED.append(True)
    try:
        with pytest.raises(Fatal, match=r"^started a child process \(fork\) in llm_init$"):
            Engines(base).llm_init(64, 0, pools.fd, None, False)
    finally:
        pyserve._FORKED.clear()


def test_a_return_whose_index_raises_a_base_exception_is_fatal_in_its_call(pools: PoolFile) -> None:
    class Exits:
        def __index__(self) -> int:
            raise SystemExit(5)

    class Returns:
        llm_init = staticmethod(lambda pool, size: object())
        append_kv = staticmethod(lambda engine, seq_id, value: Exits())

    engines = Engines(Returns())
    engines.llm_init(64, 0, pools.fd, None, False)
    with pytest.raises(Fatal, match=r"^called sys.exit\(5\) in append_kv$"):
        engines.append_kv(1, 0, 0)


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
    """engine_objects._int and _ints: an int past 64 bits, a value that is no int, a list past MAX_ITEMS, each named."""
    from oracle.hw3.engine_objects import MAX_ITEMS, Unreadable, _int, _ints

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
