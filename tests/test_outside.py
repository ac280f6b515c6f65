"""oracle.native.outside: the grader reads and writes a child's memory itself, from its own process, while the
child is stopped; on a real child (a small C program built here with gcc) under every isolation this machine
has: bubblewrap (a pid namespace: the host pid is found by the process tree, not asked), Landlock, and another
uid (each fallback forced by a bwrap that is not installed, and for "uid" a kernel said to have no Landlock)."""

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from oracle import isolation, sandbox
from oracle.elf_interp import padded, system_loader
from oracle.hw3.c.build import build
from oracle.native.outside import DriverGone, OutsideMemory, Unreachable, driver_pid
from oracle.hw3.probes import run_probes
from oracle.sandbox import Sandbox
from tests.conftest import REFERENCE_C, ROOT, SUBMISSIONS, patched, seeded_build_cache

CHILD = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>
static char buffer[64] = "the child's own bytes";
int main(int argc, char **argv)
{
    int in = atoi(argv[1]);
    char c;
    if (argc > 2)  /* "undumpable": a program that makes its memory unreadable to its own uid */
        prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    printf("%p\n", (void *)buffer);
    fflush(stdout);
    while (read(in, &c, 1) == 1) {  /* a byte: print the buffer as it is now */
        printf("%s\n", buffer);
        fflush(stdout);
    }
    return 0;
}
"""

# linked as build.py links a driver: under Landlock the sandbox points its interpreter at the frozen runtime's
# loader, so its process runs its own file (oracle/elf_interp.py)
AS_A_DRIVER = f"-Wl,--dynamic-linker={padded(system_loader())}"


def _isolations() -> list[str]:
    found = ["bubblewrap"] if sandbox.bwrap_problem(os.geteuid() == 0) is None else []
    found += ["landlock"] if sandbox.landlock.abi_version() else []
    return found + (["uid"] if os.geteuid() == 0 else [])


@pytest.fixture(params=_isolations())
def box(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Sandbox]:
    if request.param != "bubblewrap":
        monkeypatch.setattr(isolation, "BWRAP", "bwrap-that-is-not-installed")
        monkeypatch.setattr(isolation, "_probed", {})
    if request.param == "uid":
        monkeypatch.setattr(sandbox.landlock, "abi_version", lambda: 0)
    with Sandbox() as made:
        assert made.isolation == request.param
        yield made


class Child:
    """The C program above, started in the sandbox: `address` is its buffer's, as it printed it."""

    def __init__(self, box: Sandbox, program: Path):
        self.exposed = box.expose(program)
        read, self._poke = os.pipe()
        self.proc = box.popen([self.exposed, str(read)], readable=[self.exposed.parent], pass_fds=(read,),
                              stdout=subprocess.PIPE)
        os.close(read)
        assert self.proc.stdout is not None
        self.address = int(self.proc.stdout.readline(), 16)
        self.box = box

    def buffer(self) -> bytes:
        """What the child prints its buffer as, now."""
        os.write(self._poke, b".")
        assert self.proc.stdout is not None
        return self.proc.stdout.readline().rstrip(b"\n")

    def end(self) -> None:
        os.close(self._poke)
        self.proc.wait(10)
        self.box.stop(self.proc)


@pytest.fixture
def child(box: Sandbox, tmp_path: Path) -> Iterator[Child]:
    (tmp_path / "child.c").write_text(CHILD)
    subprocess.run(["gcc", "-O1", AS_A_DRIVER, "-o", str(tmp_path / "child"), str(tmp_path / "child.c")], check=True)
    made = Child(box, tmp_path / "child")
    yield made
    if made.proc.poll() is None:
        made.end()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def test_the_grader_reads_and_writes_the_childs_bytes_itself(child: Child) -> None:
    memory = OutsideMemory.attach(child.proc, child.exposed)
    try:
        with memory.stopped(deadline=float("inf")):
            assert memory.read(child.address, 21, "the buffer") == b"the child's own bytes"
            memory.write(child.address + 4, b"CHILD", "the buffer")
        assert child.buffer() == b"the CHILD's own bytes"
    finally:
        memory.close()


def test_the_child_is_found_by_its_program_in_the_process_tree_and_stopped_while_read(box: Sandbox, child: Child) -> None:
    pid, refused = driver_pid(child.proc, child.exposed)
    assert pid is not None and not refused and os.stat(f"/proc/{pid}/exe").st_ino == os.stat(child.exposed).st_ino
    if box.isolation == "bubblewrap":  # bwrap's own process is the Popen's; the child runs two levels below
        assert pid != child.proc.pid
    memory = OutsideMemory.attach(child.proc, child.exposed)
    try:
        with memory.stopped(deadline=float("inf")):
            assert _state(pid) == "T"
        assert _state(pid) != "T" and child.buffer() == b"the child's own bytes"  # continued: it answers
    finally:
        memory.close()


