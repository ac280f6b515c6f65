"""The C build and the CAdapter's isolation: hostile submissions fail with the right label, in bounded
time, and leave no process behind; bad builds are reported with the compiler's or linker's words."""

import os
import shutil
import time
from typing import Any
from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.hw3.c.adapter import CAdapter, Pointer, load_c
from oracle.hw3.c.build import build
from oracle.hw3.observation import WILD, ImplementationFailure

REFERENCE = Path(__file__).resolve().parents[1] / "engine" / "c"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cbuild")


def _driver(path: Path, workdir: Path) -> Path:
    result = build(path, workdir)
    assert result.ok and result.driver is not None, result.message
    return result.driver


def _group(root: int) -> list[int]:
    """root and every process descended from it (field 4 of /proc/PID/stat is the parent): the sandbox's
    processes, whatever session or process group they moved to (orphans go to its pid namespace's init)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    members, frontier = [], [root] if root in parents else []
    while frontier:
        pid = frontier.pop()
        members.append(pid)
        frontier += [child for child, parent in parents.items() if parent == pid]
    return members


def _named(pids: list[int], name: str) -> list[int]:
    return [pid for pid in pids if Path(f"/proc/{pid}/comm").read_text().strip() == name]


# Each hostile submission is the reference plus one act: the calls that lead up to it (which must work),
# the call that commits it, and the label that call must fail with.
def _appends(adapter: CAdapter, engine: Pointer, n: int) -> None:
    for i in range(n):
        assert adapter.append_kv(engine, 1, i) == 0


HOSTILE_ACTS = {
    "segfault": ("crashed with SIGSEGV", lambda a, e: (a.create_sequence(e, 1, 1), _appends(a, e, 4)),
                 lambda a, e: a.append_kv(e, 1, 5)),
    "exit": ("called exit(0)", lambda a, e: a.create_sequence(e, 1, 1), lambda a, e: a.fork_sequence(e, 1, 2)),
    "abort": ("aborted (SIGABRT)", lambda a, e: a.create_sequence(e, 1, 1), lambda a, e: a.free_sequence(e, 1)),
    "hang": ("hung: no answer within 0.5 s", lambda a, e: (a.create_sequence(e, 1, 19), _appends(a, e, 1)),
             lambda a, e: a.append_kv(e, 1, 20)),
    "flood": ("wrote more output than allowed (SIGXFSZ)", lambda a, e: None, lambda a, e: a.create_sequence(e, 1, 1)),
    "fork": ("made a forbidden system call (SIGSYS)", lambda a, e: None, lambda a, e: a.create_sequence(e, 1, 1)),
    "double_free": ("a double free: this call already freed that block", lambda a, e: None,
                    lambda a, e: a.create_sequence(e, 1, 1)),
}


@pytest.mark.parametrize("name", list(HOSTILE_ACTS))
def test_hostile_submission_fails_with_its_label_and_leaves_nothing(
    name: str, workdir: Path, submission: Callable[..., Path]
) -> None:
    label, setup, act = HOSTILE_ACTS[name]
    adapter = CAdapter(_driver(submission("hostile", name), workdir), timeout=0.5, output_limit=1 << 16)
    try:
        engine = adapter.llm_init(640)
        assert engine is not None  # the reference's llm_init: the act is reached through working calls
        pgid = adapter.pid
        assert pgid is not None
        setup(adapter, engine)
        assert adapter.failure is None
        with pytest.raises(ImplementationFailure, match=label.replace("(", r"\(").replace(")", r"\)")):
            act(adapter, engine)  # ended by the call's limits (run_cpu.py: CPU seconds, capped in wall-clock)
        assert adapter.failure is not None and label in adapter.failure
        assert _group(pgid) == []
        if name == "flood":
            assert len(adapter.output) == 1 << 16 and "debug output" in adapter.output
        # the next llm_init starts a fresh driver; handles from the dead one are refused
        with pytest.raises(ImplementationFailure, match="died with the driver"):
            adapter.append_kv(engine, 1, 1)
        assert adapter.llm_init(640) is not None and adapter.pid not in (None, pgid)
    finally:
        adapter.close()


def test_a_constructor_that_would_run_before_the_drivers_limits_is_refused_at_build(
    workdir: Path, submission: Callable[..., Path]
) -> None:
    """A constructor runs before the driver's main (its limits, its seccomp filter, the accounting) and could
    fork a child into a session of its own: no code may run outside the API calls, so the build refuses it."""
    result = build(submission("escape", "fork_before_main"), workdir)
    assert not result.ok and result.lenient_driver is None
    assert "runs code outside the API calls (a .init_array section)" in result.message


def test_wild_pointer_in_the_state_is_an_unreadable_state_not_a_dead_driver(
    workdir: Path, submission: Callable[..., Path]
) -> None:
    adapter = CAdapter(_driver(submission("hostile", "garbage_list"), workdir))
    try:
        engine = adapter.llm_init(640)
        with pytest.raises(ImplementationFailure, match="state unreadable: the grader could not read a node of your engine.s active_seqs list at 0x10: your program does not map that address"):
            adapter.observe(engine)
        assert adapter.llm_destroy(None) == -1  # the driver lives on
    finally:
        adapter.close()


def test_a_wild_l2_pointer_is_one_unreadable_slot_the_others_are_read(
    workdir: Path, submission: Callable[..., Path]
) -> None:
    """create_sequence leaves the L1 slots it does not use as malloc left them (0xA5 bytes): reading each one
    faults, and the observation shows those slots WILD, the used slot's entries and everything else as read."""
    adapter = CAdapter(_driver(submission("broken", "l1_not_nulled"), workdir))
    try:
        engine = adapter.llm_init(640)
        adapter.create_sequence(engine, 1, 17)
        state = adapter.observe(engine).engine
        assert state is not None and state.free_local_blocks == 8
        (seq,) = state.sequences
        assert seq.block_table[0] == (0, 1) + (-1,) * 14
        assert seq.block_table[1:] == (WILD,) * 15
    finally:
        adapter.close()


