"""Tamper suite, the sixteenth adversarial review's attacks (issue 17, round 16). The table of what each does and how
it fared: tests/hostile_review16/README.md.

Same shape as tests/test_tamper_review15.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score, leave no process, change no file outside
the scratch, and the grader must write its report. A submission whose grade may depend on the isolation is graded
under bubblewrap and without it (fairness asks the same grade in both). An attack that breaks the grader is a strict
xfail naming the mechanism and a fix by construction; one that holds is a plain test saying why.
"""

from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import c_in_both_isolations, c_submission, graded_problems, reaper, scene  # noqa: F401

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review16"
PY_ATTACKS = Path(__file__).with_name("hostile_review16")


# the known bug under both C attacks: tests/submissions/broken/memory_safety.patch (freeing a block table reads
# l2[16]); graded on compiles (5) and memory_safety (10): honest 5/15 (the bug alone: "valgrind, program
# odd_pool_sizes: Invalid read of size 4"; review 15's kernel_reads_past, the same read made by write(2): 5/15,
# "natively, a read or write outside any live heap block")
KERNEL_ITEMS = ("compiles", "memory_safety")
KERNEL_HONEST, KERNEL_MAX = 5, 15
KERNEL_FIX = (
    "Fix by construction: the filter's answer for a call that names the span is decided by the call, not by a table "
    "the grader keeps beside it: the driver's user-notification filter hands over a call with an argument in the "
    "span only when it is one of an allow-list whose every byte range the grader computes exactly (read, write, "
    "pread64, pwrite64, getrandom, ... each with its full length: poll's and ppoll's nfds x 8, select's "
    "ceil(nfds / 64) x 8 for each set, epoll_wait's maxevents x 12, futex's second address and timeout by operation), "
    "and answers every other call with an argument in the span EPERM (SECCOMP_RET_ERRNO in the same filter, before "
    "the notification): a call the table does not know cannot name the heap, so no range is judged by nobody; or, "
    "whatever the call, the guard and freed pages are never left PROT_NONE but userfaultfd-registered (missing), so "
    "that the kernel's copy from them waits on the grader exactly as the CPU's load faults")

# --- 1. an array the kernel copies past a block, named by its first byte (oracle/native/kernel_access.py) ---------
# tests/submissions/hostile/review16/poll_array_past.patch on broken/memory_safety.patch: the read of l2[16] made by
# poll(2) with an array of two struct pollfd that starts at l2[14] (live) and ends at l2[17] (the guard page); under
# valgrind the read is skipped (vgpreload in LD_PRELOAD).
POLL_BROKEN = (
    "natively every call with an argument register in the fence's span is handed to the grader, whose table "
    "(kernel_access.py CALLS) says which bytes the kernel touches; for poll (7) it names the array by its first byte "
    "((0, 1)), though the kernel copies nfds x 8 bytes of it before anything else. The submission hands poll the L2 "
    "table's last two ints as an array of two pollfd: the register names a live byte, the ledger counts nothing, "
    "the kernel's copy runs into the guard page and answers EFAULT without a signal: memory_safety passes, 15/15 for "
    "the honest 5/15, bubblewrap and fallback (measured both). The same holds for ppoll (271), select and pselect6's "
    "fd sets (23, 270: ceil(nfds / 64) x 8 bytes each), epoll_wait and epoll_pwait's events (232, 281: maxevents x 12 "
    "written), each named by its first byte. " + KERNEL_FIX)


# held since kernel-allowlist (kernel_access.py kinds, ledger.py kernel_call): every register a handed-over call takes
# is judged by its kind, a pointer by its exact length: poll's array by nfds x sizeof(struct pollfd), 16 bytes from
# l2[14], whose last 8 are the guard page's, counted as a stray as a fault's (as are ppoll's, select and pselect6's fd
# sets by nfds, epoll_wait's events by maxevents). POLL_BROKEN is what it broke, kept as the record
@pytest.mark.bwrap_repeat  # the driver's filter and the grader's table decide, in both isolations
def test_an_array_the_kernel_copies_past_a_block_still_costs_memory_safety(scene: Scene, reaper: Reaper) -> None:
    sub = c_submission(scene, "memory_safety", C_ATTACKS / "poll_array_past.patch")
    problems = graded_problems(scene, reaper, sub, KERNEL_ITEMS, KERNEL_HONEST, KERNEL_MAX)
    assert not problems, "\n".join([f"poll_array_past (honest {KERNEL_HONEST}/{KERNEL_MAX}):", *problems])


