"""oracle.seccomp's page-cache answers, in a real run of each isolation: no run may ask which pages of a file are
resident or take pages out of the cache (tests/test_tamper_cache_quiet.py: alloc_failure's tries counted themselves
so), while the same calls without the flag or advice that does so still work. And its answers to a run that may write
nowhere: statfs and fstatfs ENOSYS, in a child under the filter alone and in a run of each isolation (review 16's
log_if_mount_writable, log_if_mount_writable_c)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from oracle.sandbox import Sandbox
from tests.test_sandbox import _without_bwrap

_PROBES = """import ctypes, json, mmap, os
libc = ctypes.CDLL(None, use_errno=True)
fd = os.open(os.__file__, os.O_RDONLY)
seen = {}


def tried(name, call):
    try:
        call()
        seen[name] = "ok"
    except OSError as exc:
        seen[name] = exc.errno


def raw(number, *args):
    def call():
        if libc.syscall(number, *args) != 0:
            raise OSError(ctypes.get_errno(), str(number))
    return call


mapped = mmap.mmap(fd, 4096, prot=mmap.PROT_READ)
tried("preadv2 RWF_NOWAIT", lambda: os.preadv(fd, [bytearray(1)], 0, os.RWF_NOWAIT))
tried("pwritev2 RWF_NOWAIT", lambda: os.pwritev(fd, [b"x"], 0, os.RWF_NOWAIT))
tried("fadvise DONTNEED", lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED))
tried("fadvise NOREUSE", lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_NOREUSE))
tried("madvise COLD", lambda: mapped.madvise(20))
tried("madvise PAGEOUT", lambda: mapped.madvise(21))
tried("mincore", raw(27, ctypes.c_void_p(0x10000), 4096, ctypes.create_string_buffer(1)))
tried("cachestat", raw(451, fd, ctypes.create_string_buffer(16), ctypes.create_string_buffer(40), 0))
tried("readahead", raw(187, fd, ctypes.c_long(0), 4096))
tried("io_setup", raw(206, 1, ctypes.create_string_buffer(8)))
tried("process_madvise", raw(440, 0, None, 0, 21, 0))
tried("preadv2", lambda: os.preadv(fd, [bytearray(1)], 0, 0))
tried("fadvise RANDOM", lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM))
tried("fadvise WILLNEED", lambda: os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED))
tried("madvise DONTNEED", lambda: mapped.madvise(mmap.MADV_DONTNEED))
tried("madvise WILLNEED", lambda: mapped.madvise(mmap.MADV_WILLNEED))
print(json.dumps(seen))
"""
REFUSED = ("mincore", "cachestat", "io_setup", "process_madvise")  # EPERM
NOT_DONE = ("fadvise DONTNEED", "fadvise NOREUSE", "madvise COLD", "madvise PAGEOUT", "readahead")  # 0
AGAIN = ("preadv2 RWF_NOWAIT", "pwritev2 RWF_NOWAIT")  # EAGAIN, the page resident or not
ALLOWED = ("preadv2", "fadvise RANDOM", "fadvise WILLNEED", "madvise DONTNEED", "madvise WILLNEED")


def _resident_pages(path: Path) -> int:
    """How many pages of `path` are in the page cache, asked here, outside any run (a miss starts a read of its
    page: ask once)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        resident = 0
        for at in range(0, os.fstat(fd).st_size, 4096):
            try:
                os.preadv(fd, [bytearray(1)], at, os.RWF_NOWAIT)
                resident += 1
            except BlockingIOError:
                pass
        return resident
    finally:
        os.close(fd)


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_can_neither_probe_nor_empty_the_page_cache(without_bwrap: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The probes fail with EPERM, preadv2 and pwritev2 with RWF_NOWAIT answer EAGAIN on a page just read (so
    resident: pwritev2 on a read-only descriptor would fail EBADF if the filter let it through), the hints that
    drop pages answer 0; reads and harmless advice succeed."""
    if os.uname().machine != "x86_64":
        pytest.skip("the raw numbers in the probe are x86_64's")
    if without_bwrap:
        _without_bwrap(monkeypatch)
    with Sandbox() as box:
        done = box.run(["/usr/bin/python3", "-c", _PROBES], timeout=20)
    seen = json.loads(done.output.strip().splitlines()[-1])  # names and errnos, printed by the run
    assert {name: seen[name] for name in REFUSED} == dict.fromkeys(REFUSED, 1), done.output  # 1: EPERM
    assert {name: seen[name] for name in NOT_DONE} == dict.fromkeys(NOT_DONE, "ok"), done.output
    assert {name: seen[name] for name in AGAIN} == dict.fromkeys(AGAIN, 11), done.output  # 11: EAGAIN
    assert {name: seen[name] for name in ALLOWED} == dict.fromkeys(ALLOWED, "ok"), done.output


_DROP = """import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.read(fd, 1 << 20)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_NOREUSE)
mapped = mmap.mmap(fd, 1 << 20, prot=mmap.PROT_READ)
mapped.madvise(21)
mapped.madvise(20)
print("dropped")
"""


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_that_asks_to_drop_pages_leaves_them_cached(without_bwrap: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file the run reads whole, then asks the kernel to drop (posix_fadvise DONTNEED and NOREUSE, madvise
    PAGEOUT and COLD): every page of it is still resident afterwards, asked from outside the run."""
    if without_bwrap:
        _without_bwrap(monkeypatch)
    with Sandbox() as box:
        area = box.area("cached")
        data = area / "data"
        data.write_bytes(os.urandom(1 << 20))
        os.sync()  # clean pages, which DONTNEED would drop
        done = box.run(["/usr/bin/python3", "-c", _DROP, str(data)], readable=[area], timeout=20)
        assert done.output.strip() == "dropped", done.output
        assert _resident_pages(data) == 256


