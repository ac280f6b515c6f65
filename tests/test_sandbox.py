"""oracle.sandbox: a run sees only what it is given, writes only where it may, has no network, its own uid (as
root), its limits from the first instruction, and nothing it starts outlives it or the grader."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import oracle.sandbox as sandbox
from oracle import isolation
from oracle import landlock
from oracle.sandbox import Limits, Sandbox, SandboxUnavailable
from tests.test_grade_batch import _running as _pids_running

BUBBLEWRAP = isolation.bwrap_problem(os.geteuid() == 0) is None
needs_bwrap = pytest.mark.skipif(not BUBBLEWRAP and not os.environ.get("CI"), reason="bubblewrap cannot run here")


def _gone(fragment: str, seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while _pids_running(fragment) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _pids_running(fragment)


@needs_bwrap
def test_a_run_sees_only_the_paths_it_is_given(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cr3t")
    with Sandbox() as box:
        assert box.isolation == "bubblewrap"
        copy = box.expose(secret)
        hidden = box.run(["/bin/sh", "-c", f"cat {secret} {copy}; ls /etc /root /work 2>&1; echo end"], timeout=10)
        assert "s3cr3t" not in hidden.output and "No such file" in hidden.output, hidden.output
        shown = box.run(["/bin/cat", copy], readable=[copy.parent], timeout=10)
        assert shown.status == 0 and shown.output == "s3cr3t"


@needs_bwrap
def test_a_run_writes_only_where_it_may(tmp_path: Path) -> None:
    with Sandbox() as box:
        writable, readable = box.area("out"), box.area("in")
        script = f"touch {writable}/yes; touch {readable}/no; touch /usr/no; echo done"
        done = box.run(["/bin/sh", "-c", script], readable=[readable], writable=[writable], timeout=10)
        assert done.output.count("Read-only file system") + done.output.count("Permission denied") == 2, done.output
        assert (writable / "yes").exists() and not (readable / "no").exists() and not Path("/usr/no").exists()


@needs_bwrap
def test_a_run_cannot_grow_memory_through_its_file_systems() -> None:
    """/tmp and /dev/shm are tmpfs of tmp_bytes each; the in-memory root and /dev are read-only."""
    limits = Limits(tmp_bytes=4 << 20, file_bytes=3 << 20)
    script = ("for place in /tmp /dev/shm; do for n in 1 2 3; do head -c 3000000 /dev/zero > $place/f$n; done; done; "
              "echo x > /filled; echo x > /dev/filled; du -sk /tmp /dev/shm")
    with Sandbox() as box:
        done = box.run(["/bin/sh", "-c", script], timeout=20, limits=limits)
    sizes = [int(line.split()[0]) for line in done.output.splitlines() if line.endswith(("/tmp", "/dev/shm"))]
    assert len(sizes) == 2 and all(size <= 4 << 10 for size in sizes), done.output
    assert done.output.count("No space left on device") >= 2, done.output
    assert done.output.count("Read-only file system") == 2, done.output


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_gets_no_system_v_ipc_by_any_abi(without_bwrap: bool, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """shmget, msgget and semget fail with EPERM, and so does a system call through i386's int 0x80 (whose
    ipc() multiplexes them): memory no rlimit counts is out of reach."""
    if without_bwrap:
        _without_bwrap(monkeypatch)
    script = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
              "print(libc.shmget(0, 1 << 20, 0o1600), libc.msgget(0, 0o1600), libc.semget(0, 1, 0o1600), "
              "ctypes.get_errno())\n")
    program = tmp_path / "int80"
    int80 = "#include <stdio.h>\nint main(void) { long r; __asm__ volatile(\"int $0x80\" : \"=a\"(r) : \"a\"(20L)); " \
            "printf(\"%ld\\n\", r); return 0; }\n"
    if os.uname().machine == "x86_64":
        (tmp_path / "int80.c").write_text(int80)
        subprocess.run(["gcc", "-O0", "-o", str(program), str(tmp_path / "int80.c")], check=True)
    with Sandbox() as box:
        done = box.run(["/usr/bin/python3", "-c", script], timeout=20)
        assert done.output.split() == ["-1", "-1", "-1", "1"], done.output  # 1: EPERM
        if program.exists():
            ran = box.run([box.expose(program)], readable=[box.expose(program).parent], timeout=10)
            assert ran.status != 0 or int(ran.output) < 0, ran.output  # getpid() through int 0x80 is refused


_SYSCALLS = """import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
{setup}found = []
for number, args in ({calls}):
    ctypes.set_errno(0)
    found.append((libc.syscall(number, *args), ctypes.get_errno()))
