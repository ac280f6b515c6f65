"""What memory a system call makes the kernel read or write for the caller, from its registers alone: the ranges
the grader's ledger judges when a call names the fence's span (ledger.py `Ledger.kernel_access`).

The CPU's read past a block faults, and the driver asks the ledger for the page; the kernel's own copy of the same
page (write(2) of a pointer past a block into a pipe) raises no signal, it answers EFAULT to the caller alone
(review 15's kernel_reads_past). So driver_main.c's filter hands the grader every call one of whose argument
registers lies in the span, and this table says which bytes the kernel touches: each pointer parameter of a call
that takes one, with its length (another argument's value, or the fixed size of the struct the kernel copies; a
path's, or a struct's of unknown size: its first byte). Nothing else names memory: a descriptor, a count, flags, and
the registers a call does not take (the filter sees all six; the program left there what it pleased, a heap pointer
in rt_sigreturn's rdi). What is not named (a pointer inside a struct, ioctl's legacy numbers, a call missing from
the table) is judged by nobody: oracle/SANDBOX.md, "The kernel's access to the heap".

The calls whose buffers the kernel finds through pointers in memory (readv, writev, sendmsg, recvmsg and their
kin: an iovec array, a msghdr) are refused natively before any submission code runs (driver_main.c
refuse_indirect_io), so no range of theirs is missed here.
"""

# x86_64 system call number: its pointer arguments, each (argument, length): an int is a fixed length in bytes (the
# struct the kernel copies; 1 for a pointer whose length the kernel finds by reading, a path, or from memory: its
# first byte), "aN" the argument that holds the length. Only a call's real parameters are named: a register the call
# does not take holds whatever the program left there (rt_sigreturn's rdi may be a heap pointer), as does a variadic
# argument a command does not use (fcntl's, ioctl's: below). A call not named here takes no pointer the kernel follows
# with the caller's memory (close, lseek, rt_sigreturn ...), or is refused (driver_main.c, oracle/seccomp.py).
_Length = int | str
_STAT, _TIMESPEC, _TIMEVAL, _RLIMIT, _RUSAGE, _SIGSET, _SIGINFO, _ITIMERSPEC = 144, 16, 16, 16, 144, 8, 128, 32
CALLS: dict[int, tuple[tuple[int, _Length], ...]] = {
    0: ((1, "a2"),), 1: ((1, "a2"),), 17: ((1, "a2"),), 18: ((1, "a2"),),  # read, write, pread64, pwrite64
    318: ((0, "a1"),), 79: ((0, "a1"),),  # getrandom, getcwd
    44: ((1, "a2"), (4, "a5")), 45: ((1, "a2"), (4, 1), (5, 4)),  # sendto, recvfrom
    78: ((1, "a2"),), 217: ((1, "a2"),),  # getdents, getdents64
    89: ((0, 1), (1, "a2")), 267: ((1, 1), (2, "a3")),  # readlink, readlinkat
    4: ((0, 1), (1, _STAT)), 6: ((0, 1), (1, _STAT)), 5: ((1, _STAT),), 262: ((1, 1), (2, _STAT)),  # stat ...
    332: ((1, 1), (4, 256)),  # statx
    2: ((0, 1),), 257: ((1, 1),), 437: ((1, 1), (2, "a3")), 85: ((0, 1),),  # open, openat, openat2, creat
    21: ((0, 1),), 269: ((1, 1),), 439: ((1, 1),),  # access, faccessat, faccessat2
    87: ((0, 1),), 263: ((1, 1),), 83: ((0, 1),), 258: ((1, 1),), 84: ((0, 1),),  # unlink(at), mkdir(at), rmdir
    82: ((0, 1), (1, 1)), 264: ((1, 1), (3, 1)), 316: ((1, 1), (3, 1)),  # rename, renameat, renameat2
    86: ((0, 1), (1, 1)), 265: ((1, 1), (3, 1)), 88: ((0, 1), (1, 1)), 266: ((0, 1), (2, 1)),  # link, symlink
    80: ((0, 1),), 161: ((0, 1),), 76: ((0, 1),), 133: ((0, 1),), 259: ((1, 1),),  # chdir, chroot, truncate, mknod
    137: ((0, 1), (1, 120)), 138: ((1, 120),),  # statfs, fstatfs
    63: ((0, 390),), 99: ((0, 112),), 100: ((0, 32),), 201: ((0, 8),), 98: ((1, _RUSAGE),),  # uname ... getrusage
    96: ((0, _TIMEVAL), (1, 8)), 228: ((1, _TIMESPEC),), 229: ((1, _TIMESPEC),),  # gettimeofday, clock_get*
    35: ((0, _TIMESPEC), (1, _TIMESPEC)), 230: ((2, _TIMESPEC), (3, _TIMESPEC)),  # nanosleep, clock_nanosleep
    23: ((1, 1), (2, 1), (3, 1), (4, _TIMEVAL)), 270: ((1, 1), (2, 1), (3, 1), (4, _TIMESPEC), (5, 16)),  # select
    7: ((0, 1),), 271: ((0, 1), (2, _TIMESPEC), (3, _SIGSET)),  # poll, ppoll
    232: ((1, 1),), 281: ((1, 1), (4, _SIGSET)), 441: ((1, 1), (3, _TIMESPEC), (4, _SIGSET)), 233: ((3, 12),),
    61: ((1, 4), (3, _RUSAGE)), 247: ((2, _SIGINFO), (4, _RUSAGE)),  # wait4, waitid
    13: ((1, 32), (2, 32)), 14: ((1, _SIGSET), (2, _SIGSET)), 127: ((0, _SIGSET),),  # rt_sigaction, _procmask ...
    128: ((0, _SIGSET), (1, _SIGINFO), (2, _TIMESPEC)), 130: ((0, _SIGSET),), 131: ((0, 24), (1, 24)),
    129: ((2, _SIGINFO),), 424: ((2, _SIGINFO),),  # rt_sigqueueinfo, pidfd_send_signal
    36: ((1, 32),), 38: ((1, 32), (2, 32)),  # getitimer, setitimer
    286: ((2, _ITIMERSPEC), (3, _ITIMERSPEC)), 287: ((1, _ITIMERSPEC),),  # timerfd_settime, _gettime
    222: ((1, 64), (2, 4)), 223: ((2, _ITIMERSPEC), (3, _ITIMERSPEC)), 224: ((1, _ITIMERSPEC),),  # timer_*
    282: ((1, _SIGSET),), 289: ((1, _SIGSET),),  # signalfd, signalfd4
    22: ((0, 8),), 293: ((0, 8),), 53: ((3, 8),),  # pipe, pipe2, socketpair
    97: ((1, _RLIMIT),), 160: ((1, _RLIMIT),), 302: ((2, _RLIMIT), (3, _RLIMIT)),  # getrlimit, setrlimit, prlimit64
    49: ((1, "a2"),), 42: ((1, "a2"),), 43: ((1, 1), (2, 4)), 288: ((1, 1), (2, 4)),  # bind, connect, accept(4)
    51: ((1, 1), (2, 4)), 52: ((1, 1), (2, 4)),  # getsockname, getpeername
    54: ((3, "a4"),), 55: ((3, 1), (4, 4)),  # setsockopt, getsockopt
    202: ((0, 4),),  # futex: its word (its other arguments depend on the operation)
    203: ((2, "a1"),), 204: ((2, "a1"),), 148: ((1, _TIMESPEC),),  # sched_{set,get}affinity, rr_get_interval
    115: ((1, 1),), 118: ((0, 4), (1, 4), (2, 4)), 120: ((0, 4), (1, 4), (2, 4)),  # getgroups, getres[ug]id
    103: ((1, "a2"),), 309: ((0, 4), (1, 4)), 334: ((0, "a1"),),  # syslog, getcpu, rseq
    159: ((0, 208),), 305: ((1, 208),),  # adjtimex, clock_adjtime
    40: ((2, 8),), 275: ((1, 8), (3, 8)), 326: ((1, 8), (3, 8)),  # sendfile, splice, copy_file_range: offsets
    191: ((0, 1), (1, 1), (2, "a3")), 192: ((0, 1), (1, 1), (2, "a3")), 193: ((1, 1), (2, "a3")),  # getxattr ...
    194: ((0, 1), (1, "a2")), 195: ((0, 1), (1, "a2")), 196: ((1, "a2"),),  # listxattr ...
    165: ((0, 1), (1, 1), (2, 1), (4, 1)), 166: ((0, 1),),  # mount, umount2
    319: ((0, 1),), 303: ((1, 1), (2, 1)), 304: ((1, 1),),  # memfd_create, name_to_handle_at, open_by_handle_at
    317: ((2, 1),), 321: ((1, "a2"),), 298: ((0, 1),), 449: ((0, 1),),  # seccomp, bpf, perf_event_open, futex_waitv
    444: ((0, "a1"),), 445: ((2, 1),),  # landlock_create_ruleset, landlock_add_rule
}
_FCNTL_LOCKS = frozenset((5, 6, 7, 36, 37, 38))  # F_GETLK, F_SETLK, F_SETLKW and the OFD ones: a struct flock
IOCTL, FCNTL, PRCTL, ARCH_PRCTL = 16, 72, 157, 158
_PR_NAME = frozenset((15, 16))  # PR_SET_NAME, PR_GET_NAME: the thread's name, 16 bytes
_ARCH_GET = frozenset((0x1003, 0x1004))  # ARCH_GET_FS, ARCH_GET_GS: 8 bytes written


