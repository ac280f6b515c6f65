"""Tamper suite, the fifteenth adversarial review's attacks (issue 17, round 15): submissions written by a reviewer who
had not seen the designs being built. The table of what each does and how it fared: tests/hostile_review15/README.md.

Same shape as tests/test_tamper_review14.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score, leave no process, change no file outside
the scratch, and the grader must write its report. A submission whose grade may depend on the isolation is graded
under bubblewrap and without it (fairness asks the same grade in both). An attack that breaks the grader is a strict
xfail naming the mechanism and a fix by construction; one that holds is a plain test saying why.
"""

from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import c_in_both_isolations, c_submission, graded_problems, reaper, scene  # noqa: F401

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review15"
PY_ATTACKS = Path(__file__).with_name("hostile_review15")


# --- 1. a read past a block made by the kernel, not by a load (oracle/native/driver_main.c, ledger.py) --------------
# tests/submissions/hostile/review15/kernel_reads_past.patch on broken/memory_safety.patch (freeing a block table reads
# l2[16]): the int past the L2 table is copied by the kernel, write(2) into a pipe of the submission's own and read(2)
# back, instead of loaded by an instruction. Under valgrind (its preload named in LD_PRELOAD) the read is not made.
# Graded on compiles (5) and memory_safety (10): honest 5/15 (the same bug read by a load: control measured 5/15,
# "natively, a read or write outside any live heap block ... 1 page(s) of guard or freed memory touched").
KERNEL_ITEMS = ("compiles", "memory_safety")
KERNEL_HONEST, KERNEL_MAX = 5, 15
KERNEL_BROKEN = (
    "natively the fence sees a read past a block only as a fault: the guard page is inaccessible, the CPU's load "
    "faults into the driver's on_fault, which asks the ledger for the page, counted as a stray. The kernel's own "
    "copy from that page (copy_from_user for write(2)'s buffer, and every other system call that reads or writes "
    "the caller's memory: a path, a struct, an iovec) raises no signal: it answers EFAULT, which only the caller "
    "sees. The submission reads l2[16] by writing it into a pipe of its own and reading it back: on the guard page "
    "the write fails with EFAULT, the value counts as -1, no page is asked for, no stray counted; under valgrind, "
    "which checks write's buffer, it reads nothing (LD_PRELOAD names vgpreload): memory_safety passes, 15/15 for the "
    "honest 5/15, bubblewrap and fallback, and 100/100 for the honest 90/100 on the default rubric (bubblewrap) "
    "(oracle/seccomp.py refuses process_vm_readv for this very reason, "
    "one system call of the many that copy the caller's memory). Fix by construction: every access to a page of the "
    "fence's span that is no live block's reaches the ledger, the kernel's as the CPU's: the driver's filter "
    "allows, once the submission's code may run, only a list of system calls (default: kill), those whose every "
    "pointer argument is a register (read, write, pread64, pwrite64, ...: no iovec, no msghdr, no struct holding a "
    "pointer), and hands to the ledger any of those whose pointer argument lies in the span (BPF compares the upper "
    "half of the register with the span's), which answers it as a stray when [pointer, pointer + count) touches a "
    "page of no live block; or the guard and freed pages are userfaultfd-registered, never present, so that the "
    "kernel's copy waits on the grader as the CPU's load does")


# held since kernel-reads (driver_main.c hand_mappings_to_grader, ledger.py kernel_access): natively, every system call
# of the driver's process one of whose argument registers lies in the fence's span is handed to the grader, whose
# ledger counts the first page of no live block in the range the call names (write's buffer and count: the guard page
# after the L2 table) as a stray, as a fault's, and lets the call go on (EFAULT, as before); the calls whose buffers
# the kernel finds through memory (readv, writev, sendmsg, ...) are refused (EPERM). KERNEL_BROKEN is what it broke,
# kept as the record
@pytest.mark.bwrap_repeat  # the driver's fence decides, in both isolations
def test_a_read_past_a_block_made_by_the_kernel_still_costs_memory_safety(scene: Scene, reaper: Reaper) -> None:
    sub = c_submission(scene, "memory_safety", C_ATTACKS / "kernel_reads_past.patch")
    problems = graded_problems(scene, reaper, sub, KERNEL_ITEMS, KERNEL_HONEST, KERNEL_MAX)
    assert not problems, "\n".join([f"kernel_reads_past (honest {KERNEL_HONEST}/{KERNEL_MAX}):", *problems])


