"""Tamper suite, the eighteenth adversarial review's attacks (issue 17, round 18): on one CPU per grade
(oracle/one_cpu.py), the /proc launcher (oracle/proc_view.py) and the filter's new answers (oracle/seccomp.py: statfs
ENOSYS for a run that writes nowhere, a memcheck driver's own "nowhere" filter, no change to another process's
scheduling or limits). The table of what each does and how it fared: tests/hostile_review18/README.md.

Same shape as tests/test_tamper_review16.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score, leave no process, change no file outside
the scratch, and the grader must write its report; one whose grade may depend on the isolation is graded under
bubblewrap and without it. An attack that breaks the grader is a strict xfail naming the mechanism and a fix by
construction; one that holds is a plain test saying why.
"""

from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper
from tests.tamper_grading import c_in_both_isolations, reaper  # noqa: F401

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review18"
PY_ATTACKS = Path(__file__).with_name("hostile_review18")

# --- 1. a mount's flags read from the mount table, under valgrind (oracle/seccomp.py `writes`: statfs ENOSYS) -----
# tests/submissions/hostile/review18/cache_unless_mount_ro.patch on the reference C: llm_init reads the mount table
# (setmntent("/proc/self/mounts"), getmntent, hasmntopt "ro": the usual idiom) and, where the mount that holds /tmp
# is writable, makes a cache folder there and fails (NULL) when it cannot; no table to read, or a read-only mount: no
# cache. Graded on compiles (5) and memory_safety (10): a correct engine, 15/15 in both.
MOUNTS_ITEMS = ("compiles", "memory_safety")
MOUNTS_MAX = 15
MOUNTS_BROKEN = (
    "write-parity answers statfs and fstatfs ENOSYS so that no run learns a mount's flags, but a memcheck run has a "
    "procfs (valgrind reads /proc/self/maps) in which /proc/self/mounts opens for reading in both isolations, and the "
    "two tables differ: bubblewrap's shows the sealed root (and so /tmp) \"ro\", the Landlock fallback's is the host's, "
    "where /tmp is on a read-write mount. Natively /proc opens nowhere (no cache, an engine in both); under valgrind "
    "with bubblewrap the table says read-only (no cache, an engine: 15/15); under the fallback it says writable, the "
    "driver's names rule answers the mkdir EROFS and llm_init returns NULL under valgrind alone: memory_safety fails "
    "('program init_destroy_empty behaves differently under valgrind than natively, at step 1 llm_init(pool, 640): "
    "returned an engine natively, NULL under valgrind'): 5/15 under the fallback, 15/15 under bubblewrap (measured). "
    "Fix by construction: no run sees a mount table, in either isolation: a memcheck run is started, in both, through "
    "a launcher like oracle/proc_view.c that (knowing its own pid, which the exec of valgrind keeps) adds Landlock "
    "rules for reading each entry of /proc/<pid>/ but mounts, mountinfo and mountstats, and each top entry of /proc "
    "but the pid folders (so /proc/mounts, a link to self/mounts, resolves to a file with no rule), then execs "
    "valgrind: valgrind's /proc/self/maps, auxv, stat and cmdline open, the mount table is EACCES in both; under the "
    "fallback the ruleset stacks on the run's own, under bubblewrap it is applied inside bwrap as proc_view's is")


@pytest.mark.xfail(strict=True, reason=MOUNTS_BROKEN)
def test_a_c_engine_that_reads_the_mount_table_under_valgrind_grades_the_same_in_both_isolations(
        tmp_path: Path, reaper: Reaper) -> None:
    problems = c_in_both_isolations(tmp_path, reaper, None, C_ATTACKS / "cache_unless_mount_ro.patch",
                                    MOUNTS_ITEMS, MOUNTS_MAX, MOUNTS_MAX)
    assert not problems, "\n".join(["cache_unless_mount_ro (correct: 15/15 in both isolations):", *problems])


# --- 2. a process naming itself by its pid (oracle/seccomp.py _OTHERS: every pid but 0 refused) ------------------
# tests/submissions/hostile/review18/own_priority_by_pid.patch on the reference C: llm_init lowers its own priority to
# nice 5 at least, naming itself as setpriority(PRIO_PROCESS, getpid(), ...), and fails (NULL) when refused. Graded on
# llm_init (6): a correct engine (lowering one's own priority needs no privilege), 6/6 in both.
OWN_ITEMS = ("llm_init",)
OWN_MAX = 6
OWN_BROKEN = (
    "seccomp.py's rule against changing another process's scheduling or limits (85308e1) refuses every pid but 0, "
    "but a process may name itself by its own pid, as setpriority(2) and sched_setaffinity(2)'s examples do, and "
    "glibc's pthread_setaffinity_np, pthread_setschedparam and pthread_setschedprio always pass the thread's tid "
    "(never 0): setpriority(PRIO_PROCESS, getpid(), 5), lowering the engine's own priority, which needs no "
    "privilege, answers EPERM, and a correct engine that checks the call gets 0/6 for 6/6, bubblewrap and fallback "
    "(measured both; the same patch with the pid written 0: 6/6 in both). The rule's own text says the calls on the "
    "caller itself pass. Fix by construction: the filter decides 'another process' by the caller, not by the number "
    "0: a call naming a pid other than 0 is handed to the grader (SECCOMP_RET_USER_NOTIF; the native driver's "
    "listener exists already), which lets it go on (CONTINUE) when the pid is the caller's own process or one of its "
    "threads as the caller's pid namespace numbers them (the notification's pid, read through /proc/PID/status "
    "NSpid and task/) and answers EPERM otherwise; where no listener is there (the Python server), the filter is "
    "installed by the run's process itself once it knows its pid (as driver_main.c installs the memcheck names "
    "rule), with the pid as an allowed value besides 0")