# --- a run that may write nowhere: no mount's flags to ask (oracle/seccomp.py `writes`) -------------------------------
# what a child script tells: each call tried, "ok" or its errno's name (the scripts below start with it)
_TRIED = """seen = {}


def tried(name, call):
    try:
        call()
        seen[name] = "ok"
    except OSError as exc:
        seen[name] = errno.errorcode[exc.errno]
"""
_WRITING = """import errno, json, os, sys
target = sys.argv[1]  # a file the grader made, in a folder the run reads
""" + _TRIED + """

tried("statvfs", lambda: os.statvfs(target))
tried("fstatvfs", lambda: os.fstatvfs(os.open(target, os.O_RDONLY)))
tried("open O_RDONLY", lambda: os.read(os.open(target, os.O_RDONLY), 4))
tried("write /dev/null", lambda: os.write(os.open(os.devnull, os.O_WRONLY), b"x"))
print(json.dumps(seen))
"""
# what a run that may write nowhere is told, with bubblewrap and without it: no mount's statistics or flags; reading
# and a device's writing as ever (an open is not the filter's to answer: it cannot read the path)
NOWHERE_TOLD = {"statvfs": "ENOSYS", "fstatvfs": "ENOSYS", "open O_RDONLY": "ok", "write /dev/null": "ok"}