# --- 2. a memcheck run's writable folder: where it is (oracle/native/driver_process.py private_tmp, isolation.py) ----
# tests/submissions/hostile/review15/memcheck_told_by_tmp.patch on the reference C: under valgrind only (its preload in
# LD_PRELOAD), llm_init opens /tmp/llm_memory.log for appending; when it cannot, it reads one int past the end of its
# ref_count array, an invalid read valgrind reports. Natively nothing is tried. Graded on compiles (5) and
# memory_safety (10): one grade in both isolations; once a memcheck run writes where a native run does (nowhere the
# submission names), the read is made in both: 5/15 in both.
MEMCHECK_TMP_ITEMS = ("compiles", "memory_safety")
MEMCHECK_TMP_HONEST, MEMCHECK_TMP_MAX = 5, 15
MEMCHECK_TMP_BROKEN = (
    "a memcheck run (valgrind's) keeps a writable temporary folder, and the two isolations put it at different places: "
    "bubblewrap a sized tmpfs at /tmp (and /dev/shm), the Landlock fallback a private $TMPDIR on the grader's disk "
    "while /tmp stays the host's, which Landlock refuses (review 14's log_in_tmp_c, closed for the native driver "
    "alone). The submission can tell the memcheck run from a native one (LD_PRELOAD names vgpreload) and the "
    "isolation from whether /tmp takes a file: under bubblewrap it is valgrind-clean, 15/15, without it it makes an "
    "invalid read, 5/15; the same submission, two grades. Fix by construction: the memcheck run's client writes "
    "nowhere under either isolation, as the native driver: valgrind's folder is named by $TMPDIR alone at one path "
    "in both (bubblewrap binds its tmpfs at the path the fallback's folder has, /tmp stays the sealed empty one), "
    "and is made read-only (the grader's chmod of the folder it owns; a run's chmod is refused by oracle/seccomp.py) "
    "once valgrind has started and before the driver's first request, so no code of the submission's can write a "
    "file there in either")


# Held since run-writes: a memcheck run's folder is valgrind's start folder (oracle/sandbox.py start_folder), one of the
# grader's named by $TMPDIR at the same path under both isolations, /tmp and /dev/shm sealed in both, and the folder
# itself made read-only by the grader once the driver's first byte says valgrind has started (before any code of the
# submission's runs: constructors are refused by the build): /tmp takes no file in either, the read past ref_count is
# made in both, 5/15 in both (MEMCHECK_TMP_BROKEN is the record of 15/15 against 5/15).
def test_a_memcheck_run_told_by_its_temporary_folder_grades_the_same_in_both_isolations(tmp_path: Path,
                                                                                       reaper: Reaper) -> None:
    problems = c_in_both_isolations(tmp_path, reaper, None, C_ATTACKS / "memcheck_told_by_tmp.patch",
                                    MEMCHECK_TMP_ITEMS, MEMCHECK_TMP_HONEST, MEMCHECK_TMP_MAX)
    assert not problems, "\n".join(["memcheck_told_by_tmp (one grade in both isolations):", *problems])


# --- 3. what a Python run is told of a file it may not write (oracle/run_view.py WRITE, oracle/landlock.py) ---------
# tests/hostile_review15/log_if_writable.py on the correct blockspace engine: at import the block manager asks
# os.access("/tmp", os.W_OK) and opens a debug log there only when the answer is yes, the usual guard. Graded on
# block_table (10): a correct module, 10/10 in both isolations.
WRITABLE_POINTS = {"block_table": 10}
WRITABLE_BROKEN = (
    "a Python run may write nowhere under either isolation (run_view.py WRITE), but the two say it differently: "
    "bubblewrap's /tmp is an empty folder sealed read-only, so access(2) answers EROFS (no); the Landlock fallback "
    "leaves the host's /tmp (mode 1777) and refuses only the open, and Landlock does not govern access(2), which "
    "answers yes from the mode bits: a correct module that opens its log only when os.access says it may gets 10/10 "
    "under bubblewrap and 0/10 without it ('the submission did not load: PermissionError'). The same holds for a "
    "file the host has and neither isolation shows (open('/etc/os-release'), measured: FileNotFoundError under "
    "bubblewrap, PermissionError under the fallback; a module that catches FileNotFoundError for an optional file "
    "loads in one and not the other). Fix by construction: one answer for 'not yours' in both isolations: every run's "
    "seccomp filter (oracle/seccomp.py, installed in both) answers access, faccessat and faccessat2 with W_OK "
    "EACCES for a run that may write nowhere (the true answer everywhere, since no run may write there), and "
    "bubblewrap shows each top-level folder the host has and the run may not read as an unreadable empty folder "
    "(mode 0), so a lookup under it answers EACCES as Landlock does, or the fallback answers ENOENT where bubblewrap "
    "shows nothing (a user-notification on open's path)")


