"""oracle/proc_view.py: a run without procfs (a native driver's, the Python server's) meets one /proc under both
isolations: stat(2), access(2) and readlink(2) answer as on the host, every open beneath it (a process's memory file
among them) is EACCES. Under bubblewrap the launcher gives that view (Landlock applied inside bwrap), under the fallback
Landlock's own ruleset does (review 17's statm_if_readable)."""

import os
import subprocess
from pathlib import Path

import pytest

from oracle import isolation, landlock
from oracle.proc_view import PLACE, launcher
from oracle.sandbox import Sandbox
from tests.test_sandbox import _without_bwrap

BUBBLEWRAP = isolation.bwrap_problem(os.geteuid() == 0) is None
LANDLOCK = landlock.abi_version() > 0
needs_both = pytest.mark.skipif(not (BUBBLEWRAP and LANDLOCK) and not os.environ.get("CI"),
                                reason="bubblewrap or Landlock cannot run here")

# every question a run may ask of /proc, and what it was answered: "ok" or the errno's name. A descriptor reopened
# through /proc/self/fd (/dev/fd) is its file's to answer: stdin, /dev/null, opens in both (Landlock checks the file
# the link names)
_ASK = """
import errno, os
def ask(what, call):
    try:
        call()
        return what + ":ok"
    except OSError as exc:
        return what + ":" + errno.errorcode[exc.errno]
def readable(path):
    if not os.access(path, os.R_OK):
        raise PermissionError(errno.EACCES, path)
pid = os.getpid()
print(" ".join([
    ask("access", lambda: readable("/proc/self/statm")), ask("stat", lambda: os.stat("/proc/self/mem")),
    ask("lstat", lambda: os.lstat(f"/proc/{pid}/maps")), ask("readlink", lambda: os.readlink("/proc/self/exe")),
    ask("listdir", lambda: os.listdir("/proc")), ask("listdir_self", lambda: os.listdir("/proc/self")),
    ask("statm", lambda: os.close(os.open("/proc/self/statm", os.O_RDONLY))),
    ask("mem_read", lambda: os.close(os.open("/proc/self/mem", os.O_RDONLY))),
    ask("mem_write", lambda: os.close(os.open(f"/proc/{pid}/mem", os.O_RDWR))),
    ask("fd_devnull", lambda: os.close(os.open("/dev/fd/0", os.O_RDONLY))),
]))
"""
_SEEN = ["access:ok", "stat:ok", "lstat:ok", "readlink:ok", "listdir:EACCES", "listdir_self:EACCES", "statm:EACCES",
         "mem_read:EACCES", "mem_write:EACCES", "fd_devnull:ok"]


@needs_both
@pytest.mark.parametrize("frozen", [False, True], ids=["host-usr", "frozen"])
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_without_procfs_may_ask_about_proc_and_open_nothing_there_under_either_isolation(
        without_bwrap: bool, frozen: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if without_bwrap:
        _without_bwrap(monkeypatch)
    with Sandbox() as box:
        done = box.run(["/usr/bin/python3", "-I", "-c", _ASK], timeout=60, private_tmp=False, frozen=frozen,
                       procfs=False)
        assert box.isolation == ("landlock" if without_bwrap else "bubblewrap")
    assert done.output.split() == _SEEN, done.output


@needs_both
def test_under_bubblewrap_a_run_without_procfs_still_reads_writes_and_ends_as_before() -> None:
    """The launcher grants everything beneath every other top folder: a run reads /usr and its own paths, writes its
    writable folder and /tmp, is refused the sealed root (EROFS, bubblewrap's answer, as before), and its exit status
    is its command's."""
    script = ("cat /bin/sh >/dev/null && cat {given}/given && echo x > made && echo y > /tmp/made && "
              "cat made /tmp/made && {{ echo z > /made; }} 2>&1 | grep -c 'Read-only'; exit 7")
    with Sandbox() as box:
        assert box.isolation == "bubblewrap"
        given, written = box.area("given"), box.area("written")
        (given / "given").write_text("given\n")
        done = box.run(["/bin/sh", "-c", script.format(given=given)], timeout=30, cwd=written, readable=[given],
                       writable=[written], procfs=False)
    assert (done.status, done.output.split()) == (7, ["given", "x", "y", "1"]), done


@pytest.mark.skipif(not LANDLOCK, reason="no Landlock in this kernel")
def test_the_launcher_starts_its_program_only_under_its_ruleset_outside_bubblewrap_too(tmp_path: Path) -> None:
    """Run by hand (no bwrap: the host's "/", whose /proc gets no rule either), the launcher execs its program with the
    program's arguments and status, and that program can no longer open anything under /proc."""
    program = launcher(tmp_path / "cache")
    assert program is not None and program.stat().st_mode & 0o777 == 0o755
    done = subprocess.run([str(program), "/bin/sh", "-c", "test -r /proc/self/statm; echo $?; cat /proc/self/statm; "
                           "echo \"$0\"; exit 5", "named"], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout.split()) == (5, ["0", "named"]), done
    assert "/proc/self/statm: Permission denied" in done.stderr, done.stderr
    assert PLACE.startswith("/") and "/" not in PLACE[1:]  # a file on bwrap's root, which gets a rule of its own


@pytest.mark.skipif(not LANDLOCK, reason="no Landlock in this kernel: no launcher to build")
def test_the_launchers_cache_must_be_the_users_alone(tmp_path: Path) -> None:
    shared = tmp_path / "open-to-all"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(OSError, match="not this user's alone"):
        launcher(shared)
