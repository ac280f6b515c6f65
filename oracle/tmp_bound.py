"""The Landlock fallback's bound on a run's temporary folder, by construction (oracle/run_view.py): bubblewrap's is a
tmpfs of `tmp_bytes`; the fallback's is a folder on the grader's disk, which no mount can size. Each file there is
bounded by the run's file-size limit (RLIMIT_FSIZE, `file_bytes`); this bounds their total.

A second system call filter (installed in the child before exec, beside oracle/seccomp.py's) hands to the grader
(SECCOMP_RET_USER_NOTIF) every call that may make a file, folder or link, or open one for writing: open and openat
with O_CREAT, O_TMPFILE, O_WRONLY or O_RDWR, openat2, creat, mkdir, mknod, link and symlink in all their forms. The
call waits while `Bound` counts what the run holds in its folder (`held`): a file it may still write (open for
writing, mapped shared and writable, or deleted but still open or mapped, in any process of the run's session, read in
/proc/PID/fd, fdinfo and maps) at `file_bytes`, every other entry at the blocks it has (it can grow only through an
open for writing, which asks first). When that and one more file of `file_bytes` would pass `tmp_bytes`, the call
fails with EDQUOT ("Disk quota exceeded"), as a full tmpfs fails with ENOSPC; else it goes on. So the folder never
holds more than `tmp_bytes`, save where several threads of the run pass the count at once (each one more file), and
where /proc is closed to the grader (Docker's root lacks CAP_SYS_PTRACE for a run of another uid: files the run holds
open or mapped there are then counted at their blocks, and bounded by its open-files limit and address space).

    install_in_child(sock)     # pre-exec, in the child: the filter, its listener sent to the grader
    Bound(receive(sock), tmp, session, tmp_bytes, file_bytes).start()   # in the grader
"""

import ctypes
import errno
import fcntl
import os
import platform
import select
import socket
import struct
import threading
from pathlib import Path

_SECCOMP_SET_MODE_FILTER, _FLAG_NEW_LISTENER = 1, 1 << 3
_RET_ALLOW, _RET_USER_NOTIF = 0x7FFF0000, 0x7FC00000
_LD_W_ABS, _JEQ_K, _JSET_K, _JA, _RET_K = 0x20, 0x15, 0x45, 0x05, 0x06
_ARGS = 16  # offset of seccomp_data.args[0]
_NOTIF_RECV, _NOTIF_SEND = 0xC0502100, 0xC0182101  # _IOWR('!', 0, struct seccomp_notif), ('!', 1, ..._resp)
_CONTINUE = 1  # SECCOMP_USER_NOTIF_FLAG_CONTINUE
_NOTIF = struct.Struct("=QII iIQ6Q")  # id, pid, flags, seccomp_data: nr, arch, instruction pointer, args
_RESPONSE = struct.Struct("=QqiI")  # id, val, error, flags
_MAKES = 0o100 | 0o20000000 | 0o3  # O_CREAT, __O_TMPFILE, O_WRONLY, O_RDWR (the same bits on both machines)
# by machine: (audit arch, seccomp's number, calls that always make something, {call: index of its flags argument})
_CALLS = {
    "x86_64": (0xC000003E, 317, (85, 83, 258, 133, 259, 86, 265, 88, 266, 437), {2: 1, 257: 2}),
    "aarch64": (0xC00000B7, 277, (34, 33, 37, 36, 437), {56: 2}),
}
_LIBC = ctypes.CDLL(None, use_errno=True)


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _filter() -> bytes | None:
    """The BPF program that hands each call making a file to the grader; None on a machine we do not know."""
    known = _CALLS.get(platform.machine())
    if known is None:
        return None
    arch, _, always, flagged = known
    checks = 4 + len(always) + len(flagged)  # where the flag tests start: a load and a bit test per flagged call
    allow = checks + 2 * len(flagged)
    notify = allow + 1

    def jeq(at: int, value: int, yes: int, no: int) -> tuple[int, int, int, int]:
        return (_JEQ_K, yes - at - 1, no - at - 1, value)

    code = [(_LD_W_ABS, 0, 0, 4), jeq(1, arch, 2, allow), (_LD_W_ABS, 0, 0, 0)]  # arch (another ABI: seccomp.py's)
    for number in always:
        code.append(jeq(len(code), number, notify, len(code) + 1))
    for i, number in enumerate(flagged):
        code.append(jeq(len(code), number, checks + 2 * i, len(code) + 1))
    code.append((_JA, 0, 0, allow - len(code) - 1))
    for index in flagged.values():
        code.append((_LD_W_ABS, 0, 0, _ARGS + 8 * index))  # the flags' low 32 bits
        code.append((_JSET_K, notify - len(code) - 1, allow - len(code) - 1, _MAKES))
    code += [(_RET_K, 0, 0, _RET_ALLOW), (_RET_K, 0, 0, _RET_USER_NOTIF)]
    assert len(code) == notify + 1
    return b"".join(struct.pack("HBBI", *insn) for insn in code)


_PROGRAM = _filter()  # built in the grader: the child only installs it
_BUFFER = ctypes.create_string_buffer(_PROGRAM or b"")


def available() -> bool:
    """Whether this machine's numbers are known (else the fallback's folder is bounded per file only)."""
    return _PROGRAM is not None