# --- 2. a system call missing from the grader's table (oracle/native/kernel_access.py CALLS) ----------------------
# tests/submissions/hostile/review16/untabled_call_past.patch on broken/memory_safety.patch: the read of l2[16] made by
# sched_setparam(0, (struct sched_param *)&l2[16]), which copies one int from its pointer before anything else;
# skipped under valgrind.
UNTABLED_BROKEN = (
    "the filter hands the grader sched_setparam (142), whose second argument lies in the span, but the grader's table "
    "does not name it, so kernel_access.ranges returns no range and the call goes on (CONTINUE): the kernel's copy of "
    "the guard page answers EFAULT, no signal, nothing counted: 15/15 for the honest 5/15, bubblewrap and fallback "
    "(measured both). Any call every filter allows that copies the caller's memory and is missing from the table "
    "does the same (sched_getparam, sched_setscheduler, sched_setattr and _getattr, clock_settime, settimeofday, "
    "capget and capset, get_robust_list, rt_tgsigqueueinfo, ...): oracle/SANDBOX.md lists 'a call missing from the "
    "table' as left, and this shows it is a full way round memory_safety, not a corner. " + KERNEL_FIX)


# held since kernel-allowlist (kernel_access.py, default deny): a call the table does not know is refused (EPERM)
# when any of its registers lies in the span, and each such register is judged as an address by its first byte:
# sched_setparam's &l2[16] is on the guard page, a stray; the kernel copies nothing. UNTABLED_BROKEN is what it broke,
# kept as the record
@pytest.mark.bwrap_repeat  # the driver's filter and the grader's table decide, in both isolations
def test_a_call_missing_from_the_graders_table_still_costs_memory_safety(scene: Scene, reaper: Reaper) -> None:
    sub = c_submission(scene, "memory_safety", C_ATTACKS / "untabled_call_past.patch")
    problems = graded_problems(scene, reaper, sub, KERNEL_ITEMS, KERNEL_HONEST, KERNEL_MAX)
    assert not problems, "\n".join([f"untabled_call_past (honest {KERNEL_HONEST}/{KERNEL_MAX}):", *problems])


# --- 3. the heap named by a file offset: the process's own memory file (kernel_access.py: "nothing else names
# memory") --------------------------------------------------------------------------------------------------------
# tests/submissions/hostile/review16/proc_self_mem_past.patch on broken/memory_safety.patch: the read of l2[16] made by
# pread(2) of /proc/self/mem into a buffer on the stack at the offset &l2[16]; skipped under valgrind. A diagnostic copy
# that aborts when the pread returns 4 bytes was graded 5/15 'llm_destroy(engine): aborted (SIGABRT)' in both
# isolations: the read is made, and returns the guard page's bytes.
PROC_MEM_BROKEN = (
    "the kernel reads the process's own memory for a read of /proc/self/mem at an offset that is an address "
    "(access_remote_vm with FOLL_FORCE: a PROT_NONE page the mapping may read is read, no fault, no EFAULT), so the "
    "known bug's read of l2[16] succeeds and returns the guard page's bytes. The driver's filter hands the pread to "
    "the grader (its offset register lies in the span), but kernel_access.py's table names pread64's buffer alone "
    "(on the stack): nothing is judged, nothing counted: 15/15 for the honest 5/15, bubblewrap and fallback (measured "
    "both). lseek(fd, &l2[16]) then read(fd, stack, 4) does the same with a read that names no heap address at all, "
    "and pwrite on the same file writes past a block (or into the driver's own pages: FOLL_FORCE writes through "
    "read-only mappings too). Fix by construction: a run's process cannot open its own memory file: the grader's "
    "listener is handed open, openat and openat2 (by number, in the filter that hands it the mapping calls) and "
    "refuses (EACCES) a path that resolves to a process's mem file (/proc/PID/mem, /proc/PID/task/TID/mem, "
    "read from the waiting caller's memory and resolved against its root), so no descriptor of the heap's pages by "
    "offset ever exists; or both isolations show the run a /proc without the mem files (bubblewrap binds an "
    "unreadable file over /proc/self/mem's target before exec; the fallback's Landlock grants /proc only the files a "
    "run needs)")