def test_broken_list_is_reported_not_followed(workdir: Path, submission: Callable[..., Path]) -> None:
    adapter = CAdapter(_driver(submission("hostile", "cyclic_list"), workdir))
    try:
        engine = adapter.llm_init(640)
        adapter.create_sequence(engine, 1, 1)
        state = adapter.observe(engine).engine
        assert state is not None and state.list_error == "position 1 (seq 1): prev does not point to the node before it"
        assert [s.seq_id for s in state.sequences] == [1]
    finally:
        adapter.close()


def test_missing_symbol_is_reported_by_name(workdir: Path, submission: Callable[..., Path]) -> None:
    result = build(submission("hostile", "missing_symbol"), workdir)
    assert not result.ok and result.stage == "link"
    assert result.missing_symbols == ("append_kv",)
    assert "undefined symbols append_kv" in result.message


def test_load_c_refuses_a_failed_build(workdir: Path, submission: Callable[..., Path]) -> None:
    with pytest.raises(ValueError, match="link failed: undefined symbols append_kv"):
        load_c(submission("hostile", "missing_symbol"), workdir)


def test_compile_warning_fails_the_build_with_the_compiler_output(
    workdir: Path, submission: Callable[..., Path]
) -> None:
    warning = submission("hostile", "warning")
    result = build(warning / "llm_memory.c", workdir)
    assert not result.ok and result.stage == "compile" and result.driver is None
    assert "unused variable" in result.log and "-Werror=unused-variable" in result.log
    again = build(warning, workdir)  # cached failure, same words
    assert again == result


def test_the_submission_own_header_is_ignored(workdir: Path, tmp_path: Path) -> None:
    shutil.copyfile(REFERENCE / "llm_memory.c", tmp_path / "llm_memory.c")
    (tmp_path / "llm_memory.h").write_text("#error this header must not be used\n")
    assert build(tmp_path, workdir).ok


def _touch(path: Path) -> Path:
    path.write_text("")
    return path


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: p / "nowhere", "does not exist"),
        (lambda p: p, "no llm_memory.c was uploaded"),  # Refused, a ValueError: grade scores it 0
        (lambda p: _touch(p / "notes.txt"), "neither a .c file nor a directory"),
    ],
)
def test_bad_submission_paths_are_one_line_errors(make, message: str, tmp_path: Path, workdir: Path) -> None:
    with pytest.raises(ValueError, match=message):
        build(make(tmp_path), workdir)