@pytest.mark.xfail(strict=True, reason=OWN_BROKEN)
def test_a_c_engine_that_lowers_its_own_priority_by_its_pid_keeps_its_grade(tmp_path: Path, reaper: Reaper) -> None:
    problems = c_in_both_isolations(tmp_path, reaper, None, C_ATTACKS / "own_priority_by_pid.patch",
                                    OWN_ITEMS, OWN_MAX, OWN_MAX)
    assert not problems, "\n".join(["own_priority_by_pid (correct: 6/6 in both isolations):", *problems])


# --- 3. a device's ioctl: bubblewrap's launcher grants /dev whole, the fallback the devices' reads and writes -------
# tests/submissions/hostile/review18/urandom_entropy_ioctl.patch on the reference C: llm_init asks /dev/urandom for the
# entropy count (ioctl RNDGETENTCNT) and fails (NULL) when it does not answer. Graded on llm_init (6): a correct
# engine, 6/6 in both.
IOCTL_ITEMS = ("llm_init",)
IOCTL_MAX = 6
IOCTL_BROKEN = (
    "the Landlock fallback grants the five devices (landlock.py DEVICES) reading, writing and truncating only, so on "
    "a kernel of Landlock ABI 5 or more (LANDLOCK_ACCESS_FS_IOCTL_DEV handled) every ioctl on them but the few the "
    "kernel always allows (FIONREAD, FIOCLEX, ...) is EACCES; under bubblewrap a native run's launcher "
    "(oracle/proc_view.c) grants every handled right beneath each top folder, /dev among them, and a memcheck or "
    "tool run has no Landlock at all: ioctl(RNDGETENTCNT) on /dev/urandom answers under bubblewrap and is refused "
    "under the fallback. A correct engine that checks the answer gets 6/6 with bubblewrap and 0/6 without it "
    "('llm_init: step 1 llm_init(pool, 64): return value: expected an engine, got NULL', measured). Fix by "
    "construction: one grant for the devices in both: the fallback's device rule holds IOCTL_DEV too (the five "
    "devices' ioctls that change anything need CAP_SYS_ADMIN, which no run has), or both refuse it: the launcher "
    "grants /dev's devices exactly the fallback's rights (a rule per device, none for /dev as a whole) and every "
    "bubblewrap run, a memcheck one's too, starts through it")


# held since the fallback's device rule holds IOCTL_DEV too (oracle/landlock.py): one grant for the devices in both
# isolations, 6/6 in both; IOCTL_BROKEN is what it broke, kept as the record
def test_a_c_engine_that_asks_a_device_by_ioctl_grades_the_same_in_both_isolations(tmp_path: Path,
                                                                                    reaper: Reaper) -> None:
    problems = c_in_both_isolations(tmp_path, reaper, None, C_ATTACKS / "urandom_entropy_ioctl.patch",
                                    IOCTL_ITEMS, IOCTL_MAX, IOCTL_MAX)
    assert not problems, "\n".join(["urandom_entropy_ioctl (correct: 6/6 in both isolations):", *problems])


# --- 4. the grader's CPU claims, taken by a submission (oracle/one_cpu.py) ----------------------------------------
# tests/hostile_review18/claim_every_cpu.py on the correct blockspace engine: at import the block manager opens and
# flocks every claim file in the grader's $TMPDIR/pagedcheck-cpus-<uid>/ (and /tmp's), or makes that folder itself,
# and holds what it took while it is loaded; where it reaches any, it does not load (0/10). Graded on block_table (10):
# honest 10/10 in both (it reaches none).
CLAIMS_POINTS = {"block_table": 10}


# held: no run sees the grader's $TMPDIR (bubblewrap shows a tmpfs of its own or an empty sealed /tmp; the Landlock
# fallback has no rule for either folder), and the claims are descriptors closed on exec (O_CLOEXEC), so a run can
# neither open a claim file nor inherit one; its own affinity is its own (pid 0): 10/10 in both
def test_a_submission_cannot_take_the_graders_cpu_claims(tmp_path: Path, reaper: Reaper) -> None:
    from tests.tamper_grading import blockspace_in_both_isolations

    problems = blockspace_in_both_isolations(tmp_path, reaper, PY_ATTACKS / "claim_every_cpu.py", CLAIMS_POINTS)
    assert not problems, "\n".join(["claim_every_cpu (10/10 in both: no claim reached):", *problems])


# --- 5. another process's scheduling and limits (oracle/seccomp.py _OTHERS, _IOPRIO_SET) ----------------------------
# tests/hostile_review18/renice_the_grader.py on the correct blockspace engine: at import the block manager renices its
# user and its process group (who 0), and renices, pins, limits and idles its parent by pid; where any is done it does
# not load (0/10). Graded on block_table (10): honest 10/10 in both (none is done).
RENICE_POINTS = {"block_table": 10}


# held: every such call naming anything but the caller (which not PRIO_PROCESS, or a pid other than 0) is EPERM in
# both isolations: 10/10 in both
def test_a_submission_cannot_renice_pin_or_limit_another_process(tmp_path: Path, reaper: Reaper) -> None:
    from tests.tamper_grading import blockspace_in_both_isolations

    problems = blockspace_in_both_isolations(tmp_path, reaper, PY_ATTACKS / "renice_the_grader.py", RENICE_POINTS)
    assert not problems, "\n".join(["renice_the_grader (10/10 in both: nothing changed):", *problems])


def test_every_review18_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["cache_unless_mount_ro", "own_priority_by_pid", "urandom_entropy_ioctl",
                              "claim_every_cpu", "renice_the_grader"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table or f"`review18/{name}" in table for name in on_disk)