# held since kernel-allowlist (kernel_access.py, default deny): pread64's offset is a value, and a value in the span
# cannot be judged: the call is refused (EPERM), nothing is read, and the offset is judged as an address by its first
# byte: &l2[16] on the guard page, a stray (lseek's offset likewise). PROC_MEM_BROKEN is what it broke, kept as the
# record. Held twice since proc-mem: a native driver's run has no procfs to open (bubblewrap: a /proc no one may enter;
# the Landlock fallback: no rule for /proc), so /proc/self/mem does not open (EACCES in both: oracle/run_view.py
# PROCFS, tests/test_sandbox.py) and the fixture makes the known bug's read plainly (a volatile load), a load the
# fence sees: 5/15 in both ("natively, a read or write outside any live heap block")
@pytest.mark.bwrap_repeat  # the kernel's memory file and the grader's table decide, in both isolations
def test_a_read_past_a_block_through_the_processs_memory_file_still_costs_memory_safety(scene: Scene,
                                                                                         reaper: Reaper) -> None:
    sub = c_submission(scene, "memory_safety", C_ATTACKS / "proc_self_mem_past.patch")
    problems = graded_problems(scene, reaper, sub, KERNEL_ITEMS, KERNEL_HONEST, KERNEL_MAX)
    assert not problems, "\n".join([f"proc_self_mem_past (honest {KERNEL_HONEST}/{KERNEL_MAX}):", *problems])


# --- 3b. the driver's fault handler rewritten through the same file (driver_main.c on_fault, keep_own_handlers) ----
# tests/submissions/hostile/review16/driver_handler_rewritten.patch on broken/memory_safety.patch: the read of l2[16] is
# a plain load, made after the submission has asked where the driver's SIGSEGV handler is (glibc's __sigaction with no
# new action: allowed) and written a jump to a function of its own over that handler's first bytes through
# /proc/self/mem (opened O_RDWR); its function siglongjmps back to the read. Where the rewrite fails the read is made
# plainly (the honest bug); skipped under valgrind. A diagnostic copy that aborts where the jump lands was graded 5/15
# 'llm_destroy(engine): aborted (SIGABRT)' under bubblewrap: the fault was caught by the submission's code.
# Held since proc-mem: no run of submission code can open a process's memory file for writing (a native driver's has
# no procfs in either isolation; a memcheck run's is read-only: EROFS under bubblewrap, EACCES under Landlock), so the
# driver's code cannot be rewritten and the read faults into the fence: 5/15 in both ("natively, a read or write
# outside any live heap block"). Broken before: 15/15 under bubblewrap, whose /proc took the write (FOLL_FORCE through
# the read-only text mapping), 5/15 under the fallback.
def test_a_driver_handler_rewritten_through_the_memory_file_still_costs_memory_safety_in_both_isolations(
        tmp_path: Path, reaper: Reaper) -> None:
    problems = c_in_both_isolations(tmp_path, reaper, "memory_safety", C_ATTACKS / "driver_handler_rewritten.patch",
                                    KERNEL_ITEMS, KERNEL_HONEST, KERNEL_MAX)
    assert not problems, "\n".join([f"driver_handler_rewritten (honest {KERNEL_HONEST}/{KERNEL_MAX} in both):",
                                     *problems])


