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
    """Kills every process running as uid: a child that becomes uid sends SIGKILL to all it may signal."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (the child ends in _exit; coverage cannot follow a setuid child)
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            os.kill(-1, signal.SIGKILL)
        finally:
            os._exit(0)
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
