"""The sandbox's system call filter: no System V IPC, no internet socket and no question to the page cache for
anything a run starts.

A System V shared memory segment, message queue or semaphore set is memory that belongs to no process: it is
charged to no rlimit, a run can make as many as the host allows (shmget, shmat, touch, shmdt, again), and
outside bubblewrap's IPC namespace it outlives the run. No program we run (gcc, valgrind, Python, a driver)
needs one, so every run gets EPERM for shmget, msgget and semget, and for every system call of another ABI
(i386's int 0x80 multiplexes them through ipc(), x32 numbers them apart) than this machine's own. The filter
is installed in the child before exec (it needs no_new_privs, which it sets) and binds everything it starts.
No run needs the network either, and outside bubblewrap's network namespace nothing else keeps a run off it
(Landlock names TCP ports only): socket() for AF_INET and AF_INET6 gets EPERM, so no UDP datagram or raw
packet leaves a run under any isolation. io_uring is refused whole (io_uring_setup, _enter, _register): its
operations (a socket, an open, a read) are made by the kernel on the ring's behalf, past this filter, so a
filter on system calls binds only a run that has no ring. process_vm_readv and process_vm_writev are refused
too: no run needs them, and the kernel's copy of a process's own memory reads a guard page as EFAULT, not as
the fault the grader's heap fence counts (and valgrind does not check their buffers). A run leaves nothing behind
for a later run of the same submission to find (a second opinion must look like the graded run's first process,
oracle/hw3/alone.py): the kernel's keyrings (add_key, request_key, keyctl: a session keyring outlives the run, a
user keyring is shared by every run of the grader's uid) and POSIX message queues (mq_open; RLIMIT_MSGQUEUE is
0 too) are refused as well, and so is every change of a file's metadata: its mode, owner, access and
modification times set by hand, and its extended attributes (chmod, chown, utime and setxattr in all their
forms). Landlock binds none of them, so without bubblewrap a run of a grader that is not root (the run then has
the grader's uid) could otherwise set the mode or times of any file of the grader's, or leave a note in an
attribute of a file a later run is handed (or write an access time, a mark the frozen atimes of
oracle/runtime.py keep out). No run may watch a file either (inotify, fanotify): the grader reads and writes the
pools' file a run holds, and when it does must tell a run nothing (tests/hostile_review8/fork_unwatched_inotify.py).
No run needs them: the linker's chmod of its output is refused and
ignored, and the grader makes the driver it copies executable itself. Where no pid namespace
holds a run (outside bubblewrap), setsid and
setpgid are refused as well: the run ends by killing its process group, which nothing it starts can leave.
Nor may a run ask the kernel's page cache anything or take a page out of it: every process of a submission reads
the same files (the driver, the C library, the standard library: one inode each), so a page one makes resident or
drops is a mark the next finds (tests/test_tamper_cache_quiet.py: alloc_failure's tries counted themselves so).
mincore, cachestat, process_madvise and Linux AIO (io_setup, io_submit: RWF_NOWAIT in an iocb) are refused;
preadv2 and pwritev2 with RWF_NOWAIT answer EAGAIN whatever is cached; the hints that drop or age pages
(posix_fadvise's DONTNEED and NOREUSE, madvise's COLD and PAGEOUT) and readahead answer 0 and do nothing, as a
kernel may. Every other advice, and those calls without the flag, pass. What is left is timing a read, which needs a
page that goes from absent to resident (oracle/SANDBOX.md, "The page cache").
Nor may a run change another process's scheduling or limits (setpriority for another process, a process group or a
user; sched_setaffinity, sched_setscheduler, sched_setparam, sched_setattr, prlimit64, ioprio_set, migrate_pages and
move_pages naming another pid): EPERM. Outside bubblewrap's pid namespace a run of a grader that is not root has the
grader's uid, and the kernel lets a process renice, pin or set the limits of any process of its uid: the grader's
own and other grades' (a grade's CPU pinned to another's, a limit lowered under it); the calls on the caller itself
(pid 0, as glibc's nice, setrlimit and sched_setaffinity make them) pass.
A run that may write nowhere is told so in one way under every isolation (`writes`, oracle/SANDBOX.md "What a run may
write"): every question about writing a filter can read is answered here, not by the isolation's mounts, since
bubblewrap's read-only mounts answer EROFS and flag themselves ST_RDONLY where the Landlock fallback answers EACCES
on the host's read-write mounts, and Landlock does not govern access(2) at all (the host's /tmp, mode 1777, said
"writable" and then refused the open). So access, faccessat and faccessat2 asking W_OK answer EROFS ("nowhere" and
"at_start": a memcheck run, whose valgrind writes its folder at start and never asks), and for "nowhere" (no folder
at all): every call that makes, removes or renames a name (mkdir, mknod, unlink, rmdir, rename, link, symlink in all
their forms, truncate by path) answers EROFS, and statfs and fstatfs (a mount's flags: review 16's
log_if_mount_writable) answer ENOSYS, as a kernel without them would: "no such call" says nothing about any mount.
An open for writing is not answered here (the filter cannot read its path, and the devices must stay writable:
`open(os.devnull, "w")` is an ordinary idiom), so where it fails its errno is still the isolation's
(oracle/SANDBOX.md). A memcheck run's driver installs the "nowhere" answers itself once valgrind's start files are
made (`writes_program`, oracle/native/driver_main.c).

    install()   # in the child, pre-exec
"""

