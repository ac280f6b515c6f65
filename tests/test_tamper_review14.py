"""Tamper suite, the fourteenth adversarial review's attacks (issue 17, round 14): submissions written by a reviewer who
had not seen the designs being built. The table of what each does and how it fared: tests/hostile_review14/README.md.

Same shape as tests/test_tamper_review13.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score, leave no process, change no file outside
the scratch, and the grader must write its report. A correct submission written in an unusual way is graded under
bubblewrap and without it (fairness asks the same full marks in both). An attack that breaks the grader is a strict
xfail naming the mechanism and a fix by construction; one that holds is a plain test saying why.
"""

from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import c_in_both_isolations, c_submission, graded_problems, reaper, scene  # noqa: F401

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review14"
PY_ATTACKS = Path(__file__).with_name("hostile_review14")


# --- 1. a fault of the fence caught by a handler of the submission's own (oracle/native/refusal.py) ------------------
# tests/submissions/hostile/review14/fault_caught_by_alias.patch on broken/memory_safety.patch (freeing a block table
# reads l2[16]): the read past the L2 table is made under a SIGSEGV/SIGBUS handler installed through `__sigaction`,
# glibc's exported alias of sigaction, which the build's refusal of signal handlers (a list of names) does not name;
# the handler siglongjmps back, so the driver's fault handler never maps the sink page the ledger counts as a stray.
# Under valgrind (its preload named in LD_PRELOAD) the read is not made. Graded on compiles (5) and memory_safety (10):
# honest 5/15 (review 4's overread_by_kernel, review 11's valgrind_fence_closed).
ALIAS_ITEMS = ("compiles", "memory_safety")
ALIAS_HONEST, ALIAS_MAX = 5, 15
ALIAS_BROKEN = (
    "the build refuses a signal handler by the names an object may call (refusal.py SIGNAL_HANDLERS: sigaction, "
    "signal, sigset, ...), and glibc exports the same function under another name, `__sigaction` (GLIBC_2.2.5, "
    "public): a handler of the submission's catches the fault of its read past the L2 table on the fence's guard page "
    "and siglongjmps past it, so the driver's on_fault never asks the ledger for the sink page, no stray is counted, "
    "and under valgrind the read is skipped (LD_PRELOAD names vgpreload): memory_safety passes, 15/15 for the honest "
    "5/15, bwrap and fallback; the same with sigaction itself reached through a .symver alias (the undefined symbol "
    "'sigaction@GLIBC_2.2.5', which no ^name$ pattern matches): 15/15, measured once under bubblewrap. Fix by "
    "construction: the verdict must not rest on the process's own handler running; the handler is the driver's by "
    "a rule the kernel keeps, not a list of names: the driver's seccomp filter (forbid_processes, installed before "
    "any submission code) kills rt_sigaction for SIGSEGV and SIGBUS (and sigaltstack) after the driver installed "
    "its own, whatever symbol reaches it (an alias, own_call found by its bytes, a gadget); or the refusal takes "
    "the C library's symbols by address (every name nm -D gives the address of sigaction, syscall, mmap: "
    "__sigaction, __mmap, __sbrk ..., and a versioned name@GLIBC_x), not by spelling")


# held since no-handlers (driver_main.c keep_own_handlers): natively, once the driver has installed its own handlers and
# before any code of the submission's, its seccomp filter refuses every new signal action and signal stack (EPERM),
# whatever symbol reaches rt_sigaction: __sigaction fails, the read past the L2 table faults into the driver's on_fault,
# and the ledger counts the stray. ALIAS_BROKEN is what it broke, kept as the record
@pytest.mark.bwrap_repeat  # the driver's fault path decides, in both isolations
def test_a_fault_caught_by_a_handler_of_the_submissions_own_still_costs_memory_safety(scene: Scene,
                                                                                     reaper: Reaper) -> None:
    sub = c_submission(scene, "memory_safety", C_ATTACKS / "fault_caught_by_alias.patch")
    problems = graded_problems(scene, reaper, sub, ALIAS_ITEMS, ALIAS_HONEST, ALIAS_MAX)
    assert not problems, "\n".join([f"fault_caught_by_alias (honest {ALIAS_HONEST}/{ALIAS_MAX}):", *problems])


