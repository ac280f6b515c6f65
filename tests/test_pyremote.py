"""Grading a Python submission in its child process: hostile modules (written here, each the engine plus one
attack) get a failing step with a label, the report is written, the exit status is honest, and no process
of theirs is left; the built-in engine still gets 83/83 through the same path."""

import json
import os
import secrets
import struct
import time
from pathlib import Path

import pytest

from oracle.cli import main
from oracle.hw3.grade import grade, load
from oracle.child import LoadFailure
from oracle.hw3.observation import UNREAD
from oracle.hw3.pyremote import served
from tests.test_grade import small_rubric

ROOT = Path(__file__).resolve().parents[1]


def standalone_engine() -> str:
    """engine/llm_memory.py, which imports nothing of pagedcheck: the child sees only the submission's own
    folder, so a hostile module carries the whole engine."""
    return (ROOT / "engine" / "llm_memory.py").read_text()


ENGINE = standalone_engine()


def write_module(folder: Path, attack: str, name: str = "hostile") -> str:
    """The engine followed by `attack` (which may redefine calls), as folder/<name>.py; its path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.py").write_text(ENGINE + "\n\n# ---- the attack ----\n" + attack)
    return str(folder / f"{name}.py")


def rubric(path: Path, items: list[str]) -> Path:
    """A rubric of `items` (each 1 point) with a short fuzz budget."""
    text = "".join(f'[[item]]\nid = "{item}"\nname = "{item}"\npoints = 1\n' for item in items)
    if "fuzz" in items:
        text += "[item.options]\nseed = 110\nexamples = 10\nsteps = 20\nshrink_replays = 200\nseconds = 120.0\n"
    path.write_text(text)
    return path


def processes_naming(text: str) -> list[int]:
    """Every process whose command line holds `text` (a submission's unique name): a /proc scan. A fork of
    the server keeps its command line."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                found.append(int(cmdline.parent.name))
        except OSError:  # it ended while we looked
            continue
    return [pid for pid in found if pid != os.getpid()]


def left_running(name: str) -> list[int]:
    """The processes naming `name` that are still there after a bounded wait: the sandbox kills what is in
    its pid namespace when the namespace's first process dies, which the kernel finishes a moment later."""
    deadline = time.monotonic() + 10.0
    while (found := processes_naming(name)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def graded(tmp_path: Path, attack: str, items: list[str], timeout: float = 1.0, *more: str) -> tuple[int, dict]:
    """`pagedcheck grade` of the engine plus `attack`: the exit status and the report it wrote. Checks that
    nothing the submission started is left (the server, bwrap and any fork all name the module)."""
    name = f"hostile_{secrets.token_hex(6)}"  # in the server's command line, and in any fork of it
    module = write_module(tmp_path / "submission", attack, name)
    report = tmp_path / "out" / "report.json"
    report.parent.mkdir(exist_ok=True)
    status = main(["grade", module, "--rubric", str(rubric(tmp_path / "rubric.toml", items)),
                   "--json", str(report), "--timeout", str(timeout), "-q", *more])
    assert left_running(name) == []
    return status, json.loads(report.read_text())


def only_item(report: dict) -> dict:
    (item,) = report["items"]
    return item


ATTACKS = [
    # name, the attack, the item that meets it, words of the failing step's label
    ("sys.exit", "def llm_init(pool, size):\n    import sys\n    sys.exit(0)\n", "llm_init", "called sys.exit(0) in llm_init"),
    ("os._exit", "_create = create_sequence\ndef create_sequence(engine, seq_id, n):\n    import os\n    os._exit(3)\n",
     "create_free", "ended the process (exit status 3) in create_sequence"),
    ("BaseException", "def fork_sequence(engine, parent, child):\n    raise BaseException('not an Exception')\n",
     "fork", "raised BaseException: not an Exception in fork_sequence"),
    ("KeyboardInterrupt", "def free_sequence(engine, seq_id):\n    raise KeyboardInterrupt\n",
     "create_free", "raised KeyboardInterrupt in free_sequence"),
    ("fork", "_init = llm_init\ndef llm_init(pool, size):\n    import os\n    os.fork()\n    return _init(pool, size)\n",
     "llm_init", "started a child process (fork) in llm_init"),
    ("print flood", "def append_kv(engine, seq_id, value):\n    while True:\n        print('x' * 4096)\n",
     "append_cow", "wrote more output than allowed (File too large) in append_kv"),
    ("infinite loop", "def free_sequence(engine, seq_id):\n    while True:\n        pass\n",
     "create_free", "hung: no answer within 1 s"),
    ("signal", "def fork_sequence(engine, parent, child):\n    import os, signal\n    os.kill(os.getpid(), signal.SIGSEGV)\n",
     "fork", "crashed with SIGSEGV in fork_sequence"),
]


FORGED = "def llm_init(pool, size):\n    import os, struct, sys\n    os.write(int(sys.argv[2]), {frame})\n    os._exit(0)\n"
ATTACKS += [  # replies written straight onto the server's reply pipe
    ("not JSON", FORGED.format(frame='struct.pack("<I", 5) + b"nope!"'), "llm_init",
     "sent a reply the grader cannot read (not JSON)"),
    ("wrong shape", FORGED.format(frame='struct.pack("<I", 11) + b\'{"ret":"x"}\''), "llm_init",
     "sent a reply the grader cannot read: llm_init's answer is 'x', not an integer"),
    ("huge", FORGED.format(frame='struct.pack("<I", 1 << 31)'), "llm_init",
     "sent a reply of 2147483648 bytes, over the 16 MiB limit"),
]


@pytest.mark.parametrize("attack, item, label", [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
def test_an_attack_is_a_failing_step_with_its_label(tmp_path: Path, attack: str, item: str, label: str) -> None:
    status, report = graded(tmp_path, attack, [item])
    result = only_item(report)
    assert result["status"] == "failed" and label in result["message"], result["message"]
    assert status == 1 and report["score"] == 0


def test_grading_goes_on_after_an_attack_stops_the_child(tmp_path: Path) -> None:
    """sys.exit in free_sequence fails the items that free; the next item starts a new child and passes."""
    attack = "def free_sequence(engine, seq_id):\n    raise SystemExit(4)\n"
    status, report = graded(tmp_path, attack, ["create_free", "llm_init"])
    assert [(item["id"], item["status"]) for item in report["items"]] == [("create_free", "failed"), ("llm_init", "passed")]
    assert "called sys.exit(4) in free_sequence" in report["items"][0]["message"]
    assert status == 1 and report["score"] == 1


@pytest.mark.parametrize("source, reason", [
    ("def llm_init(pool, size:\n    return None\n", "SyntaxError: "),
    ("import no_such_module_anywhere\n", "ModuleNotFoundError: No module named 'no_such_module_anywhere'"),
    ("raise BaseException('at import')\n", "BaseException: at import"),
    ("import sys\nsys.exit(0)\n", "called sys.exit(0) while loading"),
    ("def llm_init(pool, size):\n    return None\n", "it does not define create_sequence, fork_sequence"),
], ids=["SyntaxError", "ImportError", "BaseException", "sys.exit", "missing calls"])
def test_a_module_that_does_not_load_is_graded_not_run_with_the_reason(tmp_path: Path, source: str, reason: str) -> None:
    folder = tmp_path / "submission"
    folder.mkdir()
    (folder / "memory.py").write_text(source)
    report_path = tmp_path / "report.json"
    status = main(["grade", str(folder / "memory.py"), "--rubric", str(rubric(tmp_path / "r.toml", ["llm_init", "fork"])),
                   "--json", str(report_path), "-q"])
    report = json.loads(report_path.read_text())
    assert status == 1 and report["score"] == 0 and report["max_score"] == 2
    for item in report["items"]:
        assert item["status"] == "not_run" and item["message"].startswith("not run: the module does not load: " + reason)
        assert "Traceback" not in item["message"] + item["details"]
    if reason.startswith("SyntaxError"):
        assert report["items"][0]["message"].endswith("(memory.py, line 1)")


def test_an_attack_on_the_grader_s_modules_changes_nothing(tmp_path: Path) -> None:
    """Patching the grader's modules, an atexit hook and an honest bug (llm_destroy returns -1): the child
    has no grader to patch, so the bug costs llm_destroy and nothing else changes."""
    report_path = tmp_path / "out" / "report.json"
    attack = f"""
import atexit, sys, types
sys.modules["oracle.grading.grader"] = types.SimpleNamespace(run_checks=lambda *a, **k: [])
sys.modules["oracle.grading.report"] = types.SimpleNamespace()
atexit.register(lambda: open({str(report_path)!r}, "w").write('{{"score": 99}}'))
_destroy = llm_destroy
def llm_destroy(engine):
    _destroy(engine)
    return -1
"""
    status, report = graded(tmp_path, attack, ["llm_destroy", "create_free"])
    assert [(item["id"], item["status"]) for item in report["items"]] == [("llm_destroy", "failed"), ("create_free", "passed")]
    assert "return value: expected 0, got -1" in report["items"][0]["message"]
    assert status == 1 and report["score"] == 1


def test_the_builtin_engine_gets_full_marks_through_the_child(tmp_path: Path) -> None:
    """Every item, with a small fuzz budget: the default rubric's full marks for this engine are
    tests/test_engine_standalone.py's."""
    rubric = small_rubric(tmp_path / "rubric.toml")
    status = main(["grade", "engine", "--rubric", str(rubric), "--json", str(tmp_path / "report.json"), "-q"])
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["score"], report["max_score"], status) == (76, 76, 0)  # l1_traversal and tail_insertion
    assert report["kind"] == "python"  # are not graded for Python (oracle/hw3/evidence.py ITEMS)


def test_a_module_is_found_by_its_files_and_never_imported_by_the_grader(tmp_path: Path) -> None:
    """A module that would leave a mark when imported is located and served, and the mark is not in this
    process's sys.modules: only the child imported it."""
    import sys

    write_module(tmp_path / "pkg_root" / "hostile_pkg", "MARK = True\n", name="memory")
    (tmp_path / "pkg_root" / "hostile_pkg" / "__init__.py").write_text("import os\nos.environ['HOSTILE_RAN'] = '1'\n")
    sys.path.insert(0, str(tmp_path / "pkg_root"))
    try:
        with served("hostile_pkg.memory") as remote:
            adapter = remote()
            engine = adapter.llm_init(64 * 4)
            assert adapter.create_sequence(engine, 1, 20) is not None
            assert adapter.append_kv(engine, 1, 7) == 0  # record 20: block 1, slot 4, in the grader's own pool
            seen = adapter.observe(engine)
            assert seen.engine is UNREAD and struct.unpack_from("<i", seen.pool, 64 + 4 * 4) == (7,)
    finally:
        sys.path.remove(str(tmp_path / "pkg_root"))
    assert "hostile_pkg" not in sys.modules and "HOSTILE_RAN" not in os.environ


def test_served_refuses_what_is_not_there_or_does_not_load(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot find module 'no_such_package_here'"):
        with served("no_such_package_here.memory"):
            pass
    (tmp_path / "bad_syntax_here.py").write_text("1 +\n")
    with pytest.raises(LoadFailure, match=r"SyntaxError: invalid syntax \(bad_syntax_here.py, line 1\)"):
        with served(str(tmp_path / "bad_syntax_here.py")):
            pass
    assert left_running("bad_syntax_here.py") == []


def test_a_handle_dies_with_the_child_that_made_it(tmp_path: Path) -> None:
    from oracle.hw3.observation import ImplementationFailure

    attack = "_free = free_sequence\ndef free_sequence(engine, seq_id):\n    if seq_id == 9:\n        import os\n        os._exit(1)\n    return _free(engine, seq_id)\n"
    name = f"hostile_{secrets.token_hex(6)}"
    with served(write_module(tmp_path, attack, name)) as remote:
        adapter = remote()
        engine = adapter.llm_init(64 * 4)
        with pytest.raises(ImplementationFailure, match=r"ended the process \(exit status 1\) in free_sequence"):
            adapter.free_sequence(engine, 9)
        with pytest.raises(ImplementationFailure, match="this handle died with the process"):
            adapter.free_sequence(engine, 1)
        fresh = remote()
        assert fresh.llm_init(64) is not None  # a new child
    assert left_running(name) == []


def test_grade_of_a_module_path_with_a_bad_name_is_a_grader_error(tmp_path: Path) -> None:
    from oracle.hw3.grade import GraderError

    with pytest.raises(GraderError, match="cannot find module 'nothing_named_so'"):
        grade("nothing_named_so.memory", load(rubric(tmp_path / "r.toml", ["llm_init"])), tmp_path)


def test_a_module_cannot_write_outside_its_sandbox(tmp_path: Path) -> None:
    """Writing next to itself, into the grader's report folder or into our package fails in the sandbox:
    the module's files are a read-only copy, and nothing else of the file system is there."""
    targets = [tmp_path / "submission" / "planted.txt", tmp_path / "out" / "report.json", ROOT / "oracle" / "planted.py"]
    attack = f"""
_init = llm_init
def llm_init(pool, size):
    for path in {[str(t) for t in targets]!r}:
        open(path, "w").write("planted")
    return _init(pool, size)
"""
    status, report = graded(tmp_path, attack, ["llm_init"])
    assert "raised " in only_item(report)["message"] and "Error" in only_item(report)["message"]
    assert not (tmp_path / "submission" / "planted.txt").exists() and not (ROOT / "oracle" / "planted.py").exists()
    assert report["score"] == 0 and status == 1


def test_a_process_that_escapes_its_session_is_still_killed(tmp_path: Path) -> None:
    """A fork through libc (no Python fork hooks) whose child starts a session of its own and spins: the
    step fails and the spinning child is gone with the sandbox."""
    attack = """
_init = llm_init
def llm_init(pool, size):
    import ctypes, os
    libc = ctypes.CDLL(None)
    if libc.fork() == 0:
        os.setsid()
        while True:
            pass
    return _init(pool, size)
"""
    status, report = graded(tmp_path, attack, ["llm_init"])
    assert "started a child process (fork) in llm_init" in only_item(report)["message"]
    assert status == 1


def test_the_grade_s_time_limit_stops_a_call_in_progress(tmp_path: Path) -> None:
    """A call still running when the whole grade's time is up is not a hang of the submission's: the item
    is not run, and the child is stopped."""
    attack = "def free_sequence(engine, seq_id):\n    while True:\n        pass\n"
    status, report = graded(tmp_path, attack, ["create_free"], 60.0, "--time-limit", "3")
    result = only_item(report)
    assert result["status"] == "not_run" and "reached while this item ran" in result["message"], result["message"]
    assert status == 1


@pytest.mark.parametrize("attack, pool_left", [("pool_file_truncated_py", "intact"), ("pool_file_worked_py", "zeros")])
def test_a_call_that_works_on_the_pools_memory_file_leaves_a_pool_the_grader_reads_whole(
        attack: str, pool_left: str, tmp_path: Path) -> None:
    """The hostile modules of tests/hostile_review3b truncate, try to seal, set O_APPEND on and punch a hole in
    the memory file they hold, from inside create_sequence: the pool the grader reads after the call is whole
    (the file is sealed against shrinking), a hole reads as zeros (the pool's bytes, judged as such), and the
    next window holds what the grader wrote where it put it (its writes go through a description of its own)."""
    from oracle.hw3.pool import GUARD, initial_pool
    from tests.test_c_adapter import pool_read_whole
    from tests.tamper_grading import python_module

    hostile = (ROOT / "tests" / "hostile_review3b" / f"{attack}.py").read_text()
    code = python_module("free_count_not_incremented", hostile)
    name = f"hostile_{secrets.token_hex(6)}"
    (tmp_path / f"{name}.py").write_text(code)
    with served(str(tmp_path / f"{name}.py")) as remote:
        pool_read_whole(remote(), pool_left)
    assert left_running(name) == []