import ctypes
import errno
import platform
import struct

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_X32_BIT = 0x40000000
# (audit arch, socket, (shmget, msgget, semget, process_vm_readv, process_vm_writev, io_uring_setup,
#  io_uring_enter, io_uring_register, add_key, request_key, keyctl, mq_open, and _METADATA's), (setsid, setpgid))
#  by machine
_URING = (425, 426, 427)  # the same numbers on both machines
# a file's metadata: its mode, owner, times and extended attributes (Landlock binds none of them)
_METADATA_NEW = (452, 463, 466)  # fchmodat2, setxattrat, removexattrat: the same numbers on both machines
_METADATA = {"x86_64": (90, 91, 268, 92, 93, 94, 260, 132, 235, 261, 280, 188, 189, 190, 197, 198, 199, *_METADATA_NEW),
             "aarch64": (52, 53, 55, 54, 88, 5, 6, 7, 14, 15, 16, *_METADATA_NEW)}
# watching files: inotify (every form) and fanotify (a run could learn when the grader reads or writes a file it holds)
_WATCH = {"x86_64": (253, 294, 254, 300, 301), "aarch64": (26, 27, 262, 263)}
# the page cache asked whole, refused: mincore, io_setup, io_submit; cachestat and process_madvise (the same numbers
# on both machines)
_CACHE = {"x86_64": (27, 206, 209, 451, 440), "aarch64": (232, 0, 2, 451, 440)}
_READAHEAD = {"x86_64": 187, "aarch64": 213}  # a hint: answered 0, not done
# a run that may write nowhere: the calls that make, remove or rename a name, or cut a file by its path (EROFS):
# rename, mkdir, rmdir, link, unlink, symlink, mknod, truncate, mkdirat, mknodat, unlinkat, renameat, linkat, symlinkat,
# renameat2
_NAMES = {"x86_64": (82, 83, 84, 86, 87, 88, 133, 76, 258, 259, 263, 264, 265, 266, 316),
          "aarch64": (34, 33, 35, 38, 37, 36, 45, 276)}
_W_OK = 2
# asking whether a path may be written (access's mode: W_OK), answered EROFS: (number, argument holding the mode)
_ASK_WRITE = {"x86_64": ((21, 1), (269, 2), (439, 2)), "aarch64": ((48, 2), (439, 2))}
# a run that may write nowhere: the mount's statistics and flags (statfs, fstatfs: ST_RDONLY told bubblewrap's
# read-only mounts from the fallback's writable ones), answered ENOSYS, as by a kernel without them
_UNKNOWN = {"x86_64": (137, 138), "aarch64": (43, 44)}
WRITES = ("anywhere", "at_start", "nowhere")  # what a run may write: its paths; a folder at start only; nothing
_NATIVE = {"x86_64": (0xC000003E, 41, (29, 68, 64, 310, 311, *_URING, 248, 249, 250, 240, *_METADATA["x86_64"],
                                       *_WATCH["x86_64"], *_CACHE["x86_64"]), (112, 109)),
           "aarch64": (0xC00000B7, 198, (194, 186, 190, 270, 271, *_URING, 217, 218, 219, 180, *_METADATA["aarch64"],
                                        *_WATCH["aarch64"], *_CACHE["aarch64"]), (157, 154))}