# --- 2. a C run's writable temporary folder: where it is (oracle/isolation.py, oracle/sandbox.py) --------------------
# tests/submissions/hostile/review14/log_in_tmp_c.patch on the reference C: llm_init appends a line to a debug log,
# /tmp/llm_memory.log (fopen "a", fprintf, fclose: the FILE is malloc'd and freed in the call), and returns NULL when
# the log cannot be opened. A correct engine: graded on llm_init (6), full marks 6/6 in both.
TMP_ITEMS = ("llm_init",)
TMP_MAX = 6
LOG_BROKEN = (
    "a C run (the driver) may write a temporary folder under both isolations, but not the same one: bubblewrap mounts "
    "a tmpfs at /tmp, the Landlock fallback gives a private $TMPDIR on the grader's disk and /tmp stays the host's, "
    "which Landlock refuses: a correct engine that logs to /tmp/llm_memory.log gets 6/6 under bubblewrap and 0/6 "
    "without it (llm_init NULL: fopen answered EACCES). Python's server writes nowhere under either (one-view); the C "
    "runs keep one, named two ways. Fix by construction: one declaration for both isolations, as run_view does for "
    "Python: either a C run writes nowhere either (no /tmp under bubblewrap, no $TMPDIR under the fallback: the C "
    "family's documented rule), or the fallback's private folder is mounted where bubblewrap's is, which needs a mount "
    "namespace it lacks, so: nowhere")


# Held since a driver writes nowhere natively under either isolation (oracle/native/driver_process.py private_tmp,
# oracle/run_view.py), the rule the Python server has: the log cannot be opened in either, so llm_init returns NULL
# in both, 0/6 in both (LOG_BROKEN is the record of 6/6 against 0/6).
def test_a_c_debug_log_in_tmp_grades_the_same_in_both_isolations(tmp_path: Path, reaper: Reaper) -> None:
    problems = c_in_both_isolations(tmp_path, reaper, None, C_ATTACKS / "log_in_tmp_c.patch", TMP_ITEMS, 0, TMP_MAX)
    assert not problems, "\n".join(["log_in_tmp_c (writes a file: 0/6 in both isolations):", *problems])


# --- 3. a C run's writable temporary folder: how much it holds (oracle/sandbox.py Limits.tmp_bytes) -----------------
# tests/submissions/hostile/review14/spill_past_tmpfs.patch on the reference C: llm_init writes 17 files of a MiB
# less a page each (each within the run's 1 MiB file-size limit) in $TMPDIR (else /tmp), removes them, and returns
# NULL if any write failed. A correct engine: llm_init (6), 6/6 in both.
SPILL_BROKEN = (
    "the two isolations bound a C run's temporary folder by different rules: bubblewrap's /tmp is a tmpfs of 16 MiB "
    "(Limits.tmp_bytes), the fallback's private $TMPDIR is bounded per file only (RLIMIT_FSIZE, the driver's output "
    "limit, 1 MiB) with no bound on the files' count or their sum (SANDBOX.md: 'bounded per file only'): 17 files of "
    "a MiB each fit without bubblewrap and not under it, so a correct engine that checks its spill room gets 0/6 "
    "under bubblewrap (ENOSPC) and 6/6 without it; the same unbounded sum lets one C submission fill the disk a "
    "grade-all --jobs N shares (not measured: the file count is bounded by nothing but the CPU time). Fix by "
    "construction: as for log_in_tmp_c, a C run writes nowhere under either isolation (no tmpfs under bubblewrap, no "
    "$TMPDIR under the fallback), the rule the Python server already has")


# Held since a driver writes nowhere natively (as LOG_BROKEN's test): no file can be written in either isolation,
# so the spill fails in both, 0/6 in both, and no C run's writes reach the disk a grade-all shares (SPILL_BROKEN is the
# record). A memcheck run keeps a private folder (valgrind's own files, at start): oracle/SANDBOX.md "One view".
def test_a_c_spill_past_sixteen_mib_grades_the_same_in_both_isolations(tmp_path: Path, reaper: Reaper) -> None:
    problems = c_in_both_isolations(tmp_path, reaper, None, C_ATTACKS / "spill_past_tmpfs.patch", TMP_ITEMS, 0, TMP_MAX)
    assert not problems, "\n".join(["spill_past_tmpfs (writes files: 0/6 in both isolations):", *problems])