print(found)
"""


def _refused_in_a_run(box: Sandbox, calls: str, count: int, setup: str = "", **run: object) -> None:
    """Runs `count` system calls (`calls`: Python tuples of (number, args), x86_64's numbers) in a run of `box`
    (after `setup`, Python lines) and asserts each failed with EPERM."""
    done = box.run(["/usr/bin/python3", "-c", _SYSCALLS.format(setup=setup, calls=calls)], timeout=20, **run)
    assert done.output.strip() == "[" + ", ".join(["(-1, 1)"] * count) + "]", done.output  # 1: EPERM


def _without_bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox made to find no working bubblewrap (its fallback), for this test only."""
    monkeypatch.setattr(isolation, "BWRAP", "bwrap-that-is-not-installed")
    monkeypatch.setattr(isolation, "_probed", {})


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_gets_no_io_uring_and_no_process_vm_copy(without_bwrap: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """io_uring_setup, io_uring_enter and io_uring_register fail with EPERM: a ring's operations (a socket, an
    open) are made by the kernel past the system call filter, so a run gets no ring. So do process_vm_readv and
    process_vm_writev, with which the kernel reads a process's own memory where a guard page would fault."""
    if without_bwrap:
        _without_bwrap(monkeypatch)
    params = "ctypes.create_string_buffer(120)"  # x86_64's numbers: 425-427 io_uring, 310-311 process_vm
    if os.uname().machine != "x86_64":
        pytest.skip("the numbers below are x86_64's")
    with Sandbox() as box:
        _refused_in_a_run(box, f"(425, (8, {params})), (426, (0, 0, 0, 0, None, 0)), (427, (0, 0, None, 0)), "
                               "(310, (0, None, 0, None, 0, 0)), (311, (0, None, 0, None, 0, 0))", 5)


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_leaves_no_key_and_no_message_queue_for_the_next(without_bwrap: bool,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """add_key, request_key, keyctl and mq_open fail with EPERM: a key in a keyring the grader's uid or session
    shares, or a POSIX queue, would outlive the run, and a later run of the submission (a second opinion,
    oracle/hw3/alone.py) could tell itself from the first by finding it."""
    if without_bwrap:
        _without_bwrap(monkeypatch)
    if os.uname().machine != "x86_64":
        pytest.skip("the numbers below are x86_64's")
    with Sandbox() as box:
        _refused_in_a_run(box, "(248, (b'user', b'pagedcheck-mark', b'x', 1, -3)), "  # add_key to @s
                               "(249, (b'user', b'pagedcheck-mark', None, 0)), "  # request_key
                               "(250, (0, -4, 0)), "  # keyctl(KEYCTL_GET_KEYRING_ID, @u, 0)
                               "(240, (b'/pagedcheck-mark', 0o100 | 2, 0o600, None))", 4)  # mq_open O_CREAT


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_changes_no_files_metadata_even_where_it_may_write(without_bwrap: bool,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """chmod, chown, utime and setxattr in every form fail with EPERM, on a file of the run's own folder too:
    Landlock binds none of them, so without bubblewrap a run of a non-root grader (the grader's uid) could set
    the mode or times of any file of the grader's, or leave a note in an attribute of a file a later run is
    handed. The mode and times of the file are what they were; writing it still works."""
    if without_bwrap:
        _without_bwrap(monkeypatch)
    if os.uname().machine != "x86_64":
        pytest.skip("the numbers below are x86_64's")
    box = Sandbox()
    area = box.area("metadata")
    target = area / "file"
    setup = (f'path = b"{target}"\nwith open(path, "w") as out:\n    out.write("written")\n'
             'fd = os.open(path, os.O_RDWR)\n')
    calls = ('(90, (path, 0o777)), (91, (fd, 0o777)), (268, (-100, path, 0o777, 0)), (452, (-100, path, 0o777, 0)), '
             '(92, (path, -1, -1)), (93, (fd, -1, -1)), (94, (path, -1, -1)), (260, (-100, path, -1, -1, 0)), '
             '(132, (path, None)), (235, (path, None)), (261, (-100, path, None)), (280, (-100, path, None, 0)), '
             '(188, (path, b"user.mark", b"1", 1, 0)), (189, (path, b"user.mark", b"1", 1, 0)), '
             '(190, (fd, b"user.mark", b"1", 1, 0)), (197, (path, b"user.mark")), (198, (path, b"user.mark")), '
             '(199, (fd, b"user.mark"))')
    with box:
        _refused_in_a_run(box, calls, 18, setup, writable=[area])
        written, mode = target.read_text(), os.stat(target).st_mode & 0o777
    assert written == "written" and mode != 0o777


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_cannot_watch_a_file(without_bwrap: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """inotify_init, inotify_init1, inotify_add_watch, fanotify_init and fanotify_mark fail with EPERM: the grader
    reads and writes the pools' file a run holds, and a watch would tell the run when (review 8's
    fork_unwatched_inotify told a second opinion's replay, which reads less, from a graded run)."""
    if without_bwrap:
        _without_bwrap(monkeypatch)
    if os.uname().machine != "x86_64":
        pytest.skip("the numbers below are x86_64's")
    with Sandbox() as box:
        _refused_in_a_run(box, "(253, ()), (294, (0,)), (254, (0, b'/tmp', 0x1)), (300, (0, 0)), "
                               "(301, (0, 1, 0x1, -100, b'/tmp'))", 5)


@needs_bwrap
def test_a_run_has_no_network() -> None:
    with Sandbox() as box:
        done = box.run(["/bin/cat", "/proc/net/dev"], timeout=10)
    interfaces = {line.split(":")[0].strip() for line in done.output.splitlines()[2:]}
    assert interfaces == {"lo"}, done.output


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root grader drops to another uid")
def test_as_root_each_run_gets_an_unprivileged_uid_of_its_own() -> None:
    with Sandbox() as box:
        first, second = (int(box.run(["/usr/bin/id", "-u"], timeout=10).output) for _ in range(2))
    assert first != 0 and second != 0 and first != second


def test_limits_bind_from_the_first_instruction() -> None:
    limits = Limits(cpu_seconds=7, memory_bytes=300 << 20, file_bytes=1 << 20, open_files=40)
    with Sandbox() as box:
        done = box.run(["/bin/sh", "-c", "ulimit -t; ulimit -v; ulimit -f; ulimit -n"], timeout=10, limits=limits)
    assert done.output.split() == ["7", str(300 << 10), str((1 << 20) // 512), "40"], done.output


def test_everything_a_run_starts_dies_with_it() -> None:
    with Sandbox() as box:
        done = box.run(["/bin/sh", "-c", "(setsid sleep 313 &); echo started"], timeout=10)
        assert "started" in done.output
        assert _gone("sleep 313")


def test_a_timed_out_run_is_killed_with_what_it_started() -> None:
    with Sandbox() as box:
        start = time.monotonic()
        done = box.run(["/bin/sh", "-c", "(setsid sleep 314 &); sleep 300"], timeout=1)
        assert done.status is None and time.monotonic() - start < 10
    assert _gone("sleep 314")


def test_runs_die_when_the_grader_is_killed(tmp_path: Path) -> None:
    """SIGKILL gives the grader no chance to clean up: bwrap's --die-with-parent (or PR_SET_PDEATHSIG) does."""
    grader = textwrap.dedent("""
        import sys, time
        from oracle.sandbox import Sandbox
        box = Sandbox()
        box.popen(["/bin/sleep", "315"])
        print("ready", flush=True)
        time.sleep(300)
    """)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-c", grader], stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    assert _pids_running("sleep 315")
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _gone("sleep 315")


def test_a_signal_is_reported_as_a_signal_not_bwraps_exit_code() -> None:
    with Sandbox() as box:
        done = box.run(["/bin/sh", "-c", "kill -SEGV $$"], timeout=10)
    assert done.signal_name == "SIGSEGV"


def test_without_bwrap_it_falls_back_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(isolation, "BWRAP", "bwrap-that-is-not-installed")
    monkeypatch.setattr(isolation, "_probed", {})
    with pytest.raises(SandboxUnavailable, match="--require-sandbox: bwrap is not installed"):
        Sandbox(require_full=True)
    with Sandbox() as box:
        expected = "landlock" if landlock.abi_version() else "uid" if os.geteuid() == 0 else "none"
        assert box.isolation == expected
        assert "bwrap is not installed" in box.description and box.description.startswith(expected)
        if os.geteuid() == 0:  # a uid of its own: what the run started dies with its command, setsid or not
            assert int(box.run(["/usr/bin/id", "-u"], timeout=10).output) != 0
            box.popen(["/bin/sh", "-c", "(setsid sleep 316 &)"]).wait()
            assert _gone("sleep 316")
            box.popen(["/bin/sh", "-c", "(setsid sleep 317 &); sleep 318"])  # still running: close() ends it
            assert _pids_running("sleep 317")
    assert _gone("sleep 317") and _gone("sleep 318")


needs_landlock = pytest.mark.skipif(not landlock.abi_version(), reason="this kernel has no Landlock")


@pytest.fixture
def fallback(monkeypatch: pytest.MonkeyPatch) -> Sandbox:
    """A sandbox where bwrap fails, as in a container that cannot create namespaces."""
    monkeypatch.setattr(isolation, "BWRAP", "bwrap-that-is-not-installed")
    monkeypatch.setattr(isolation, "_probed", {})
    with Sandbox() as box:
        yield box


@needs_landlock
def test_the_fallback_reaches_only_usr_and_its_own_paths(fallback: Sandbox) -> None:
    """Every file read here is world-readable by its mode (/etc/passwd, areas of mode 0755): the allow-list
    alone keeps them out of reach."""
    secret = fallback.area("rubric") / "secret.txt"
    secret.write_text("s3cr3t")
    secret.chmod(0o644)
    reference = Path(sandbox.__file__).resolve().parents[1] / "engine" / "c" / "llm_memory.c"
    other = fallback.area("other")
    (other / "theirs.c").write_text("int theirs;")
    mine = fallback.area("mine")
    script = f"cat {secret} {reference} {other}/theirs.c /etc/passwd; ls /tmp /dev/shm; touch /dev/shm/x; cat {mine}/a; echo end"
    (mine / "a").write_text("mine")
    done = fallback.run(["/bin/sh", "-c", script], readable=[mine], timeout=10)
    assert "s3cr3t" not in done.output and "int theirs" not in done.output and "root:" not in done.output
    assert "llm_init" not in done.output and done.output.count("Permission denied") == 7, done.output
    assert "mine" in done.output and not Path("/dev/shm/x").exists()


@needs_landlock
def test_the_fallback_writes_only_its_writable_paths_and_a_private_tmp(fallback: Sandbox) -> None:
    writable, readable = fallback.area("out"), fallback.area("in")
    script = f"touch {writable}/yes $TMPDIR/scratch; touch {readable}/no; echo $TMPDIR"
    done = fallback.run(["/bin/sh", "-c", script], readable=[readable], writable=[writable], timeout=10)
    private = Path(done.output.splitlines()[-1])
    assert (writable / "yes").exists() and not (readable / "no").exists(), done.output
    assert private.is_relative_to(fallback.root) and not private.exists()  # removed when the run ended


@needs_landlock
def test_the_fallbacks_private_tmp_is_named_by_no_count_of_runs(fallback: Sandbox) -> None:
    """A run reads its $TMPDIR in its environment: named by the sandbox's count of areas, it would tell a second
    opinion from the graded run's first process (oracle/hw3/alone.py); it is named at random."""
    names = [Path(fallback.run(["/bin/sh", "-c", "echo $TMPDIR"], timeout=10).output.strip()).name for _ in range(2)]
    assert names[0] != names[1] and all(name.endswith("-tmp") and not name[:-4].isdigit() for name in names), names


@needs_landlock
def test_the_fallback_without_a_private_tmp_writes_nowhere(fallback: Sandbox) -> None:
    """A Python server's run (private_tmp=False): no $TMPDIR on the grader's disk, so nothing of that disk to fill."""
    here = fallback.area("here")
    script = f'echo "tmp=$TMPDIR"; touch {here}/no {fallback.root}/no /tmp/pagedcheck-private-tmp-no; echo end'
    done = fallback.run(["/bin/sh", "-c", script], readable=[here], cwd=here, timeout=10, private_tmp=False)
    assert "tmp=\n" in done.output and done.output.count("Permission denied") == 3, done.output
    assert not (here / "no").exists() and not (fallback.root / "no").exists()
    assert not Path("/tmp/pagedcheck-private-tmp-no").exists()
    assert [p.name for p in fallback.root.iterdir() if p.name.endswith("-tmp")] == []  # no folder made for it


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root grader gives each run a uid of its own")
def test_what_a_runs_uid_made_of_system_v_ipc_is_removed() -> None:
    """Behind the filter (oracle/seccomp.py), where it is missing: a segment and a queue a run's uid made
    outside bwrap's IPC namespace are removed with the uid's leftovers."""
    import ctypes

    from oracle.run_uid import fresh_uid, remove_ipc

    uid, (read, write) = fresh_uid(), os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (a child that becomes the uid)
        os.setgid(uid)
        os.setuid(uid)
        libc = ctypes.CDLL(None)
        os.write(write, f"{libc.shmget(0, 1 << 20, 0o1600)} {libc.msgget(0, 0o1600)}".encode())
        os._exit(0)
    os.waitpid(pid, 0)
    shm, msg = os.read(read, 100).decode().split()
    os.close(read)
    os.close(write)

    def ids(kind: str) -> list[str]:
        return [row.split()[1] for row in Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]]

    assert shm in ids("shm") and msg in ids("msg")
    remove_ipc(uid)
    assert shm not in ids("shm") and msg not in ids("msg")


def test_in_the_fallback_a_run_that_kills_its_parent_ends_itself(fallback: Sandbox) -> None:
    """As under bwrap, whose pid namespace ends with the run's first process: the command dies with its
    supervisor, so the chain that ends the run when the grader dies cannot be cut from inside."""
    import select

    script = "echo started; kill -KILL $PPID; sleep 1; echo survived"
    proc = fallback.popen(["/bin/sh", "-c", script], stdout=subprocess.PIPE)
    assert proc.stdout is not None
    output, ended, deadline = b"", False, time.monotonic() + 10
    try:  # to its end of file: nothing of the run (its supervisor's watcher included) holds its pipes then
        while not ended and (left := deadline - time.monotonic()) > 0:
            if select.select([proc.stdout], [], [], left)[0]:
                chunk = os.read(proc.stdout.fileno(), 100)
                output, ended = output + chunk, chunk == b""
    finally:
        fallback.stop(proc)
    assert output == b"started\n" and ended


@needs_landlock
def test_the_fallback_has_no_tcp_and_cannot_signal_the_grader(fallback: Sandbox) -> None:
    import socket
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    script = (f"import socket, os, signal\ntry:\n socket.create_connection(('127.0.0.1', {port}), 2); print('connected')\n"
              f"except OSError as e: print('refused', e.errno)\ntry:\n os.kill({os.getpid()}, 0); print('signalled')\n"
              f"except OSError as e: print('no signal', e.errno)\n")
    done = fallback.run(["/usr/bin/python3", "-c", script], timeout=20)
    server.close()
    assert "refused" in done.output and "no signal" in done.output, done.output


@needs_bwrap
def test_our_own_packages_are_hidden_where_they_lie_under_usr(monkeypatch: pytest.MonkeyPatch) -> None:
    """A system-wide install puts the reference solutions under /usr, which runs see: they are masked."""
    monkeypatch.setattr(isolation, "_OURS", [Path("/usr/share/doc")])
    with Sandbox() as box:
        done = box.run(["/bin/ls", "/usr/share/doc"], timeout=10)
    assert done.status == 0 and done.output == ""


_NEW_YORK = ("import zoneinfo, datetime; zone = zoneinfo.ZoneInfo('America/New_York'); "
             "print(datetime.datetime(2026, 1, 1, tzinfo=zone).utcoffset(), len(zoneinfo.available_timezones()))")


def test_a_run_reads_the_same_system_data_with_bubblewrap_and_without(monkeypatch: pytest.MonkeyPatch) -> None:
    """oracle/run_view.py: the time zone database and the compiled locales are folders bubblewrap shows and the
    fallback's frozen runtime copies; a Python run under -I loads a zone (review 12's zoneinfo_at_import) and sets its
    LANG's locale (C.UTF-8, which this machine's C library reads from /usr/lib/locale) alike."""
    seen = []
    for without_bwrap in (False, True):
        if without_bwrap:
            if not landlock.abi_version():
                pytest.skip("this kernel has no Landlock")
            _without_bwrap(monkeypatch)
        with Sandbox() as box:
            assert box.isolation == ("landlock" if without_bwrap else "bubblewrap")
            code = f"{_NEW_YORK}; import locale; print(locale.setlocale(locale.LC_ALL, ''))"
            seen.append(box.run(["/usr/bin/python3", "-I", "-c", code], timeout=60).output)
    assert seen[0] == seen[1] and seen[0].startswith("-1 day, 19:00:00 ") and seen[0].endswith("\nC.UTF-8\n"), seen


def test_a_host_without_time_zones_reads_the_tzdata_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the interpreter's TZPATH holds no database, every run reads the tzdata package's (a dependency of
    pagedcheck): bubblewrap binds it at its own path, so a zone loads on any machine."""
    import sysconfig

    from oracle import run_view

    real = sysconfig.get_config_var
    monkeypatch.setattr(sysconfig, "get_config_var",
                        lambda name: "/nonexistent/zoneinfo" if name == "TZPATH" else real(name))
    zones = run_view.time_zones()
    assert zones is not None and zones.parts[-2:] == ("tzdata", "zoneinfo"), zones
    with Sandbox() as box:
        if box.isolation != "bubblewrap":
            pytest.skip("bubblewrap does not run here")
        done = box.run(["/usr/bin/python3", "-I", "-c", "import zoneinfo; print(zoneinfo.TZPATH); " + _NEW_YORK],
                       timeout=60)
    assert done.output.splitlines() == [repr((str(zones),)), done.output.splitlines()[1]], done.output
    assert done.output.splitlines()[1].startswith("-1 day, 19:00:00 "), done.output


_WRITE_SOMEWHERE = """
import os, tempfile
for folder in ("/tmp", "/dev/shm", "/var/tmp", os.getcwd(), os.environ.get("HOME", "")):
    try:
        with open(os.path.join(folder, "note"), "w") as f:
            f.write("x")
        print("wrote", folder)
    except OSError:
        pass
try:
    print("tmp", tempfile.gettempdir())
except FileNotFoundError:
    print("no temporary folder")
"""


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_without_a_private_tmp_writes_nowhere_under_either_isolation(without_bwrap: bool,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """private_tmp=False (the Python server's run): no temporary folder and nothing writable, the same under
    bubblewrap (an empty /tmp and /dev/shm sealed read-only) as under Landlock (no $TMPDIR), so a submission that
    writes a file fails the same way in both (oracle/run_view.py)."""
    if without_bwrap:
        _without_bwrap(monkeypatch)
    with Sandbox() as box:
        done = box.run(["/usr/bin/python3", "-I", "-c", _WRITE_SOMEWHERE], timeout=60, private_tmp=False)
        assert box.isolation == ("landlock" if without_bwrap else "bubblewrap")
    assert done.output.splitlines() == ["no temporary folder"], done.output


_OPEN_MEMORY = """
import errno, os
pid = os.getpid()
opened = []
for path in ("/proc/self/mem", f"/proc/{pid}/mem", f"/proc/self/task/{pid}/mem", "/proc/thread-self/mem",
             f"/proc/{os.getppid()}/mem"):
    for flags in (os.O_RDONLY, os.O_RDWR):
        try:
            os.close(os.open(path, flags))
            opened.append("opened")
        except OSError as exc:
            opened.append(errno.errorcode[exc.errno])
print(" ".join(opened))
"""


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_run_without_procfs_opens_no_processs_memory_file_under_either_isolation(
        without_bwrap: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """procfs=False (a native driver's run, the Python server's): /proc/self/mem, /proc/PID/mem, a task's and the
    parent's cannot be opened, for reading or writing, EACCES in both isolations (bubblewrap: a /proc no one may
    enter; Landlock: no rule for /proc). Through that file the kernel reads a guard page unseen and writes the
    driver's read-only code (review 16's proc_self_mem_past, driver_handler_rewritten). With a procfs (a memcheck
    run's valgrind reads /proc/self/maps) no memory file opens for writing in either."""
    if without_bwrap:
        _without_bwrap(monkeypatch)
    with Sandbox() as box:
        alone, with_procfs = (box.run(["/usr/bin/python3", "-I", "-c", _OPEN_MEMORY], timeout=60, private_tmp=False,
                                      frozen=True, procfs=procfs).output.split() for procfs in (False, True))
        assert box.isolation == ("landlock" if without_bwrap else "bubblewrap")
    assert alone == ["EACCES"] * 10, alone
    assert len(with_procfs) == 10 and "opened" not in with_procfs[1::2], with_procfs  # O_RDWR: every second