_INTERNET = (2, 10)  # AF_INET, AF_INET6: socket()'s first argument
_ANY = 0xFFFFFFFF  # every bit of an argument's low half: a pid or id other than 0 (the caller)
# another process's scheduling or limits, refused (EPERM): (number, the arguments that must be 0): setpriority (which:
# PRIO_PROCESS; who), sched_setparam, sched_setscheduler, sched_setaffinity, sched_setattr, prlimit64, migrate_pages,
# move_pages (pid); and ioprio_set, whose which must be IOPRIO_WHO_PROCESS (1) and who 0
_OTHERS = {"x86_64": ((141, (0, 1)), (142, (0,)), (144, (0,)), (203, (0,)), (314, (0,)), (302, (0,)), (256, (0,)),
                      (279, (0,))),
           "aarch64": ((140, (0, 1)), (118, (0,)), (119, (0,)), (122, (0,)), (274, (0,)), (261, (0,)), (238, (0,)),
                       (239, (0,)))}
_IOPRIO_SET = {"x86_64": 251, "aarch64": 30}
_ARG0 = 16  # offset of seccomp_data.args[0] (its low 32 bits, little-endian); args[i] at _ARG0 + 8 * i
_RWF_NOWAIT = 0x8
# calls answered by one argument: (number, argument, values, flag bits, answer) by machine. posix_fadvise's DONTNEED
# (4) and NOREUSE (5) and madvise's MADV_COLD (20) and MADV_PAGEOUT (21) are hints the kernel may ignore: answered 0,
# not done. preadv2 and pwritev2 with RWF_NOWAIT: EAGAIN, whether the page is resident or not (as a file system that
# cannot tell without blocking answers), so the answer tells nothing.
_BY_ARGUMENT = {"x86_64": ((221, 3, (4, 5), 0, "IGNORE"), (28, 2, (20, 21), 0, "IGNORE"),
                           (327, 5, (), _RWF_NOWAIT, "AGAIN"), (328, 5, (), _RWF_NOWAIT, "AGAIN")),
                "aarch64": ((223, 3, (4, 5), 0, "IGNORE"), (233, 2, (20, 21), 0, "IGNORE"),
                            (286, 5, (), _RWF_NOWAIT, "AGAIN"), (287, 5, (), _RWF_NOWAIT, "AGAIN"))}
_LIBC = ctypes.CDLL(None, use_errno=True)