# --- 4. the programs a Python run may start (oracle/run_view.py, oracle/runtime.py) -----------------------------------
# tests/hostile_review14/libc_by_find_library.py on the correct blockspace engine: at import the block manager loads
# the C library with ctypes.CDLL(ctypes.util.find_library("c")), the usual idiom. Graded on block_table (10): a correct
# module, 10/10 in both isolations.
FIND_LIBRARY_POINTS = {"block_table": 10}
FIND_LIBRARY_BROKEN = (
    "a Python run does not see the same programs under both isolations: bubblewrap shows the host's /usr (gcc, ld, "
    "/sbin/ldconfig), the fallback only the frozen copy's tools; ctypes.util.find_library runs them, so under "
    "bubblewrap it finds no ld.so.cache (no /etc), starts gcc, and raises FileNotFoundError (the gcc step asks "
    "tempfile for a folder: 'No usable temporary directory found'), while under the fallback it finds no gcc or ld and "
    "answers None, and ctypes.CDLL(None) is the process's own symbols, libc's among them: the same correct module "
    "gets 0/10 under bubblewrap ('the submission did not load') and 10/10 without it (oracle/SANDBOX.md names "
    "find_library's compiler as a difference, not the grade it changes). Fix by construction: one view of programs "
    "too: the Python server runs from the same frozen runtime under both isolations (bubblewrap binds the copy at its "
    "own path and shows no other /usr program), so every program a library may start is the same set in both, as "
    "run_view.system_data already does for the data the libraries read")


# Held since the Python server runs from the frozen runtime under both isolations (oracle/sandbox.py popen `frozen`,
# oracle/isolation.py: bubblewrap binds the copy at its own path and shows no /usr of the host's; oracle/run_view.py):
# its programs and libraries are the copy's alone in both, which holds no ld.so.cache, gcc or ld, so find_library("c")
# answers None in both (its documented answer when it finds nothing) and ctypes.CDLL(None), the process's own symbols,
# holds libc's abs: the module loads and is correct, 10/10 in both (FIND_LIBRARY_BROKEN is the record of 0/10 against
# 10/10). tests/test_run_view.py checks the two views' modules and programs directly.
def test_a_module_that_loads_libc_by_find_library_grades_the_same_in_both_isolations(tmp_path: Path,
                                                                                    reaper: Reaper) -> None:
    from tests import tamper_grading

    problems = tamper_grading.blockspace_in_both_isolations(tmp_path, reaper, PY_ATTACKS / "libc_by_find_library.py",
                                                            FIND_LIBRARY_POINTS)
    assert not problems, "\n".join(["libc_by_find_library (correct: 10/10 in both isolations):", *problems])


# --- 5. a probe told from a graded run by the grader's own stop (oracle/native/outside.py `stopped`) ----------------
# tests/submissions/hostile/review14/probe_told_by_sigcont.patch on broken/l1_traversal.patch (freeing a block table
# stops at the first NULL L1 slot): llm_init blocks SIGCONT (sigprocmask); a process stopped and continued keeps a
# blocked SIGCONT pending, which sigpending() shows. The white-box probes read and edit the engine with the driver
# stopped; a graded run's reads do not stop it. Once it has been stopped, the engine visits all 16 slots. Graded on
# compiles (5) and l1_traversal (4): honest 5/9 (review 4's probe_spotted).
SIGCONT_ITEMS = ("compiles", "l1_traversal")
SIGCONT_HONEST, SIGCONT_MAX = 5, 9
SIGCONT_BROKEN = (
    "a probe's reads stop the driver (SIGSTOP, then SIGCONT through the pidfd: outside.py `stopped`, "
    "probe_adapter.stop_to_read) and a graded run's do not, and a stop leaves a mark the process reads itself: a "
    "blocked SIGCONT still continues it and then stays pending (sigprocmask and sigpending, which the build does not "
    "refuse, no handler needed); the engine keeps the known bug until it has been stopped once and visits all 16 L1 "
    "slots from then on, so l1_traversal's probe sees a correct walk: 9/9 for the honest 5/9, bwrap and fallback. "
    "Fix by construction: nothing a probe does may be seen by the process: stop no driver at all (a graded run does "
    "not; a probe's edits are made while the driver waits in its read of the next request, which the grader alone "
    "ends: a driver that has replied runs no code of the submission's, the filter kills clone, and a signal handler "
    "or timer of its own is refused at build), or, if a stop stays, stop every run's driver the same way at the same "
    "points (graded runs too), so a pending SIGCONT tells nothing")


# held since no-handlers (outside.py, probe_adapter.py): a probe's driver is not stopped to be read or edited; with
# the seccomp filters (no thread, no handler of the submission's) a driver that has replied runs nothing of the
# submission's until its next request, so a probe reads it as a graded run does, and no SIGCONT is ever sent to be
# seen pending. SIGCONT_BROKEN is what it broke, kept as the record
@pytest.mark.bwrap_repeat  # the grader's stop decides, in both isolations
def test_a_probe_cannot_be_told_by_the_stop_it_makes(scene: Scene, reaper: Reaper) -> None:
    sub = c_submission(scene, "l1_traversal", C_ATTACKS / "probe_told_by_sigcont.patch")
    problems = graded_problems(scene, reaper, sub, SIGCONT_ITEMS, SIGCONT_HONEST, SIGCONT_MAX)
    assert not problems, "\n".join([f"probe_told_by_sigcont (honest {SIGCONT_HONEST}/{SIGCONT_MAX}):", *problems])