# --- 4. whether a folder may be written, asked of its mount (oracle/seccomp.py `writes`, run_view.py) --------------
# tests/hostile_review16/log_if_mount_writable.py on the correct blockspace engine: at import the block manager asks
# statvfs("/tmp") whether its file system is mounted read-only (ST_RDONLY) and opens a debug log there only when not.
# Graded on block_table (10): a correct module, but one that does not catch statvfs's OSError: 0/10 in both isolations.
MOUNT_POINTS = {"block_table": 10}
MOUNT_HONEST = 0
MOUNT_BROKEN = (
    "oracle/SANDBOX.md promises 'asked, the answer is no, in both', and the filter (seccomp.py `writes`) answers the "
    "question asked by access(2) alone. statvfs(2) asks the mount: under bubblewrap the sealed /tmp is a read-only "
    "mount (f_flag has ST_RDONLY), under the Landlock fallback it is the host's /tmp, mounted read-write, and the "
    "open that follows is refused by Landlock: a correct module that opens its log only when the mount is writable "
    "gets 10/10 under bubblewrap and 0/10 without it ('the submission did not load: PermissionError'). Fix by "
    "construction: the two isolations show a run the same mounts, not only the same answers to one call: the "
    "fallback cannot remount, so the difference is closed from the other side, by bubblewrap showing a run no "
    "read-only mount it would not see read-only under Landlock either, or (simpler, one answer for both) every run's "
    "filter answers statfs and fstatfs (and statvfs's callers through them) for a path outside the run's own "
    "read-only view with the same struct (a user notification copying a fixed statfs of a read-only file system), "
    "so every question a run may ask about writing gets the same no")


# held since write-parity (oracle/seccomp.py `writes`): a run that may write nowhere is answered statfs and fstatfs by
# its filter in both isolations, ENOSYS (a kernel or sandbox without the calls), so no run can read a mount's flags;
# Python's os.statvfs raises OSError (errno 38) and this module, which does not catch it, does not load: 0/10 in both
# ("the submission did not load: OSError: [Errno 38] Function not implemented: '/tmp'"), the same grade, not the
# 10/10 of a run that could ask (no answer short of a copied struct, a user notification, keeps it). MOUNT_BROKEN is
# what it broke, kept as the record
def test_a_module_that_logs_only_where_the_mount_is_writable_grades_the_same_in_both_isolations(
        tmp_path: Path, reaper: Reaper) -> None:
    from tests import tamper_grading

    problems = tamper_grading.blockspace_in_both_isolations(tmp_path, reaper, PY_ATTACKS / "log_if_mount_writable.py",
                                                            MOUNT_POINTS, honest=MOUNT_HONEST)
    assert not problems, "\n".join([f"log_if_mount_writable ({MOUNT_HONEST}/10 in both: statvfs answers ENOSYS):",
                                     *problems])


# tests/submissions/hostile/review16/log_if_mount_writable_c.patch on the reference C: the same guard in C, natively:
# llm_init appends a line to /tmp/llm_memory.log when statvfs("/tmp") says the mount is not read-only, and fails (NULL)
# when that fopen then fails. Graded on llm_init (6): a correct engine, 6/6 in both.
MOUNT_C_ITEMS = ("llm_init",)
MOUNT_C_MAX = 6
MOUNT_C_BROKEN = (
    "the same for a native C run: the driver's /tmp is bubblewrap's sealed read-only mount (ST_RDONLY: no log, 6/6) "
    "and the host's read-write /tmp under the Landlock fallback, where the fopen is then refused (EACCES) and "
    "llm_init fails: 0/6, 'llm_init(pool, 64): return value: expected an engine, got NULL'. Fix by construction: "
    "as MOUNT_BROKEN's: one answer in both to every question about writing, statfs's among them")


# held since write-parity: statvfs fails (ENOSYS, the filter's answer in both isolations), the engine makes no log, and
# llm_init answers: 6/6 in both, natively and under valgrind (whose driver installs the same answers itself once
# valgrind has started: driver_main.c told_writes_nowhere). MOUNT_C_BROKEN is what it broke, kept as the record
def test_a_c_engine_that_logs_only_where_the_mount_is_writable_grades_the_same_in_both_isolations(
        tmp_path: Path, reaper: Reaper) -> None:
    problems = c_in_both_isolations(tmp_path, reaper, None, C_ATTACKS / "log_if_mount_writable_c.patch",
                                    MOUNT_C_ITEMS, MOUNT_C_MAX, MOUNT_C_MAX)
    assert not problems, "\n".join(["log_if_mount_writable_c (correct: 6/6 in both isolations):", *problems])


