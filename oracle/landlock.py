"""Linux Landlock for the sandbox's fallback: what a run may touch where bubblewrap cannot start.

Landlock needs no namespace and no privilege (it works in Docker's default profile), so it holds where
bubblewrap fails. A run's ruleset is an allow-list built by the grader before the run starts
(`Ruleset.build`); the child applies it to itself just before exec (`Ruleset.enforce`), so it binds from
the submission's first instruction and through every process it starts. What is not on the list cannot be
opened, listed, written, created or executed, whatever the files' modes say: our package, the reference
solutions, the rubric, other runs' areas, /etc, /home, the host's /tmp and /dev/shm. TCP bind and connect
are refused (ABI 4), and signals and abstract unix sockets cannot reach outside the run (ABI 6). A
Landlocked process cannot ptrace, or read /proc/PID/mem or environ of, a process outside its domain.

    ruleset = Ruleset.build(read=[Path("/usr")], write=[area], devices=DEVICES)   # in the grader
    ruleset.enforce()                                                             # in the child, pre-exec
"""

import ctypes
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # the same on x86-64 and arm64
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_LIBC = ctypes.CDLL(None, use_errno=True)

# filesystem rights, by ABI version
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
_FS_V1 = (1 << 13) - 1  # execute .. make_sym
_REFER, _TRUNCATE, _IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | _TRUNCATE | _IOCTL_DEV  # the rights a rule on a file may hold
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is missing or disabled."""
    version = _LIBC.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _handled_fs(abi: int) -> int:
    return _FS_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0) | (_IOCTL_DEV if abi >= 5 else 0)


def numbers(abi: int) -> dict[str, int]:
    """What a program of ours in C needs to build the rulesets this module builds on a kernel of ABI `abi`
    (oracle/proc_view.c): the system calls, the rule type, the file system rights handled, and those a rule on a
    file may hold."""
    return {"SYS_CREATE": _SYS_CREATE_RULESET, "SYS_ADD": _SYS_ADD_RULE, "SYS_RESTRICT": _SYS_RESTRICT_SELF,
            "RULE_PATH_BENEATH": _RULE_PATH_BENEATH, "HANDLED": _handled_fs(abi), "FILE_RIGHTS": _FILE_RIGHTS}


@dataclass(frozen=True)
class Ruleset:
    """A Landlock ruleset held open by the grader (fd), ready for a child to enforce."""

    fd: int
    abi: int

    @classmethod
    def build(cls, *, read: Sequence[Path], write: Sequence[Path] = (), devices: Sequence[str] = DEVICES,
              proc: bool = True) -> "Ruleset":
        """A ruleset that allows reading (and executing) under each of `read`, everything under each of
        `write`, reading and writing the `devices`, reading /proc (each process's own entries; those of
        processes outside the run are closed to it by Landlock's ptrace rule and the uid), and nothing else.
        Paths that do not exist are skipped. OSError when Landlock is unavailable."""
        abi = abi_version()
        if abi < 1:
            raise OSError("Landlock is not available in this kernel")
        handled = _handled_fs(abi)
        attr = _RulesetAttr(handled, (_NET_BIND_TCP | _NET_CONNECT_TCP) if abi >= 4 else 0,
                            (_SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL) if abi >= 6 else 0)
        size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 16 if abi >= 4 else 8
        fd = _LIBC.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
        if fd < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
        ruleset = cls(int(fd), abi)
        try:
            for path in read:
                ruleset._allow(Path(path), READ)
            if proc:
                ruleset._allow(Path("/proc"), READ_FILE | READ_DIR)
            for path in write:
                ruleset._allow(Path(path), handled)
            for device in devices:
                # and their ioctls, as bubblewrap's runs have them (review 18's urandom_entropy_ioctl): those that
                # change anything need CAP_SYS_ADMIN, which no run has
                ruleset._allow(Path(device), READ_FILE | WRITE_FILE | (_TRUNCATE if abi >= 3 else 0)
                               | (_IOCTL_DEV if abi >= 5 else 0))
        except BaseException:
            ruleset.close()
            raise
        return ruleset

    def _allow(self, path: Path, access: int) -> None:
        try:
            target = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            if not os.path.isdir(f"/proc/self/fd/{target}"):
                access &= _FILE_RIGHTS
            rule = _PathBeneathAttr(access, target)
            if _LIBC.syscall(_SYS_ADD_RULE, self.fd, ctypes.c_uint32(_RULE_PATH_BENEATH), ctypes.byref(rule),
                             ctypes.c_uint32(0)) != 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
        finally:
            os.close(target)

    def enforce(self) -> None:  # pragma: no cover  (runs in a child before exec, where coverage does not follow;
        # tests/test_sandbox.py and tests/test_tamper_sandbox.py check what it refuses)
        """Restricts the calling process (and all it will start) to the ruleset; for a child before exec.
        Sets no_new_privs first, as Landlock requires of an unprivileged process."""
        if _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if _LIBC.syscall(_SYS_RESTRICT_SELF, self.fd, ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