# --- 6. the grader's own time, charged to a call (oracle/run_cpu.py, oracle/native/ledger.py) -----------------------
# tests/submissions/hostile/review14/allocator_churn.patch on the reference C: once its arguments are checked, llm_init
# makes 60,000 malloc(16)/free pairs (a volatile store each, so gcc keeps them) before it builds the engine: a correct
# engine, a few milliseconds of CPU natively. Graded on llm_init (6): 6/6.
CHURN_ITEMS = ("llm_init",)
CHURN_MAX = 6
# held since ledger-clock (the record of the attack as found): a call's wall-clock cap leaves out the time the grader
# spent answering its mapping calls (heap_notify.Listener.call_busy), its CPU limit gains MAPPING_CALL_CPU for each
# mapping call the fence made (the kernel's work of the fence, not the program's), and the count of mapping calls a
# call may make (MAPPING_CALLS_PER_SECOND a second of its limit) bounds the grader's work: oracle/SANDBOX.md, "A
# call's time"
CHURN_BROKEN = (
    "a call's time limit is its run's CPU seconds, capped at HUNG_WALL (10) times the limit of wall clock, and on "
    "the fence every malloc and free is a mapping call the driver waits on while the grader's ledger answers it in "
    "Python: about 0.6 ms of the grader's CPU each (measured: 3,000 pairs in llm_init added 3.5 s of the grader's user "
    "time, 6,000 added 9.5 s; `/usr/bin/time pagedcheck grade`, load average 15 on 2 cores), time that is the "
    "grader's, not the run's, yet counts against the call's wall-clock cap: a correct llm_init that makes 60,000 "
    "malloc/free pairs gets 'hung: no answer within 2 s' (0/6, bwrap and fallback) when the driver has used 1.34 s "
    "of its 2 s of CPU (0.05 user, 1.29 system: polled in /proc until it was killed), so the wall-clock cap ended it, "
    "and the number of allocations a call may make before that cap depends on the grader's speed and the machine's "
    "load: the same submission can pass on an idle machine and fail on a busy one. Fix by construction: the wall "
    "clock a call is held to excludes the time the driver spent waiting on the grader's answers (the ledger sums the "
    "time from each notification received to its answer sent, and RunClock.owed adds it to the call's cap), so only "
    "the run's own CPU and its own waiting decide a time limit")
# What is left (oracle/SANDBOX.md, "A call's time"): the grading of this item makes some 30 llm_init calls of about
# 179,000 mapping calls each, about 20 s of wall clock each at load average 10 on 2 cores: it passed in 170 s (load 5
# to 8); before a probe's run had the fence's allowance too, one grading ran past the harness's 180 s (load 10 to 12):
# close to it; the grade's own time limit (300 s) counts the grade's CPU seconds now (oracle/run_cpu.py Budget), not
# the wall clock it used to.


@pytest.mark.bwrap_repeat  # the ledger answers every mapping call in both isolations
def test_a_call_is_not_charged_the_graders_time_answering_its_allocations(scene: Scene, reaper: Reaper) -> None:
    from tests.tamper_grading import check_report, grade_args, grade_in_scene
    from tests.test_grade import small_rubric

    sub = c_submission(scene, None, C_ATTACKS / "allocator_churn.patch")
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(CHURN_ITEMS))
    # a limit of 1 s, a wall-clock cap of 10 s: the same verdict as at 2 s (measured), in half the test's time
    # the harness's limit well past the grading's own length (170 to 185 s at load 5 to 8, so 180 s failed it now and
    # then: a flake on the machine's load, not a verdict), still finite for a grading that never ends
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric, timeout=1.0), limit=600.0)
    problems = evidence.problems + check_report(scene.out, CHURN_MAX, CHURN_MAX)
    assert not problems, "\n".join([f"allocator_churn (correct: {CHURN_MAX}/{CHURN_MAX}):", *problems])


def test_every_review14_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["fault_caught_by_alias", "log_in_tmp_c", "spill_past_tmpfs", "libc_by_find_library",
                              "probe_told_by_sigcont", "allocator_churn"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table or f"`review14/{name}" in table for name in on_disk)
