"""oracle.run_uid.kill_uid: every process of a run's uid ends, wherever it went (another session, stopped), and
no process of another uid does; on real processes of fresh uids (root only: a fresh uid needs setuid)."""

import os
import signal
import subprocess
import time

import pytest

from oracle.run_uid import fresh_uid, kill_uid

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="a fresh uid needs root")


def _sleeper(uid: int, *, session: bool) -> subprocess.Popen:
    """`sleep 600` as uid, in a session of its own when `session` (as a run's daemon would be)."""
    return subprocess.Popen(["sleep", "600"], user=uid, group=uid, extra_groups=[], start_new_session=session,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _ended(proc: subprocess.Popen) -> int | None:
    """proc's exit status once it has ended, within 10 s; None if it still runs."""
    try:
        return proc.wait(10)
    except subprocess.TimeoutExpired:
        return None


def test_every_process_of_the_uid_ends_and_no_other() -> None:
    uid, other = fresh_uid(), fresh_uid()
    in_session, stopped = _sleeper(uid, session=True), _sleeper(uid, session=False)
    bystander = _sleeper(other, session=True)
    try:
        os.kill(stopped.pid, signal.SIGSTOP)
        kill_uid(uid)
        assert _ended(in_session) == -signal.SIGKILL
        assert _ended(stopped) == -signal.SIGKILL
        time.sleep(0.2)
        assert bystander.poll() is None, "a process of another uid was killed"
    finally:
        for proc in (in_session, stopped, bystander):
            proc.kill()
            proc.wait()


def test_a_uid_with_no_process_is_no_error() -> None:
    kill_uid(fresh_uid())