# Held since run-writes: a run that may write nowhere is told so alike: its seccomp filter (oracle/seccomp.py
# `writes`, installed under both isolations) answers access, faccessat and faccessat2 asking W_OK with EROFS, what
# bubblewrap's read-only /tmp answers; the module opens no log in either, 10/10 in both (WRITABLE_BROKEN is the record
# of 10/10 against 0/10). The other half of its fix (a host file neither shows: FileNotFoundError against
# PermissionError) is left, a known difference: oracle/SANDBOX.md "What a run may write".
def test_a_module_that_logs_only_where_access_says_it_may_grades_the_same_in_both_isolations(tmp_path: Path,
                                                                                            reaper: Reaper) -> None:
    from tests import tamper_grading

    problems = tamper_grading.blockspace_in_both_isolations(tmp_path, reaper, PY_ATTACKS / "log_if_writable.py",
                                                            WRITABLE_POINTS)
    assert not problems, "\n".join(["log_if_writable (correct: 10/10 in both isolations):", *problems])



# tests/submissions/hostile/review15/log_if_writable_c.patch on the reference C: the same guard in C, natively (review
# 14's log_in_tmp_c without the guard: 0/6 in both since a driver writes nowhere): llm_init appends a line to
# /tmp/llm_memory.log when access("/tmp", W_OK) says it may, and fails (NULL) when that open then fails. Graded on
# llm_init (6): a correct engine, 6/6 in both.
WRITABLE_C_ITEMS = ("llm_init",)
WRITABLE_C_MAX = 6


WRITABLE_C_BROKEN = (
    "the same for a native C run (a driver writes nowhere under either isolation since review 14): bubblewrap's /tmp "
    "is sealed read-only, so access(\"/tmp\", W_OK) answers EROFS and the engine keeps no log (6/6); under the "
    "Landlock fallback access(2), which Landlock does not govern, answers yes from the host /tmp's mode 1777, the "
    "fopen is then refused (EACCES) and llm_init fails: 0/6, 'expected an engine, got NULL'. Fix by construction: "
    "as WRITABLE_BROKEN's, one answer in both: every run's seccomp filter answers access, faccessat and faccessat2 "
    "asking W_OK with EACCES for a run that may write nowhere (bubblewrap's EROFS and Landlock's yes both become no)")


# Held since run-writes, as WRITABLE_BROKEN's: the native driver's run is told EROFS by access(2) asking W_OK in both
# isolations, keeps no log, 6/6 in both (WRITABLE_C_BROKEN is the record of 6/6 against 0/6).
def test_a_c_engine_that_logs_only_where_access_says_it_may_grades_the_same_in_both_isolations(tmp_path: Path,
                                                                                            reaper: Reaper) -> None:
    problems = c_in_both_isolations(tmp_path, reaper, None, C_ATTACKS / "log_if_writable_c.patch",
                                    WRITABLE_C_ITEMS, WRITABLE_C_MAX, WRITABLE_C_MAX)
    assert not problems, "\n".join(["log_if_writable_c (correct: 6/6 in both isolations):", *problems])

# --- 4. a signal the fence raises, blocked by the submission (oracle/native/driver_main.c die_of, keep_own_handlers) --
# tests/submissions/hostile/review15/fault_blocked.patch on broken/memory_safety.patch: the read of l2[16] is made with
# SIGSEGV and SIGBUS blocked (sigprocmask, which no filter refuses: the filter refuses new actions, not masks), hoping
# that the fence's fault stays pending and never reaches on_fault; under valgrind the read is skipped. Graded on
# compiles (5) and memory_safety (10): honest 5/15.
BLOCKED_ITEMS = ("compiles", "memory_safety")
BLOCKED_HONEST, BLOCKED_MAX = 5, 15


# Holds: a fault is not an ordinary signal: the kernel forces it (force_sig_fault), and a blocked one is unblocked with
# its action reset to the default, so the process dies of SIGSEGV at the read, "llm_destroy(engine): crashed with
# SIGSEGV", a crash in the program memory_safety runs natively: 5/15, bubblewrap and fallback (measured both)
@pytest.mark.bwrap_repeat  # the kernel's delivery of a fault decides, in both isolations
def test_a_fault_of_the_fence_with_the_signal_blocked_still_costs_memory_safety(scene: Scene, reaper: Reaper) -> None:
    sub = c_submission(scene, "memory_safety", C_ATTACKS / "fault_blocked.patch")
    problems = graded_problems(scene, reaper, sub, BLOCKED_ITEMS, BLOCKED_HONEST, BLOCKED_MAX)
    assert not problems, "\n".join([f"fault_blocked (honest {BLOCKED_HONEST}/{BLOCKED_MAX}):", *problems])