def install_in_child(sock: socket.socket) -> None:  # pragma: no cover  (in the child before exec, after
    # oracle/seccomp.py's install set no_new_privs; tests/test_sandbox.py checks its effect)
    """Installs the filter in the calling process and sends its listener to the grader over `sock`."""
    program = _Program(len(_PROGRAM) // 8, ctypes.cast(_BUFFER, ctypes.c_void_p))
    listener = _LIBC.syscall(_CALLS[platform.machine()][1], _SECCOMP_SET_MODE_FILTER, _FLAG_NEW_LISTENER,
                             ctypes.byref(program))
    if listener < 0:
        raise OSError(ctypes.get_errno(), "seccomp(SECCOMP_FILTER_FLAG_NEW_LISTENER)")
    socket.send_fds(sock, [b"L"], [listener])
    os.close(listener)


def receive(sock: socket.socket) -> int:
    """The listener the child sent (OSError when it sent none)."""
    _, fds, _, _ = socket.recv_fds(sock, 1, 1)
    if not fds:
        raise OSError(errno.EPROTO, "the run sent no seccomp listener")
    return fds[0]


def _in_session(pid: str, session: int) -> bool:
    try:
        return os.getsid(int(pid)) == session
    except OSError:
        return False  # gone meanwhile


def held(tmp: Path, session: int, file_bytes: int) -> int:
    """The bytes the run holds in `tmp`, or may still write there without asking: each file a process of the run's
    `session` holds open for writing or maps shared and writable, and each file deleted but still open or mapped, at
    the file-size limit `file_bytes` (it may grow to it); every other file, folder and link at the blocks it has (it
    grows only through an open for writing, which asks first). Each file once, by inode; processes whose /proc the
    grader may not read are left out."""
    blocks: dict[int, int] = {}
    for folder, dirs, files in os.walk(tmp):
        for name in [*dirs, *files]:
            try:
                entry = os.lstat(os.path.join(folder, name))
            except OSError:
                continue  # deleted meanwhile
            blocks[entry.st_ino] = entry.st_blocks * 512
    prefix, growing = f"{tmp}{os.sep}", set()
    for pid in os.listdir("/proc"):
        if pid.isdigit() and _in_session(pid, session):
            growing |= _growing(pid, prefix)
    return sum(file_bytes if inode in growing else blocks[inode] for inode in blocks.keys() | growing)


def _growing(pid: str, prefix: str) -> set[int]:
    """The inodes under `prefix` that process `pid` may still write: open for writing, mapped shared and writable, or
    deleted but still open or mapped."""
    found: set[int] = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        maps = Path(f"/proc/{pid}/maps").read_text().splitlines()
    except OSError:
        return found  # gone meanwhile, or closed to the grader
    for fd in fds:
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith(prefix) and (link.endswith(" (deleted)") or _writes(pid, fd)):
                found.add(os.stat(f"/proc/{pid}/fd/{fd}").st_ino)
        except (OSError, ValueError):
            continue  # closed meanwhile
    for line in maps:  # mapped, its descriptor closed or not
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5].startswith(prefix) and (
                fields[5].endswith(" (deleted)") or fields[1][1] == "w" and fields[1][3] == "s"):
            found.add(int(fields[4]))
    return found


def _writes(pid: str, fd: str) -> bool:
    """Whether descriptor `fd` of process `pid` is open for writing (its fdinfo's flags)."""
    for line in Path(f"/proc/{pid}/fdinfo/{fd}").read_text().splitlines():
        if line.startswith("flags:"):
            return int(line.split()[1], 8) & 0o3 != 0
    return False


class Bound(threading.Thread):
    """Answers the run's calls that may make or write a file in `tmp` (a thread of the grader's, until the run's last
    process is gone): each refused with EDQUOT when what the run holds there and one more file of `file_bytes` would
    pass `tmp_bytes`, else let through."""

    def __init__(self, listener: int, tmp: Path, session: int, tmp_bytes: int, file_bytes: int):
        super().__init__(daemon=True, name=f"tmp-bound-{session}")
        self.listener, self.tmp, self.session = listener, tmp, session
        self.tmp_bytes, self.file_bytes = tmp_bytes, file_bytes

    def run(self) -> None:
        poll = select.poll()
        poll.register(self.listener, select.POLLIN)
        try:
            while True:
                events = poll.poll()
                if any(event & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, event in events):
                    return  # no process of the run is left
                notif = bytearray(_NOTIF.size)  # zeroed, as the kernel asks
                try:
                    fcntl.ioctl(self.listener, _NOTIF_RECV, notif, True)
                except OSError:
                    continue  # the caller died meanwhile
                call_id = _NOTIF.unpack(notif)[0]
                try:
                    full = held(self.tmp, self.session, self.file_bytes) + self.file_bytes > self.tmp_bytes
                except Exception:  # noqa: BLE001  (a count we could not make refuses: the bound holds either way)
                    full = True
                answer = _RESPONSE.pack(call_id, 0, -errno.EDQUOT if full else 0, 0 if full else _CONTINUE)
                try:
                    fcntl.ioctl(self.listener, _NOTIF_SEND, bytearray(answer), True)
                except OSError:
                    pass  # the caller died meanwhile
        finally:
            os.close(self.listener)
