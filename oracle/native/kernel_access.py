"""What memory a system call makes the kernel read or write for the caller, from its registers alone: what the
grader's ledger judges when a call names the fence's span (ledger.py `Ledger.kernel_call`).

The CPU's read past a block faults, and the driver asks the ledger for the page; the kernel's own copy of the same
page (write(2) of a pointer past a block into a pipe) raises no signal, it answers EFAULT to the caller alone
(review 15's kernel_reads_past). So driver_main.c's filter hands the grader every call one of whose argument
registers lies in the span, and this table says, by default deny, what each register the call takes is:

- a pointer with the exact length the kernel copies (another argument's value, a count times a struct's size, the
  fixed size of the struct): judged whole;
- a NUL-terminated string (a path, a thread's name): judged to its NUL, which the ledger reads from the waiting
  caller's memory, at most the kernel's bound (`Text`);
- a value (a descriptor, a count, flags, a file offset: VALUE), or a register the call does not take (UNUSED: it
  holds whatever the program left there, rt_sigreturn's rdi a freed page's address).

A value in the span, any register of a call the table does not know, or of an operation it does not know (an ioctl's
legacy number, a futex or prctl operation not listed), cannot be judged: the call is refused (EPERM), never let go on
unjudged (review 16's untabled_call_past: sched_setparam; proc_self_mem_past: pread64's offset naming the heap
through /proc/self/mem). The table is small on purpose: a call missing from it is refused, which is always safe.

The calls whose buffers the kernel finds through pointers in memory (readv, writev, sendmsg, recvmsg and their
kin: an iovec array, a msghdr) are refused natively before any submission code runs (driver_main.c
refuse_indirect_io); a pointer inside a struct (pselect6's sigset) is not judged: no register names it.
"""

from collections.abc import Callable
from dataclasses import dataclass

_U32 = 0xFFFFFFFF


@dataclass(frozen=True)
class Text:
    """A NUL-terminated string the kernel reads up to its NUL, at most `most` bytes (the NUL included)."""

    most: int


VALUE = None  # a register the call takes as a value: never memory, refused when it lies in the span
UNUSED = "-"  # a register the call (or this operation) does not take: not judged
PATH = Text(4096)  # getname: PATH_MAX bytes, the NUL included (ENAMETOOLONG past them)
THREAD_NAME = Text(15)  # PR_SET_NAME: strncpy_from_user(comm, arg2, TASK_COMM_LEN - 1)

Length = Callable[[tuple[int, ...]], int]
Kind = int | str | Length | Text | None  # an int: a pointer to that many bytes; "aN": to argument N's value of bytes


def _count(arg: int, size: int) -> Length:
    """A pointer to an array of argument `arg`'s count (a C int or unsigned int: its low 32 bits) of `size`-byte
    structs; a negative int count is refused by the kernel before it copies anything."""
    return lambda args: (args[arg] & _U32) * size if args[arg] & _U32 < 1 << 31 else 0


def _fd_set(args: tuple[int, ...]) -> int:
    """select's fd set: ceil(nfds / 64) longs (nfds a C int; the kernel clamps it to the table's size, which only
    shortens what it reads)."""
    nfds = args[0] & _U32
    return (nfds + 63) // 64 * 8 if nfds < 1 << 31 else 0


def _sigset(arg: int) -> Length:
    """A kernel sigset_t (8 bytes) whose size argument `arg` must say 8, or the kernel copies nothing (EINVAL)."""
    return lambda args: 8 if args[arg] == 8 else 0