# --- 5. the fuzz's safety net charged the grader's own answers (oracle/run_cpu.py SafetyNet, heap_notify.py) ---------
# tests/submissions/hostile/review15/churn_per_append.patch on the reference C: every successful append_kv makes 3,000
# malloc(16)/free pairs (a volatile store each) before it stores the token: a correct engine, some 100 us of a C
# library's time a call, about 9,000 mapping calls of the fence (well within a call's 400,000 and its CPU limit).
# Graded on the fuzz item alone, a course's options: seed 110, 30 programs of 30 calls, a safety net of 20 CPU seconds
# (the reference: 10/10, the whole grade 2.4 s of the grader's CPU). A correct engine: 10/10.
CHURN_RUBRIC = """title = "review15"
[[item]]
id = "fuzz"
name = "Stateful fuzzing against the oracle"
points = 10
[item.options]
seed = 110
examples = 30
steps = 30
shrink_replays = 2000
seconds = 20.0
"""
CHURN_MAX = 10
# the net held since cpu-accounting (the record of the attack as found): the safety net counts the CPU of the runs
# the grader started, never the grader's own process, by a call's rule (run_cpu.cpu_left: user CPU to the net's
# seconds, user and system CPU to them and MAPPING_CALL_CPU for each mapping call the grader answered meanwhile, a
# count); the grader's own answering is bounded by the fuzz's counts: oracle/SANDBOX.md, "A call's time". What is
# left of it is CHURN_LEFT.
CHURN_BROKEN = (
    "the fuzz's safety net (runner.py, run_cpu.py SafetyNet) counts the CPU of the grader's whole process tree, the "
    "grader's own process among it, and natively the grader's own process answers every mapping call of the driver "
    "in Python (heap_notify.Listener, ledger.py), tens of microseconds each: time a call's limit excuses since review "
    "14 (Listener.call_busy, MAPPING_CALL_CPU) but the net does not. A correct engine whose every append makes 3,000 "
    "malloc/free pairs is stopped 'incomplete: stopped at the 20 s time limit (CPU seconds) after 6 of 30 programs, "
    "180 calls, no divergence so far' (0/10) when the grader's own process alone had used 29.6 s of CPU "
    "(getrusage RUSAGE_SELF), the reference's whole grade 2.4 s: the net, meant to stop a run that would never end "
    "('a busy machine never reaches it'), stops a correct one by the grader's speed, a slower grader sooner. With the "
    "net a course may well choose, 60 s (the same 30 programs of 30 calls), the grade's 300 s deadline of wall "
    "clock came first: 'not run' (0/10), the grader's own process 141.8 s of CPU: the net is read between programs "
    "only. Fix by construction: a budget of counts for the grader's answering too, as a call has: the net "
    "counts the runs' own CPU (the drivers' trees, each call's fence allowance MAPPING_CALL_CPU a mapping call "
    "taken off, as RunClock does) and never the grader's own process, whose work the fuzz bounds by counts already "
    "(programs, calls, replays) and, for the ledger, by a count of mapping calls for the whole fuzz (the same on "
    "every machine), past which it is cut short with the same words everywhere")


CHURN_LEFT = (
    "the net holds (cpu-accounting: it no longer counts the grader's own process), but the grading of this correct "
    "engine does not end within the harness's 180 s of wall clock: its fuzz makes millions of mapping calls (some "
    "7,085,000 after 20 min of grading, load 10 to 14; the driver 16 us of system CPU each, within the allowance) and "
    "the grader answers each in Python, some 40 us of its CPU (266 s by then): a cost of the grader's that no limit of "
    "the submission's charges, bounded only by the fuzz's counts. Fix by construction: a count of mapping calls for "
    "the whole fuzz (the same on every machine) and a cheaper answer, or a grade deadline in CPU of the runs "
    "(branch grade-budget) with a harness limit that fits the count")