def _told_here(target: Path, writes: str) -> dict[str, str]:
    """_WRITING's answers in a child of this process under the filter alone (`writes`), no isolation around it."""
    from oracle import seccomp

    done = subprocess.run([sys.executable, "-c", _WRITING, str(target)], capture_output=True, text=True, timeout=30,
                          preexec_fn=lambda: seccomp.install(writes=writes))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_filter_tells_a_run_that_may_write_nowhere_no_mounts_flags(tmp_path: Path) -> None:
    """Under the filter of a run that may write nowhere, statfs and fstatfs answer ENOSYS (no mount's flags tell
    bubblewrap's read-only mounts from the fallback's writable ones: review 16's log_if_mount_writable); reading and
    writing a device still work. Without `writes` statvfs answers (so ENOSYS is the filter's)."""
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("the filter is left out on a machine whose numbers it does not know")
    target = tmp_path / "file"
    target.write_text("kept")
    assert _told_here(target, "nowhere") == NOWHERE_TOLD
    assert set(_told_here(target, "anywhere").values()) == {"ok"}


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_that_may_write_nowhere_is_told_no_mounts_flags_in_both_isolations(
        without_bwrap: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same answers in a real run of each isolation (`Sandbox.popen(private_tmp=False)`): bubblewrap's read-only
    mounts would answer statfs with ST_RDONLY, the Landlock fallback's host mounts without it; the filter answers
    first, alike."""
    if without_bwrap:
        _without_bwrap(monkeypatch)
    with Sandbox() as box:
        area = box.area("readable")
        (area / "file").write_text("kept")
        done = box.run(["/usr/bin/python3", "-c", _WRITING, str(area / "file")], readable=[area], private_tmp=False,
                       timeout=30)
        assert (area / "file").read_text() == "kept"
    told = json.loads(done.output.strip().splitlines()[-1])
    assert told == NOWHERE_TOLD, done.output


# --- no run changes another process's scheduling or limits (oracle/seccomp.py _OTHERS) ------------------------------
_OTHERS_ASKED = """import ctypes, errno, json, os, resource, sys
libc = ctypes.CDLL(None, use_errno=True)
other = int(sys.argv[1])  # a process of the same uid: the grader's own, under the fallback of a grader not root
""" + _TRIED + """

def raw(number, *args):
    def call():
        if libc.syscall(number, *args) < 0:
            raise OSError(ctypes.get_errno(), str(number))
    return call


mine = os.sched_getaffinity(0)
tried("nice itself", lambda: os.setpriority(os.PRIO_PROCESS, 0, min(19, os.getpriority(os.PRIO_PROCESS, 0) + 1)))
tried("renice another", lambda: os.setpriority(os.PRIO_PROCESS, other, 19))
tried("renice the user", lambda: os.setpriority(os.PRIO_USER, 0, 19))
tried("renice the group", lambda: os.setpriority(os.PRIO_PGRP, 0, 19))
tried("pin itself", lambda: os.sched_setaffinity(0, mine))
tried("pin another", lambda: os.sched_setaffinity(other, mine))
tried("schedule another", lambda: os.sched_setscheduler(other, os.SCHED_BATCH, os.sched_param(0)))
tried("limit itself", lambda: resource.setrlimit(resource.RLIMIT_CORE, (0, 0)))
tried("read another's limit", lambda: resource.prlimit(other, resource.RLIMIT_NOFILE))
tried("limit another", lambda: resource.prlimit(other, resource.RLIMIT_CORE, (0, 0)))
if os.uname().machine == "x86_64":
    tried("io priority of itself", raw(251, 1, 0, 0))
    tried("io priority of another", raw(251, 1, other, 0))
    tried("io priority of the user", raw(251, 3, 0, 0))
print(json.dumps(seen))
"""
SYSTEM_PYTHON = "/usr/bin/python3"  # one a fresh uid may run (the tests' own may live in root's home)
OTHERS_TOLD = {"nice itself": "ok", "renice another": "EPERM", "renice the user": "EPERM", "renice the group": "EPERM",
               "pin itself": "ok", "pin another": "EPERM", "schedule another": "EPERM", "limit itself": "ok",
               "read another's limit": "EPERM", "limit another": "EPERM", "io priority of itself": "ok",
               "io priority of another": "EPERM", "io priority of the user": "EPERM"}


@pytest.mark.skipif(os.geteuid() != 0, reason="run as a uid of its own, which only root may choose (as root, a "
                    "renice of its whole user or group reaches only the test's own processes)")
def test_a_run_changes_no_other_processs_scheduling_or_limits() -> None:
    """Under the filter a child may renice, pin and limit itself, and not another process of its uid (what a run of a
    grader that is not root meets outside bubblewrap's pid namespace: the grader and other grades), nor every process
    of its user or process group. Without the filter the same calls on that process succeed (so the EPERMs are the
    filter's). Every process here runs as a fresh uid in a session of its own, so even a filter that let a renice of
    the whole user or group through would reach only them."""
    if os.uname().machine not in ("x86_64", "aarch64"):
        pytest.skip("the filter is left out on a machine whose numbers it does not know")
    from oracle import seccomp
    from oracle.run_uid import fresh_uid, kill_uid

    uid = fresh_uid()
    alone = {"user": uid, "group": uid, "extra_groups": [], "start_new_session": True}
    other = subprocess.Popen([SYSTEM_PYTHON, "-I", "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE,
                             **alone)
    try:
        runs = {}
        for name, before in (("filtered", seccomp.install), ("free", None)):
            done = subprocess.run([SYSTEM_PYTHON, "-I", "-c", _OTHERS_ASKED, str(other.pid)], capture_output=True,
                                  text=True, timeout=30, preexec_fn=before, **alone)
            assert done.returncode == 0, done.stderr
            runs[name] = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        other.communicate("")
        kill_uid(uid)
    assert runs["filtered"] == {name: told for name, told in OTHERS_TOLD.items() if name in runs["filtered"]}
    free = runs["free"]
    assert all(free[name] == "ok" for name in ("renice another", "pin another", "limit another")), free