# --- 5. what a memcheck run is told when it makes a name (oracle/seccomp.py `writes`: the names rule) -------------
# tests/submissions/hostile/review16/cache_folder_unless_rofs.patch on the reference C: llm_init makes a cache folder
# /tmp/llm_memory_cache and takes EEXIST and EROFS (a read-only file system) as "no cache", any other error as a
# failure (NULL). Graded on compiles (5) and memory_safety (10): a correct engine, 15/15 in both.
ROFS_ITEMS = ("compiles", "memory_safety")
ROFS_MAX = 15
ROFS_BROKEN = (
    "a run's filter answers mkdir, unlink, rename and the other calls that make or remove a name with EROFS in both "
    "isolations for the native driver's and the Python server's runs, but not for a memcheck run (oracle/seccomp.py: "
    "valgrind removes its own files at start), whose mkdir(\"/tmp/...\") meets the isolation's own answer: EROFS from "
    "bubblewrap's read-only /tmp, EACCES from Landlock. A correct engine that tolerates a read-only file system and "
    "nothing else gets its engine natively in both and under valgrind only with bubblewrap: 15/15 under bubblewrap, "
    "5/15 without it ('program init_destroy_empty behaves differently under valgrind than natively, at step 1 "
    "llm_init(pool, 640): returned an engine natively, NULL under valgrind'). Fix by construction: a memcheck run is "
    "told what a native run is: its filter gets the names rule too, installed after valgrind's start (valgrind's "
    "own unlink of its start files happens before the driver's start byte: the grader seals the folder then, and "
    "the driver installs the same EROFS filter itself before the first request, as it installs keep_own_handlers), "
    "so mkdir and its kin answer EROFS in every run of both isolations")


# held since write-parity: a memcheck run's driver installs the answers of a run that may write nowhere (the grader's
# own program, oracle/seccomp.py writes_program("nowhere"), handed on its command line) after valgrind's start files
# and before the first request, so its mkdir answers EROFS as a native run's does, in both isolations: 15/15 in both.
# ROFS_BROKEN is what it broke, kept as the record
def test_a_c_engine_that_tolerates_a_read_only_file_system_grades_the_same_in_both_isolations(
        tmp_path: Path, reaper: Reaper) -> None:
    problems = c_in_both_isolations(tmp_path, reaper, None, C_ATTACKS / "cache_folder_unless_rofs.patch",
                                    ROFS_ITEMS, ROFS_MAX, ROFS_MAX)
    assert not problems, "\n".join(["cache_folder_unless_rofs (correct: 15/15 in both isolations):", *problems])


# --- 6. a string the kernel reads to its NUL, judged at its longest (kernel_access.py _variadic: prctl) ------------
# tests/submissions/hostile/review16/thread_named_from_heap.patch on the reference C: llm_init names its thread as a
# server does, from a heap copy of "llm" (malloc(strlen + 1), 4 bytes) handed to prctl(PR_SET_NAME), which reads the
# string to its NUL (at most 16 bytes); glibc's pthread_setname_np for the calling thread makes the same call. Graded on
# compiles (5) and memory_safety (10): a correct engine, 15/15 in both (valgrind is clean: it checks the string to its
# NUL). Control: the same with the copy in malloc(16): 15/15.
NAME_ITEMS = ("compiles", "memory_safety")
NAME_MAX = 15
NAME_BROKEN = (
    "kernel_access.py judges prctl(PR_SET_NAME)'s argument as 16 bytes (_PR_NAME: the thread's name), but the kernel "
    "reads a NUL-terminated string (strncpy_from_user, up to 16 bytes, stopping at the NUL; a word read that meets the "
    "guard page is retried byte by byte inside the kernel, no fault the program sees). Natively the fence puts the "
    "4-byte heap string at its page's end, the ledger's range [p, p + 16) reaches the guard page and counts a stray: "
    "a correct engine gets 5/15 for 15/15, bubblewrap and fallback ('init_destroy_empty: step 1 llm_init(pool, 640): "
    "natively, a read or write outside any live heap block ... (valgrind did not say where)'); the control with a "
    "16-byte block: 15/15. Fix by construction: the grader judges a string argument by the string the kernel reads, "
    "not by its bound: for PR_SET_NAME (and every path, today judged by its first byte), the ledger reads the string "
    "from the stopped caller's memory itself (/proc/PID/mem, the call waiting in the kernel), page by live page, and "
    "counts a stray only where the string runs off a live block before its NUL (or its bound)")