@pytest.mark.parametrize("address", [0, 0x10, 1 << 47, (1 << 64) - 8])
def test_an_address_the_child_does_not_map_is_its_failure_with_the_object_and_address(child: Child, address: int) -> None:
    memory = OutsideMemory.attach(child.proc, child.exposed)
    try:
        with memory.stopped(deadline=float("inf")):
            with pytest.raises(Unreachable, match=f"^the grader could not read your engine's ref_count at 0x{address:x}: "):
                memory.read(address, 8, "your engine's ref_count")
            with pytest.raises(Unreachable, match=f"^the grader could not write an L2 table at 0x{address:x}: "):
                memory.write(address, b"\0" * 4, "an L2 table")
    finally:
        memory.close()


def test_an_object_cut_by_the_end_of_a_mapping_is_unreadable(child: Child) -> None:
    memory = OutsideMemory.attach(child.proc, child.exposed)
    maps = Path(f"/proc/{memory.pid}/maps").read_text().splitlines()
    end = next(int(line.split()[0].split("-")[1], 16) for line in maps
               if int(line.split()[0].split("-")[0], 16) <= child.address < int(line.split()[0].split("-")[1], 16))
    following = [int(line.split()[0].split("-")[0], 16) for line in maps]
    try:
        if end in following:
            pytest.skip("the buffer's mapping is followed by another one")
        with memory.stopped(deadline=float("inf")):
            with pytest.raises(Unreachable, match=f"could not read your Sequence at 0x{end - 8:x}: only 8 of its 40 "):
                memory.read(end - 8, 40, "your Sequence")
            with pytest.raises(Unreachable, match=f"could not write an L2 table at 0x{end - 8:x}: only 8 of its 64 "):
                memory.write(end - 8, b"\0" * 64, "an L2 table")
    finally:
        memory.close()


def test_a_run_whose_process_runs_another_program_is_not_found(child: Child, tmp_path: Path) -> None:
    """The driver is the one process of the run whose executable is the grader's program: a run where none is
    (here the grader asks for another file) is the run's failure, never another process taken instead."""
    other = tmp_path / "child.c"
    assert driver_pid(child.proc, other) == (None, False)
    with pytest.raises(Unreachable, match="could not find your program's process"):
        OutsideMemory.attach(child.proc, other)


def test_a_child_that_ended_is_gone_not_unreadable(child: Child) -> None:
    memory = OutsideMemory.attach(child.proc, child.exposed)
    try:
        child.end()
        assert memory.ended
        with pytest.raises(DriverGone), memory.stopped(deadline=float("inf")):
            pass
        with pytest.raises((DriverGone, Unreachable)):
            memory.read(child.address, 8, "the buffer")
    finally:
        memory.close()
    with pytest.raises(DriverGone):
        OutsideMemory.attach(child.proc, child.exposed)


def test_a_forged_reply_on_the_pipe_is_not_what_the_probe_reads(box: Sandbox, tmp_path: Path) -> None:
    """tamper2/forged_probe_reply on l1_traversal writes, from inside free_sequence, the replies a correct
    implementation's driver would send (every block free) on the reply pipe: the probe reads the engine
    itself, under every isolation, and sees the blocks the buggy free kept."""
    base = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "l1_traversal.patch")
    (tmp_path / "llm_memory.c").write_text(patched(base, SUBMISSIONS / "hostile" / "tamper2" / "forged_probe_reply.patch"))
    driver = build(tmp_path, seeded_build_cache(tmp_path / "cache"), box).graded_driver
    assert driver is not None
    (result,) = run_probes(driver, sandbox=box, only=["l1_gap_free"])
    assert not result.passed and "the blocks past the gap still have ref_count 1" in result.detail


# Run by /usr/bin/python3 as another grader (a uid of no privilege, or root without CAP_SYS_PTRACE): attaches to
# the child above, started by a Sandbox of that grader's, and prints what happened.
ATTACH = """
import os, subprocess, sys
from pathlib import Path
from oracle.native.outside import MachineRefuses, OutsideMemory, Unreachable
from oracle.sandbox import Sandbox
with Sandbox() as box:
    exposed = box.expose(Path(sys.argv[1]))
    read, poke = os.pipe()
    proc = box.popen([exposed, str(read), *sys.argv[2:]], readable=[exposed.parent], pass_fds=(read,),
                     stdout=subprocess.PIPE)
    proc.stdout.readline()
    try:
        OutsideMemory.attach(proc, exposed).close()
        print("opened")
    except (Unreachable, MachineRefuses) as why:
        print(type(why).__name__, why)
    os.close(poke)
    box.stop(proc)
    print(box.isolation)
"""