TRICKLE = r"""
#include <stdio.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>
/* the driver's reply pipe (its one descriptor above 2 open for writing on a pipe; a run has no /proc to read its
 * command line from): a reply of 65 bytes announced, then one byte a second */
static void trickle(void)
{
    int fd = 3;
    for (struct stat st; fd < 256; fd++)
        if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && (fcntl(fd, F_GETFL) & O_ACCMODE) == O_WRONLY)
            break;
    unsigned char head[5] = {65, 0, 0, 0, 0};
    if (write(fd, head, sizeof head) != sizeof head)
        return;
    for (int i = 0; i < 60; i++) {
        sleep(1);
        if (write(fd, "", 1) != 1)
            return;
    }
}
"""


def test_a_reply_that_trickles_in_has_one_deadline(workdir: Path, tmp_path: Path) -> None:
    """A reply whose bytes keep coming, each before the call's time limit, is cut at that limit all the same:
    one deadline for the whole reply (60 s had each byte its own)."""
    source = (REFERENCE / "llm_memory.c").read_text()
    opening = "Sequence *create_sequence(LLMEngine *engine, int seq_id, int initial_kv_len)\n{\n"
    assert source.count(opening) == 1
    before, after = source.split(opening)
    (tmp_path / "llm_memory.c").write_text(before + TRICKLE + opening + "    trickle();\n" + after)
    adapter = CAdapter(_driver(tmp_path, workdir), timeout=2.5)
    try:
        engine = adapter.llm_init(64 * 10)
        started = time.monotonic()
        with pytest.raises(ImplementationFailure, match="hung: no answer within 2.5 s"):
            adapter.create_sequence(engine, 1, 1)
        assert time.monotonic() - started < 30, "the reply kept the grader reading past its deadline"
    finally:
        adapter.close()


@pytest.mark.parametrize("attack, pool_left", [("pool_file_truncated", "intact"), ("pool_file_worked", "zeros")])
def test_a_call_that_works_on_the_pools_memory_file_leaves_a_pool_the_grader_reads_whole(
        attack: str, pool_left: str, workdir: Path, tmp_path: Path) -> None:
    """The hostile fixtures of tests/submissions/hostile/review3b truncate, try to seal, set O_APPEND on and
    punch a hole in the memory file the driver holds, from inside create_sequence: the pool the grader reads after
    the call is whole (the file is sealed against shrinking), a hole reads as zeros (the pool's bytes, judged as
    such), and the next window holds what the grader wrote where it put it (a description of its own)."""
    from tests.conftest import REFERENCE_C, SUBMISSIONS, patched

    source = patched(patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "check_before_allocate.patch"),
                     SUBMISSIONS / "hostile" / "review3b" / f"{attack}.patch")
    (tmp_path / "llm_memory.c").write_text(source)
    adapter = CAdapter(_driver(tmp_path, workdir))
    try:
        pool_read_whole(adapter, pool_left)
    finally:
        adapter.close()


def pool_read_whole(adapter: Any, pool_left: str) -> None:  # a CAdapter or a Python remote adapter
    """A create that worked on the pools' memory file (tests/submissions/hostile/review3b/pool_file_*): the grader
    still reads its window whole, `intact` or zeros where a hole was punched, and its next window holds exactly
    the grader's bytes (C and Python: test_pyremote)."""
    from oracle.hw3.pool import GUARD, initial_pool

    engine = adapter.llm_init(640)
    assert adapter.create_sequence(engine, 1, 20) is not None
    seen = adapter.observe(engine)
    if pool_left == "intact":
        assert (seen.guard_before, seen.pool, seen.guard_after) == (GUARD, initial_pool(640), GUARD)
    else:
        assert (seen.guard_before, seen.pool, seen.guard_after) == (bytes(64), bytes(640), bytes(64))
    second = adapter.llm_init(320)
    seen = adapter.observe(second)
    assert (seen.guard_before, seen.pool, seen.guard_after) == (GUARD, initial_pool(320), GUARD)
