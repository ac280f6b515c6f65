"""What a run may write, and what it is told about writing, is the same under both isolations (oracle/SANDBOX.md "What a
run may write"; review 15's log_if_writable, log_if_writable_c and memcheck_told_by_tmp): real runs in a real Sandbox,
bubblewrap and its Landlock fallback."""

import json
import os
import subprocess
from pathlib import Path

import pytest

from oracle.sandbox import Sandbox
from tests.test_sandbox import _without_bwrap

BOTH = pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])

_ASKED = """import errno, json, os, sys
seen = {}


def tried(name, call):
    try:
        seen[name] = call()
    except OSError as exc:
        seen[name] = errno.errorcode[exc.errno]


for path in ("/tmp", "/usr", "/", sys.argv[1], "/dev/null"):
    tried(f"access W_OK {path}", lambda: os.access(path, os.W_OK))
    tried(f"faccessat W_OK {path}", lambda: os.access(path, os.W_OK, dir_fd=os.open(sys.argv[1], os.O_RDONLY)))
tried("access R_OK /usr", lambda: os.access("/usr", os.R_OK))
tried("mkdir /tmp/d", lambda: os.mkdir("/tmp/d"))
tried("mkdir here", lambda: os.mkdir(os.path.join(sys.argv[1], "d")))
tried("unlink here", lambda: os.unlink(os.path.join(sys.argv[1], "kept")))
tried("rename here", lambda: os.rename(os.path.join(sys.argv[1], "kept"), os.path.join(sys.argv[1], "moved")))
tried("symlink /tmp/l", lambda: os.symlink("/usr", "/tmp/l"))
tried("mknod /tmp/p", lambda: os.mkfifo("/tmp/p"))
tried("truncate here", lambda: os.truncate(os.path.join(sys.argv[1], "kept"), 0))
tried("write /dev/null", lambda: open(os.devnull, "w").write("x"))
tried("read here", lambda: open(os.path.join(sys.argv[1], "kept")).read())
for path in ("/tmp", "/", sys.argv[1]):
    tried(f"statvfs {path}", lambda: os.statvfs(path).f_flag & os.ST_RDONLY)
print(json.dumps(seen))
"""


def _told(without_bwrap: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[str, object], str]:
    if without_bwrap:
        _without_bwrap(monkeypatch)
    with Sandbox() as box:
        area = box.area("readable")
        (area / "kept").write_text("kept")
        done = box.run(["/usr/bin/python3", "-c", _ASKED, str(area)], readable=[area], private_tmp=False, timeout=30)
        assert (area / "kept").read_text() == "kept", "a run that may write nowhere changed a file of its own folder"
        assert sorted(path.name for path in area.iterdir()) == ["kept"]
        seen = json.loads(done.output.strip().splitlines()[-1])
        return {name.replace(str(area), "<area>"): answer for name, answer in seen.items()}, box.isolation


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_that_may_write_nowhere_is_told_so_with_erofs(without_bwrap: bool,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Asking whether a path may be written says no (EROFS, what bubblewrap's read-only mounts answer; Landlock does
    not govern access(2), which said yes from /tmp's mode 1777), for every path, and every call that makes, removes
    or renames a name answers EROFS; statvfs answers ENOSYS (no mount's flags to tell); reading is still asked and
    done truly, and a device is still written."""
    seen, isolation = _told(without_bwrap, monkeypatch)
    assert isolation == ("landlock" if without_bwrap else "bubblewrap")
    for path in ("/tmp", "/usr", "/", "<area>", "/dev/null"):
        assert seen[f"access W_OK {path}"] is False, seen
        assert seen[f"faccessat W_OK {path}"] is False, seen
    assert seen["access R_OK /usr"] is True, seen
    for name in ("mkdir /tmp/d", "mkdir here", "unlink here", "rename here", "symlink /tmp/l", "mknod /tmp/p",
                 "truncate here"):
        assert seen[name] == "EROFS", (name, seen)
    assert seen["write /dev/null"] == 1, seen
    assert seen["read here"] == "kept", seen
    for path in ("/tmp", "/", "<area>"):
        assert seen[f"statvfs {path}"] == "ENOSYS", seen


def test_a_run_that_may_write_nowhere_is_told_the_same_in_both_isolations(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every answer of the probe above is the same under bubblewrap and under its fallback."""
    bubblewrap, _ = _told(False, monkeypatch)
    with monkeypatch.context() as inner:
        fallback, _ = _told(True, inner)
    assert bubblewrap == fallback


_START = """import errno, os, sys
folder = os.environ["TMPDIR"]


def made(path):
    try:
        with open(path, "a") as file:
            file.write("x")
        return "made"
    except OSError as exc:
        return errno.errorcode[exc.errno]


first = made(os.path.join(folder, "at-start"))
os.unlink(os.path.join(folder, "at-start"))  # as valgrind does with its client's files, once it holds them open
print(folder != "/tmp", first, made("/tmp/at-start"), flush=True)
os.read(int(sys.argv[1]), 1)  # the grader seals the folder meanwhile (a run's stdin is /dev/null: the supervisor)
print(made(os.path.join(folder, "after")), made("/tmp/after"), os.access(folder, os.W_OK), flush=True)
"""


@BOTH
def test_a_start_folder_is_written_at_start_only(without_bwrap: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A memcheck run's start folder (valgrind's client files): a folder of the grader's named by $TMPDIR, not /tmp,
    under both isolations; the run may make (and remove) a file there until the grader seals it, and no file after
    that; /tmp takes no file before or after; asked, the folder is not writable."""
    if without_bwrap:
        _without_bwrap(monkeypatch)
    go, went = os.pipe()
    with Sandbox() as box:
        proc = box.popen(["/usr/bin/python3", "-c", _START, str(go)], private_tmp=False, start_folder=True,
                         pass_fds=(go,), stdout=subprocess.PIPE)
        os.close(go)
        try:
            assert proc.stdout is not None
            first = proc.stdout.readline().decode().split()
            folder = Path(box._private_tmp[proc])  # the sandbox's own record: the folder it gave
            assert first[0] == "True" and first[1] == "made", first
            assert first[2] in ("EROFS", "EACCES"), first  # the errno of a write-intent open differs (SANDBOX.md)
            box.seal(proc)
            os.write(went, b"\n")
            after = proc.stdout.readline().decode().split()
            assert after[0] == "EACCES", after
            assert after[1] in ("EROFS", "EACCES") and after[2] == "False", after
            assert list(folder.iterdir()) == []
        finally:
            box.stop(proc)
            os.close(went)
        assert not folder.exists()