def _variadic(nr: int, args: tuple[int, ...]) -> list[tuple[int, int]]:
    """The pointer of a call whose command says whether it takes one: ioctl's third argument when its number
    encodes a direction and a size (_IOR, _IOW, _IOWR; a legacy number, TCGETS's, says nothing: not judged), fcntl's
    for a lock, prctl's for a thread's name, arch_prctl's for a base read back."""
    command = args[1] & 0xFFFFFFFF
    if nr == IOCTL and (command >> 30) & 3 and (command >> 16) & 0x3FFF:
        return [(args[2], (command >> 16) & 0x3FFF)]
    if nr == FCNTL and command in _FCNTL_LOCKS:
        return [(args[2], 32)]
    if nr == PRCTL and (args[0] & 0xFFFFFFFF) in _PR_NAME:
        return [(args[1], 16)]
    if nr == ARCH_PRCTL and (args[0] & 0xFFFFFFFF) in _ARCH_GET:
        return [(args[1], 8)]
    return []


def ranges(nr: int, args: tuple[int, ...]) -> list[tuple[int, int]]:
    """The ranges (start, length) the kernel may read or write for system call `nr` with argument registers `args`
    (the kernel's, never the caller's memory): each pointer of a known call with its length; none for any other
    call. A pointer with a length of 0 names nothing: the kernel touches no byte of it (nor does valgrind report
    one)."""
    found = _variadic(nr, args)
    for pointer, length in CALLS.get(nr, ()):
        size = args[int(length[1:])] if isinstance(length, str) else length
        if size > 0:
            found.append((args[pointer], size))
    return found