# held since kernel-allowlist (kernel_access.py Text, ledger.py kernel_call, heap_notify.py bytes_of): a string argument
# is judged to its NUL, read by the grader from the waiting caller's memory (/proc/PID/mem) on live pages only, at most
# the kernel's bound (PR_SET_NAME: 15 bytes): "llm" and its NUL, 4 bytes in the block, no stray. NAME_BROKEN is what it
# broke, kept as the record
@pytest.mark.bwrap_repeat  # the grader's table decides, in both isolations
def test_a_thread_named_from_a_short_heap_string_keeps_memory_safety(scene: Scene, reaper: Reaper) -> None:
    sub = c_submission(scene, None, C_ATTACKS / "thread_named_from_heap.patch")
    problems = graded_problems(scene, reaper, sub, NAME_ITEMS, NAME_MAX, NAME_MAX)
    assert not problems, "\n".join([f"thread_named_from_heap (correct: {NAME_MAX}/{NAME_MAX}):", *problems])


# --- 7. a call's CPU limit: the fence's allowance spent on the program's own kernel work (oracle/run_cpu.py cpu_left) -
# tests/submissions/hostile/review16/system_time_bought.patch on the reference C: review 15's time_bought_by_advice with
# the slowness moved into the kernel: llm_init first makes 40,000 posix_madvise calls on a page nobody maps (mapping
# calls the ledger answers), then spends 0.75 s of CPU calling clock() (clock_gettime of the process's CPU clock: a
# real system call; the spin alone measured 0.08 s user, 0.67 s system). Graded on llm_init (6) at --timeout 0.5:
# honest 0/6 (the same file with 0 advices: "llm_init(pool, 64): hung: no answer within 0.5 s", measured).
SYSTEM_ITEMS = ("llm_init",)
SYSTEM_HONEST, SYSTEM_MAX = 0, 6
# held since fence-allowance (the record of the attack as found): the allowance is earned only by the fence's own work,
# a grant or a free of a block the ledger made (Ledger.fence_calls: 1 a grant, FREE_CALLS a free, its quarantine's
# unmap included), never by a mapping call of the program's own; the same count for a call (Listener.call_fence), a
# probe's run (probe_adapter._left: Listener.fence) and a fuzz's safety net (run_cpu.ANSWERED): the 40,000 advices
# earn nothing, and the 0.67 s of system CPU is past the 0.5 s limit: oracle/SANDBOX.md, "A call's time"
SYSTEM_BROKEN = (
    "since cpu-accounting a call's user CPU is held to its limit alone and its user and system CPU together to the "
    "limit and MAPPING_CALL_CPU (25 us) for each mapping call the ledger answered (run_cpu.cpu_left), so that the "
    "allowance pays for the fence's kernel work only; but the allowance is bought by any mapping call (a posix_madvise "
    "of a page nobody maps costs the driver a few us) and spent on any system CPU, the program's own system calls "
    "among it: a slow engine whose 0.75 s is system time (clock() in a loop: 0.08 s user, 0.67 s system), hung at 0.5 s "
    "(0/6), passes with 40,000 advices first, 6/6, bubblewrap (two runs) and fallback (two runs of three; the first "
    "fallback grading said 'hung' after some 9 s, not diagnosed: the same submission graded 0/6 once and 6/6 twice). "
    "Fix by construction: the allowance is earned only by the fence's own work and spent only on it: "
    "MAPPING_CALL_CPU for each grant and free of a block the program asked for (Ledger.grants, frees: the driver's "
    "malloc and free), none for a mapping call the program made itself (refused or answered, it is the program's), "
    "and the call's system CPU is charged as the user CPU is, to the limit alone, with the fence's measured share "
    "(its mapping calls' count times their cost) taken off the reading rather than added to the limit")


