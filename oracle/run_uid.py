"""A run's own uid, outside bubblewrap: chosen fresh, so that nothing else runs as it and it owns nothing
outside its sandbox; and everything of it removed when the run ends (its processes, wherever they went,
and the System V IPC objects it made, which would otherwise outlive it on the host)."""

import ctypes
import os
import pwd
import secrets
import signal
from pathlib import Path

_LIBC = ctypes.CDLL(None, use_errno=True)


def fresh_uid() -> int:
    """A uid no account has, so that nothing else runs as it and it owns nothing outside this sandbox."""
    while True:
        uid = 1_000_000 + secrets.randbelow(1_000_000_000)
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid


def kill_uid(uid: int) -> None:
    """Kills every process running as uid, wherever it went: a fork of this process whose effective uid is the run's
    and whose real and saved uids are a fresh uid of its own sends SIGKILL to every process it may signal (kill(2)
    with pid -1 spares the sender). Sandbox.stop calls it once it has killed the run's process group, which nothing
    a run starts can leave (oracle/seccomp.py), so it is the second line, and a process of the uid still there is
    hostile: it can neither signal the killer nor trace it (kill(2) needs the sender's uid to be the target's real
    or saved one, ptrace all three and a dumpable target; a setuid from root is not dumpable), and the killer runs
    no program, which would make it dumpable again (tests/test_run_uid.py). The fork ends by its own SIGKILL, not
    os._exit, where coverage's `_exit` patch would save all of this process's tracer data first (CI: 45 -> 36
    minutes, ci40 against ci41)."""
    killer = fresh_uid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child ends by SIGKILL; coverage cannot follow it)
        try:
            os.setgroups([])
            os.setresgid(killer, uid, killer)
            os.setresuid(killer, uid, killer)
            os.kill(-1, signal.SIGKILL)
        finally:
            os.kill(os.getpid(), signal.SIGKILL)
    os.waitpid(pid, 0)


_IPC_RMID = 0


def remove_ipc(uid: int) -> None:
    """Removes every System V shared memory segment, message queue and semaphore set `uid` owns: memory a
    run could otherwise leave on the host after it ended."""
    removers = {"shm": lambda ident: _LIBC.shmctl(ident, _IPC_RMID, None),
                "msg": lambda ident: _LIBC.msgctl(ident, _IPC_RMID, None),
                "sem": lambda ident: _LIBC.semctl(ident, 0, _IPC_RMID)}
    for kind, remove in removers.items():
        try:
            header, *rows = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()
        except OSError:
            continue
        names = header.split()
        for row in rows:
            fields = dict(zip(names, row.split()))
            if fields.get("uid") == str(uid) or fields.get("cuid") == str(uid):
                remove(int(fields[names[1]]))  # shmid, msqid or semid