# Not strict: what is left is a cost of the grader's own CPU, so whether the grading ends within the harness's 180 s
# depends on the machine's speed and load (stop 29's CI: XPASS without bubblewrap, after failing on an earlier run).
# Its fallback case stays in CI (tests/test_profile.py: no test's only run leaves CI).
@pytest.mark.xfail(strict=False, reason=CHURN_LEFT)
@pytest.mark.bwrap_repeat  # the grader's own answering decides, in both isolations
def test_the_fuzz_safety_net_is_not_reached_by_the_graders_answers_to_a_correct_engine(scene: Scene,
                                                                                     reaper: Reaper) -> None:
    from tests.tamper_grading import check_report, grade_args, grade_in_scene

    sub = c_submission(scene, None, C_ATTACKS / "churn_per_append.patch")
    rubric = scene.rubric_dir / "rubric.toml"
    rubric.write_text(CHURN_RUBRIC)
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric))
    problems = evidence.problems + check_report(scene.out, CHURN_MAX, CHURN_MAX)
    assert not problems, "\n".join([f"churn_per_append (correct: {CHURN_MAX}/{CHURN_MAX}):", *problems])



# --- 6. a call's CPU limit bought with mapping calls (oracle/native/heap_notify.py MAPPING_CALL_CPU) ---------------
# tests/submissions/hostile/review15/time_bought_by_advice.patch on the reference C: a slow engine, whose llm_init
# computes for 0.75 s of CPU (clock()) before it builds the engine, first makes 40,000 calls of posix_madvise (the C
# library's wrapper of madvise, which the build's list of names does not hold) on a page nobody maps. Graded on
# llm_init (6) at a limit of 0.5 s: honest 0/6 (the same engine without the calls: "llm_init(pool, 64): hung: no
# answer within 0.5 s", measured).
ADVICE_ITEMS = ("llm_init",)
ADVICE_HONEST, ADVICE_MAX = 0, 6
# held since cpu-accounting (the record of the attack as found): a call's user CPU is held to its limit alone, its user
# and system CPU together to the limit and the fence's allowance (run_cpu.cpu_left, RunClock.times: utime and stime
# apart; the same function for a probe's run, probe_adapter._left): the advice buys kernel time, the computing is user
# time: oracle/SANDBOX.md, "A call's time"
ADVICE_BROKEN = (
    "every mapping call the ledger answers adds MAPPING_CALL_CPU (25 us) to its call's CPU limit (Listener.call_limit, "
    "review 14's ledger-clock: the fence's kernel work, 5 to 15 us measured), whatever the call was and whoever made "
    "it, and the allowance is CPU of any kind: a call that makes N cheap mapping calls (a posix_madvise of a page "
    "nobody maps: the driver sleeps until the answer and spends a few us; malloc/free pairs buy less, or nothing on "
    "a loaded kernel) may then compute in user mode for N x 25 us more than its limit, up to "
    "MAPPING_CALLS_PER_SECOND x 25 us = 5 times it: a slow engine that needs 0.75 s of CPU in llm_init, hung at a "
    "limit of 0.5 s (0/6), buys the time with 40,000 advices made first and passes, 6/6 (bubblewrap and fallback, "
    "measured; `pagedcheck grade DIR --rubric R --timeout 0.5`). Fix by construction: the allowance pays for what "
    "it is for, the kernel's work, never for the program's own: a call's user CPU is held to its limit alone, and "
    "its user and system CPU together to the limit and the allowance (/proc's stat gives utime and stime apart, "
    "RunClock sums them); and the allowance is counted for the fence's own grants and frees (Ledger.grants, "
    "frees: a block the program asked for), not for every call the filter hands over")


@pytest.mark.bwrap_repeat  # the ledger's allowance decides, in both isolations
def test_a_calls_cpu_limit_cannot_be_bought_with_mapping_calls(scene: Scene, reaper: Reaper) -> None:
    from tests.tamper_grading import check_report, grade_args, grade_in_scene
    from tests.test_grade import small_rubric

    sub = c_submission(scene, None, C_ATTACKS / "time_bought_by_advice.patch")
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(ADVICE_ITEMS))
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric, timeout=0.5))
    problems = evidence.problems + check_report(scene.out, ADVICE_HONEST, ADVICE_MAX)
    assert not problems, "\n".join([f"time_bought_by_advice (honest {ADVICE_HONEST}/{ADVICE_MAX}):", *problems])

def test_every_review15_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["kernel_reads_past", "memcheck_told_by_tmp", "log_if_writable", "log_if_writable_c",
                              "fault_blocked", "churn_per_append", "time_bought_by_advice"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table or f"`review15/{name}" in table for name in on_disk)
