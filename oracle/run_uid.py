"""A run's own uid, outside bubblewrap: chosen fresh, so that nothing else runs as it and it owns nothing
outside its sandbox; and everything of it removed when the run ends (its processes, wherever they went,
and the System V IPC objects it made, which would otherwise outlive it on the host)."""

import ctypes
import pwd
import secrets
import subprocess
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
    """Kills every process running as uid: a shell that becomes uid sends SIGKILL to every process it may signal
    (kill(2) with pid -1, which spares the sender). Sandbox.stop calls it once it has killed the run's process
    group, which nothing a run starts can leave (oracle/seccomp.py), so it ends whatever no group held. A program,
    not a fork of this process: a fork of a Python traced by coverage saves all the tracer's data at its os._exit
    (coverage's `_exit` patch), which cost CI's tests of the fallback isolations nine minutes (ci40 against ci41)."""
    subprocess.run(["/bin/sh", "-c", "kill -s KILL -- -1"], user=uid, group=uid, extra_groups=[], env={},
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


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