_STAT, _TIMESPEC, _RLIMIT, _RUSAGE = 144, 16, 16, 144
V, _ = VALUE, UNUSED
# x86_64 system call number: the kind of each register it takes, in order (registers past the tuple it does not take)
CALLS: dict[int, tuple[Kind, ...]] = {
    0: (V, "a2", V), 1: (V, "a2", V), 17: (V, "a2", V, V), 18: (V, "a2", V, V),  # read, write, pread64, pwrite64
    318: ("a1", V, V), 79: ("a1", V), 217: (V, "a2", V), 78: (V, "a2", V),  # getrandom, getcwd, getdents(64)
    2: (PATH, V, V), 257: (V, PATH, V, V), 85: (PATH, V),  # open, openat, creat
    21: (PATH, V), 269: (V, PATH, V), 439: (V, PATH, V, V),  # access, faccessat, faccessat2
    4: (PATH, _STAT), 6: (PATH, _STAT), 5: (V, _STAT), 262: (V, PATH, _STAT, V), 332: (V, PATH, V, V, 256),  # stat
    87: (PATH,), 263: (V, PATH, V), 83: (PATH, V), 258: (V, PATH, V), 84: (PATH,),  # unlink(at), mkdir(at), rmdir
    82: (PATH, PATH), 264: (V, PATH, V, PATH), 316: (V, PATH, V, PATH, V),  # rename, renameat, renameat2
    89: (PATH, "a2", V), 267: (V, PATH, "a3", V), 80: (PATH,), 76: (PATH, V),  # readlink(at), chdir, truncate
    137: (PATH, 120), 138: (V, 120), 63: (390,), 99: (112,), 100: (32,), 98: (V, _RUSAGE),  # statfs ... getrusage
    96: (_TIMESPEC, 8), 201: (8,), 228: (V, _TIMESPEC), 229: (V, _TIMESPEC),  # gettimeofday, time, clock_get*
    35: (_TIMESPEC, _TIMESPEC), 230: (V, V, _TIMESPEC, _TIMESPEC),  # nanosleep, clock_nanosleep
    7: (_count(1, 8), V, V), 271: (_count(1, 8), V, _TIMESPEC, _sigset(4), V),  # poll, ppoll: nfds struct pollfd
    23: (V, _fd_set, _fd_set, _fd_set, 16),  # select: three fd sets, a struct timeval
    270: (V, _fd_set, _fd_set, _fd_set, _TIMESPEC, 16),  # pselect6 (its sigset, named inside the last: not judged)
    232: (V, _count(2, 12), V, V), 281: (V, _count(2, 12), V, V, _sigset(5), V),  # epoll_wait, epoll_pwait
    233: (V, V, V, 12),  # epoll_ctl
    13: (V, 32, 32, V), 14: (V, _sigset(3), _sigset(3), V), 131: (24, 24),  # rt_sigaction, _sigprocmask, sigaltstack
    22: (8,), 293: (8, V), 97: (V, _RLIMIT), 160: (V, _RLIMIT), 302: (V, V, _RLIMIT, _RLIMIT),  # pipe(2), rlimits
    # no pointer at all: only their arity, so that what a register they do not take holds is not judged
    3: (V,), 8: (V, V, V), 15: (), 24: (), 32: (V,), 33: (V, V), 292: (V, V, V), 34: (), 37: (V,),  # close ... alarm
    39: (), 186: (), 110: (), 102: (), 104: (), 107: (), 108: (),  # getpid, gettid, getppid, get[ug]id, gete[ug]id
    60: (V,), 231: (V,), 200: (V, V), 234: (V, V, V),  # exit, exit_group, tkill, tgkill
    74: (V,), 75: (V,), 77: (V, V), 95: (V,), 221: (V, V, V, V), 285: (V, V, V, V),  # fsync ... fallocate
    290: (V, V), 291: (V,), 436: (V, V, V), 81: (V,),  # eventfd2, epoll_create1, close_range, fchdir
}
IOCTL, FCNTL, FUTEX, PRCTL, ARCH_PRCTL = 16, 72, 202, 157, 158
# fcntl's command: its third argument (none: not taken; V: a value; an int: a struct of that size)
_FCNTL: dict[int, tuple[Kind, ...]] = {
    **dict.fromkeys((1, 3, 9, 11, 1025, 1032, 1034), ()),  # F_GETFD, F_GETFL, F_GETOWN, F_GETSIG, ... : none
    **dict.fromkeys((0, 2, 4, 8, 10, 1024, 1026, 1030, 1031, 1033), (V,)),  # F_DUPFD, F_SETFD, F_SETFL, ...: a value
    **dict.fromkeys((5, 6, 7, 36, 37, 38), (32,)),  # F_GETLK, F_SETLK, F_SETLKW and the OFD ones: a struct flock
    **dict.fromkeys((15, 16), (8,)),  # F_SETOWN_EX, F_GETOWN_EX: a struct f_owner_ex
}
# futex's operation (without FUTEX_PRIVATE_FLAG and FUTEX_CLOCK_REALTIME): its six registers
_FUTEX: dict[int, tuple[Kind, ...]] = {
    0: (4, V, V, _TIMESPEC), 1: (4, V, V), 3: (4, V, V, V, 4), 4: (4, V, V, V, 4, V),  # WAIT, WAKE, (CMP_)REQUEUE
    5: (4, V, V, V, 4, V), 6: (4, V, _, _TIMESPEC), 7: (4, V), 8: (4, V),  # WAKE_OP, LOCK_PI, UNLOCK_PI, TRYLOCK_PI
    9: (4, V, V, _TIMESPEC, _, V), 10: (4, V, V, _, _, V),  # WAIT_BITSET, WAKE_BITSET
    11: (4, V, V, _TIMESPEC, 4, V), 12: (4, V, V, V, 4, V), 13: (4, V, _, _TIMESPEC),  # *_REQUEUE_PI, LOCK_PI2
}
# prctl's option: its five registers (the one a PR_SET_SECCOMP names holds a pointer to the filter: not judged, so
# refused in the span as a value is)
_PRCTL: dict[int, tuple[Kind, ...]] = {
    15: (V, THREAD_NAME), 16: (V, 16),  # PR_SET_NAME: a string to its NUL; PR_GET_NAME: 16 bytes written
    22: (V, V, V), 38: (V, V, V, V, V), 39: (V, V, V, V, V),  # PR_SET_SECCOMP, PR_{SET,GET}_NO_NEW_PRIVS
}
_ARCH_PRCTL: dict[int, tuple[Kind, ...]] = {0x1001: (V, V), 0x1002: (V, V), 0x1003: (V, 8), 0x1004: (V, 8)}
_UNKNOWN: tuple[Kind, ...] = (V,) * 6