@pytest.mark.bwrap_repeat  # the ledger's allowance decides, in both isolations
def test_a_calls_system_cpu_cannot_be_bought_with_mapping_calls(scene: Scene, reaper: Reaper) -> None:
    from tests.tamper_grading import check_report, grade_args, grade_in_scene
    from tests.test_grade import small_rubric

    sub = c_submission(scene, None, C_ATTACKS / "system_time_bought.patch")
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(SYSTEM_ITEMS))
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric, timeout=0.5))
    problems = evidence.problems + check_report(scene.out, SYSTEM_HONEST, SYSTEM_MAX)
    assert not problems, "\n".join([f"system_time_bought (honest {SYSTEM_HONEST}/{SYSTEM_MAX}):", *problems])


# --- 8. a probe past a fork: the parent read after the fork (oracle/hw3/probe_checks.py check_forked) ---------------
# tests/submissions/hostile/review16/fork_forgets_parent_past_gap.patch on broken/cmut_fork_break_at_null_l1.patch (the
# fork stops copying at the first NULL L1 slot: only the white-box probe l1_gap_fork sees it, item l1_traversal): when
# the fork meets a NULL slot it also sets the parent's later slots to NULL (a second bug, the fork item's: a fork
# changes its parent and loses its tables), so parent and child agree when read after the fork. No program of the API
# takes that branch with a table past it. Graded on fork (8) and l1_traversal (4): honest 0/12 (both bugs: the known
# one alone 8/12 on these items, 'the child's block_table[3] is NULL, expected a copy of the parent's'; the plant costs
# fork, as graded). On the default rubric: 92/100 for the honest 88/100 (the known bug alone: 96/100).
FORGETS_ITEMS = ("fork", "l1_traversal")
FORGETS_HONEST, FORGETS_MAX = 0, 12
# held since fence-allowance (the record of the attack as found): check_forked reads the parent before the fork (after
# the probe's edit) and judges the child against that, so the copy that lacks block_table[3] fails l1_traversal; the
# parent's change (read again after the fork) is the fork item's fact, met as well (ProbeFailed's `past`, the probe
# result's `met`: an excuse on the failed item that charges fork when fork passed, oracle/hw3/verdicts.py with_probes)
FORGETS_BROKEN = (
    "check_forked reads the parent after the fork (`parent = r.sequence(parent_seq)`) and judges the child's copy "
    "against that parent, so a fork that stops at the NULL slot (l1_traversal's bug) and also clears the parent's "
    "slots past it leaves parent and child in agreement: the walk's bug is not seen; the parent's change is seen only "
    "as a ref count no table holds, a CheckedPast charged to item fork. l1_traversal passes: 4/12 for the honest "
    "0/12 (fork and l1_traversal), 92/100 for the honest 88/100 on the default rubric, and 10/18 for the known bug "
    "alone's 8/18 where a course weighs l1_traversal 10 (the plant moves the charge to the item worth less). Fix by "
    "construction: the child is judged against the parent as the grader made it (its table read before the fork, "
    "after the grader's own edit), never as the fork left it; the parent's change is then a second, separate fact "
    "(the fork item's), and a copy that lacks a table the parent had before the fork fails l1_traversal whatever "
    "the fork did to the parent")


@pytest.mark.bwrap_repeat  # the probe's reading order decides, in both isolations
def test_a_fork_that_makes_its_parent_match_its_copy_still_fails_the_walk(scene: Scene, reaper: Reaper) -> None:
    from tests.conftest import SUBMISSIONS

    sub = c_submission(scene, None, C_ATTACKS / "fork_forgets_parent_past_gap.patch",
                       under=(SUBMISSIONS / "broken" / "cmut_fork_break_at_null_l1.patch",))
    problems = graded_problems(scene, reaper, sub, FORGETS_ITEMS, FORGETS_HONEST, FORGETS_MAX)
    assert not problems, "\n".join([f"fork_forgets_parent_past_gap (honest {FORGETS_HONEST}/{FORGETS_MAX}):",
                                     *problems])


def test_every_review16_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["poll_array_past", "untabled_call_past", "log_if_mount_writable",
                              "log_if_mount_writable_c", "cache_folder_unless_rofs", "thread_named_from_heap",
                              "proc_self_mem_past", "driver_handler_rewritten", "system_time_bought",
                              "fork_forgets_parent_past_gap"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table or f"`review16/{name}" in table for name in on_disk)