class _Program(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _filter(*, keep_group: bool, writes: str = "anywhere", base: bool = True) -> bytes | None:
    """The BPF program, or None on a machine whose numbers we do not know (the filter is then left out);
    `keep_group`: setsid and setpgid are refused too, so nothing a run starts leaves its process group; `writes`
    (one of WRITES): "at_start" and "nowhere" answer EROFS to a question whether a path may be written, "nowhere"
    also to every call that makes, removes or renames a name, and ENOSYS to statfs and fstatfs; `base` False: those
    answers alone (bubblewrap's, which installs them after its own set-up: `writes_program`)."""
    machine = platform.machine()
    native = _NATIVE.get(machine)
    if native is None:
        return None
    arch, socket, forbidden, sessions = native
    forbidden = () if not base else (*forbidden, *sessions) if keep_group else forbidden
    answers = {"ALLOW": _RET_ALLOW, "DENY": _RET_ERRNO | errno.EPERM, "IGNORE": _RET_ERRNO | 0,
               "AGAIN": _RET_ERRNO | errno.EAGAIN, "ROFS": _RET_ERRNO | errno.EROFS, "NOSYS": _RET_ERRNO | errno.ENOSYS}
    # every jump to an answer goes forward to the last instructions, one per answer (ALLOW first: a call no check
    # named falls through to it); a check of a call's
    # argument is a block that ends in ALLOW (the accumulator then holds the argument, not the call's number)
    code: list[tuple[int, int | str, int, int]] = [
        (_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (_JEQ_K, 1, 0, arch),
        (_RET_K, 0, 0, answers["DENY"]),  # another ABI
        (_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        (_JGE_K, "DENY", 0, _X32_BIT)]  # x32 numbers
    code += [(_JEQ_K, "DENY", 0, number) for number in forbidden]
    code += [(_JEQ_K, "IGNORE", 0, _READAHEAD[machine])] if base else []
    nowhere = writes == "nowhere"
    code += [(_JEQ_K, "ROFS", 0, number) for number in (_NAMES[machine] if nowhere else ())]
    code += [(_JEQ_K, "NOSYS", 0, number) for number in (_UNKNOWN[machine] if nowhere else ())]
    asked = [(number, argument, (), _W_OK, "ROFS") for number, argument in _ASK_WRITE[machine]] \
        if writes != "anywhere" else []
    by_argument = (*_BY_ARGUMENT[machine], (socket, 0, _INTERNET, 0, "DENY")) if base else ()
    # checks of arguments: (number, [(argument, values, bits)], answer), the answer when any check matches
    checks = [(number, [(argument, values, bits)], answer) for number, argument, values, bits, answer in
              (*by_argument, *asked)]
    checks += [(number, [(argument, (), _ANY) for argument in zeros], "DENY") for number, zeros in _OTHERS[machine]] \
        if base else []
    checks += [(_IOPRIO_SET[machine], [(0, (0,), _ANY ^ 1), (1, (), _ANY)], "DENY")] if base else []  # which 1, who 0
    for number, tests, answer in checks:
        block: list[tuple[int, int | str, int, int]] = []
        for argument, values, bits in tests:
            block += [(_LD_W_ABS, 0, 0, _ARG0 + 8 * argument)]
            block += [(_JEQ_K, answer, 0, value) for value in values]
            block += [(_JSET_K, answer, 0, bits)] if bits else []
        block += [(_RET_K, 0, 0, _RET_ALLOW)]
        code += [(_JEQ_K, 0, len(block), number), *block]  # not this call: past its block
    at_answer = {name: len(code) + i for i, name in enumerate(answers)}
    code += [(_RET_K, 0, 0, answer) for answer in answers.values()]

    def resolved(at: int, insn: tuple[int, int | str, int, int]) -> tuple[int, int, int, int]:
        op, true, false, k = insn
        true = at_answer[true] - at - 1 if isinstance(true, str) else true
        assert 0 <= true < 256
        return op, true, false, k

    return b"".join(struct.pack("HBBI", *resolved(at, insn)) for at, insn in enumerate(code))


def writes_program(writes: str) -> bytes | None:
    """The answers to a run that may not write (`writes`, one of WRITES) alone, as a BPF program: under bubblewrap,
    handed to bwrap (`--add-seccomp-fd`), which installs it after it has made its mounts and before the command; for a
    memcheck run, "nowhere"'s, handed to the driver, which installs it once valgrind has started (driver_process.py);
    None when there are none (or this machine's numbers are unknown)."""
    return None if writes == "anywhere" else _filter(keep_group=False, writes=writes, base=False)


# built in the grader: the child only installs one (bubblewrap's runs: the base one, their `writes_program` by bwrap)
_PROGRAMS = {(keep, writes): _filter(keep_group=keep, writes=writes) for keep in (False, True) for writes in WRITES}
_BUFFERS = {key: ctypes.create_string_buffer(code or b"") for key, code in _PROGRAMS.items()}


def install(*, keep_group: bool = False, writes: str = "anywhere") -> None:  # pragma: no cover  (runs in a child
    # before exec, where coverage does not follow; tests/test_sandbox.py and the review's UDP and spawn attacks check
    # its effect)
    """Installs the filter in the calling process (and all it will start); for a child before exec.
    `keep_group` where no pid namespace holds the run: a process that could leave the run's process group
    (a daemon in a session of its own) would outlive it, since the run ends by killing that group. `writes`: one of
    WRITES, what the run may write (the answers above)."""
    code = _PROGRAMS[(keep_group, writes)]
    if code is None:
        return
    if _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    program = _Program(len(code) // 8, ctypes.cast(_BUFFERS[(keep_group, writes)], ctypes.c_void_p))
    if _LIBC.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(program), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