def kinds(nr: int, args: tuple[int, ...]) -> tuple[Kind, ...]:
    """The kind of each register system call `nr` takes with these arguments (a call or operation the table does
    not know: all six, values)."""
    if nr == IOCTL:  # a number that encodes a direction and a size names that many bytes; a legacy one, nothing known
        command = args[1] & _U32
        size = (command >> 16) & 0x3FFF
        return (V, V, size) if (command >> 30) & 3 and size else (V, V, V)
    if nr == FCNTL:
        return (V, V, *_FCNTL[args[1] & _U32]) if args[1] & _U32 in _FCNTL else (V, V, V)
    if nr == FUTEX:
        return _FUTEX.get(args[1] & _U32 & ~(128 | 256), _UNKNOWN)
    if nr == PRCTL:
        return _PRCTL.get(args[0] & _U32, (V,) * 5)
    if nr == ARCH_PRCTL:
        return _ARCH_PRCTL.get(args[0] & _U32, (V, V))
    return CALLS.get(nr, _UNKNOWN)


@dataclass(frozen=True)
class Access:
    """What a system call's registers name: `ranges` (start, length) the kernel reads or writes, `texts` (start,
    most) strings it reads to their NUL, `values` the registers it takes as values (or of a call the table does not
    know): none of them may lie in the span."""

    ranges: tuple[tuple[int, int], ...] = ()
    texts: tuple[tuple[int, int], ...] = ()
    values: tuple[int, ...] = ()


def access(nr: int, args: tuple[int, ...]) -> Access:
    """What system call `nr` with argument registers `args` names (the kernel's registers, never the caller's memory).
    A pointer with a length of 0 names nothing: the kernel touches no byte of it (nor does valgrind report one)."""
    ranges, texts, values = [], [], []
    for arg, kind in enumerate(kinds(nr, args)):
        if kind is VALUE:
            values.append(args[arg])
        elif isinstance(kind, Text):
            texts.append((args[arg], kind.most))
        elif kind != UNUSED:
            size = kind if isinstance(kind, int) else args[int(kind[1:])] if isinstance(kind, str) else kind(args)
            if size > 0:
                ranges.append((args[arg], size))
    return Access(tuple(ranges), tuple(texts), tuple(values))
