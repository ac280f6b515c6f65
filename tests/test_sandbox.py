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
from oracle.sandbox import Limits, Sandbox, SandboxUnavailable
from tests.test_grade_batch import _running as _pids_running

BUBBLEWRAP = sandbox.bwrap_problem(os.geteuid() == 0) is None
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
    monkeypatch.setattr(sandbox, "BWRAP", "bwrap-that-is-not-installed")
    monkeypatch.setattr(sandbox, "_probed", {})
    with pytest.raises(SandboxUnavailable, match="--require-sandbox: bwrap is not installed"):
        Sandbox(require_full=True)
    with Sandbox() as box:
        assert box.isolation == ("uid" if os.geteuid() == 0 else "none")
        assert "bwrap is not installed" in box.description and "not hidden" in box.description
        if os.geteuid() == 0:  # under "uid", close() ends every process of each run's uid, setsid or not
            assert int(box.run(["/usr/bin/id", "-u"], timeout=10).output) != 0
            box.popen(["/bin/sh", "-c", "(setsid sleep 316 &)"]).wait()
            assert _pids_running("sleep 316")
    assert _gone("sleep 316")


@needs_bwrap
def test_our_own_packages_are_hidden_where_they_lie_under_usr(monkeypatch: pytest.MonkeyPatch) -> None:
    """A system-wide install puts the reference solutions under /usr, which runs see: they are masked."""
    monkeypatch.setattr(sandbox, "_OURS", [Path("/usr/share/doc")])
    with Sandbox() as box:
        done = box.run(["/bin/ls", "/usr/share/doc"], timeout=10)
    assert done.status == 0 and done.output == ""