def _attach_as(prefix: list[str], *child_args: str, python: str = "/usr/bin/python3") -> list[str]:
    """ATTACH run under `prefix` (setpriv ...) by `python`, the child program built in a folder every uid may
    read. The grader's own interpreter (sys.executable) is measured by coverage like this process (it passes
    its configuration on), for a grader that stays root; another uid may not write coverage's data."""
    folder = Path(tempfile.mkdtemp(prefix="pagedcheck-outside-"))
    try:
        folder.chmod(0o755)
        (folder / "child.c").write_text(CHILD)
        subprocess.run(["gcc", "-O1", AS_A_DRIVER, "-o", str(folder / "child"), str(folder / "child.c")], check=True)
        failing = folder / "bin"  # no bubblewrap for this grader: a bwrap that fails, first on PATH
        failing.mkdir(mode=0o755)
        (failing / "bwrap").write_text("#!/bin/sh\nexit 1\n")
        (failing / "bwrap").chmod(0o755)
        env = {"PATH": f"{failing}:/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": "/tmp"}
        env |= {name: value for name, value in os.environ.items() if name.startswith("COVERAGE_")}
        done = subprocess.run([*prefix, python, "-c", ATTACH, str(folder / "child"), *child_args],
                              env=env, cwd="/tmp", capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0 or not sandbox.landlock.abi_version(), reason="needs root to become another "
                    "uid, and Landlock for that uid's fallback")
def test_a_program_that_makes_itself_unreadable_to_a_same_uid_grader_fails_itself() -> None:
    """A grader of no privilege, its runs of its own uid (the Landlock fallback): a program that turns its
    dumpable flag off cannot be opened, while the grader's own supervisor shell can: the program's doing."""
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    assert _attach_as(nobody) == ["opened", "landlock"]
    shown = _attach_as(nobody, "undumpable")
    assert shown == ["Unreachable the grader could not open your program's memory: Permission denied", "landlock"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to drop CAP_SYS_PTRACE")
def test_root_without_cap_sys_ptrace_reads_its_runs_as_their_own_uid() -> None:
    """Root without CAP_SYS_PTRACE (Docker's default), each run as a uid of its own: the grader may not look into
    another uid's process, so it opens the driver's memory as the run's own uid (a process it starts for that),
    and the probes run there as everywhere; a program that turns its dumpable flag off is still refused, its
    own doing."""
    no_ptrace = ["setpriv", "--bounding-set=-sys_ptrace"]
    shown = _attach_as(no_ptrace, python=sys.executable)
    assert shown[0] == "opened", shown
    shown = _attach_as(no_ptrace, "undumpable", python=sys.executable)
    assert shown[0] == "Unreachable the grader could not open your program's memory: Permission denied", shown


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to look as the uid of a run")
def test_the_grader_looks_into_a_run_as_its_own_uid(box: Sandbox, child: Child) -> None:
    """outside._as_owner, what a grader without CAP_SYS_PTRACE falls back on: a process of the run's own uid
    names the run's executable (device and inode) and hands back its memory, opened read-write."""
    from oracle.native.outside import _as_owner

    pid, _ = driver_pid(child.proc, child.exposed)
    assert pid is not None
    program = os.stat(child.exposed)
    seen, fd = _as_owner(pid, open_memory=True)
    assert fd is not None
    try:
        assert seen == (program.st_dev, program.st_ino)
        assert os.pread(fd, 21, child.address) == b"the child's own bytes"
    finally:
        os.close(fd)
    assert _as_owner(pid, open_memory=False) == (seen, None)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root, to look as the uid of a run")
def test_a_run_that_made_itself_undumpable_refuses_its_own_uid(box: Sandbox, tmp_path: Path) -> None:
    from oracle.native.outside import _as_owner

    (tmp_path / "child.c").write_text(CHILD)
    subprocess.run(["gcc", "-O1", AS_A_DRIVER, "-o", str(tmp_path / "child"), str(tmp_path / "child.c")], check=True)
    exposed = box.expose(tmp_path / "child")
    read, poke = os.pipe()
    proc = box.popen([exposed, str(read), "undumpable"], readable=[exposed.parent], pass_fds=(read,),
                     stdout=subprocess.PIPE)
    os.close(read)
    try:
        assert proc.stdout is not None and proc.stdout.readline()
        pid, _ = driver_pid(proc, exposed)
        if pid is None:  # the grader itself may not look (it needs CAP_SYS_PTRACE for that): its owner may not
            return
        with pytest.raises(OSError):
            _as_owner(pid, open_memory=True)
    finally:
        os.close(poke)
        box.stop(proc)
