"""Tamper suite, the eighth adversarial review's attacks (issue 17, round 8): hostile submissions written by a
reviewer who had not seen the defences landed the session before, each on top of a known bug and aimed at one of
them: alloc_failure's tries as copies of the C driver (branch alloc-tries: oracle/hw3/c/try_shared.py,
driver_try.c, alloc_failure._tried), the fork witness that reads the graded program's own calls (branch fork-refs:
fork_witness.program_returns), and a prefix free's order named by the program's own takes (main:
oracle/prefix/taken_order.py). alloc-tries was not merged: its attacks hold on main's tries (a fresh driver
replaying the program each), and are plain tests; heap-nonfatal and refusal-graded were not attacked. The table
of what each does and how it fared:
tests/hostile_review8/README.md.

Same shape as tests/test_tamper_review7.py: each submission is graded by a separate `pagedcheck` process in a world
of its own on the items it concerns, and must get exactly its honest score, leave no process, change no file outside
the scratch, and the grader must write its report. An attack that breaks the grader is a strict xfail naming the
mechanism and a fix by construction; one that holds is a plain test saying why. Each grading test runs under
bubblewrap and without it (the `scene` below).
"""

from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import (c_submission, graded_problems, prefix_problems, python_submission,  # noqa: F401
                                  reaper, scene)

C_ATTACKS = ROOT / "tests" / "submissions" / "hostile" / "review8"
PY_ATTACKS = Path(__file__).with_name("hostile_review8")
# `scene`: each attack's world, under bubblewrap and without it (the Landlock fallback): a try is a copy of the
# driver under both (try_shared.writable_places)


# --- 1. a try that counts the tries before it in the output file it shares with them (branch alloc-tries) ----------
# tests/submissions/hostile/review8/try_counted_in_output.patch on broken/alloc_failure.patch (create_sequence returns
# NULL and leaks what it built when an L2 table cannot be had). Every try of a call is a copy of one driver, and every
# copy holds the driver's standard output: the grader's own open file description of the output file, opened for
# reading and writing (tempfile.TemporaryFile, "w+b"). llm_init prints four bytes, a count of tries; a try (a pid other
# than llm_init's) reads the count with pread(1, ...) at create_sequence, and writes it back one more with pwrite:
# neither moves the description's offset nor changes the file's size, which are all end_try sets back or compares
# (try_shared.Shared). The n-th try of the call thus knows that the grader fails its n-th allocation (the ledger fails
# the k-th grant, k = 1, 2, ... in turn) and makes that one a decoy malloc(1) it does not need (review 5's decoy,
# tests/test_alloc_failure.py, which read k off the stack): the L2 table's allocation never fails. Graded on compiles
# (5) and alloc_failure weighed 5, as review 7's malloc_twice: the bug's honest grade is 5/10 (review 7's control,
# test_the_alloc_failure_bug_alone_gets_its_honest_score).
ALLOC_ITEMS = ("compiles", "alloc_failure")
ALLOC_HONEST, ALLOC_MAX = 5, 10
OUTPUT_SHARED_BROKEN = (
    "a try's copy of the driver holds the driver's standard output, the grader's own read-write description of the "
    "output file: end_try sets back its offset and size, and Shared compares only offsets, flags and sizes, so a try "
    "can pread the bytes the graded run printed and pwrite them in place (a count of tries), and the next try reads "
    "how many came before it: which allocation the grader fails, made a decoy. Fix by construction: the driver's "
    "output a write-only description of its own, opened O_WRONLY|O_APPEND apart from the grader's reading one (no "
    "process of the submission can read what any printed, and every write lands past the end), and the output "
    "file's bytes written back at end_try as the pools' are (or its hash compared, the driver ended on a change)")


def _alloc_problems(scene: Scene, reaper: Reaper, attack: str) -> list[str]:
    sub = c_submission(scene, "alloc_failure", C_ATTACKS / f"{attack}.patch")
    return graded_problems(scene, reaper, sub, ALLOC_ITEMS, ALLOC_HONEST, ALLOC_MAX, {"alloc_failure": 5})


# held on main: alloc-tries' copies of the driver were not merged (this review broke them); every try is a fresh
# driver replaying the program (oracle/hw3/alloc_failure.py), holding nothing a try before it could leave, and
# from the k-th allocation of the call on every grant fails. OUTPUT_SHARED_BROKEN is what broke the copies,
# kept as the record
def test_a_try_cannot_count_the_tries_before_it_in_the_output_file(scene: Scene, reaper: Reaper) -> None:
    problems = _alloc_problems(scene, reaper, "try_counted_in_output")
    assert not problems, "\n".join([f"try_counted_in_output (honest score {ALLOC_HONEST}/{ALLOC_MAX}):", *problems])


# --- 2. a try that counts the tries before it in the driver's memory (branch alloc-tries) ---------------------------
# tests/submissions/hostile/review8/try_counted_in_driver.patch on broken/alloc_failure.patch: the same decoy, the
# count kept in a variable of the driver, which waits for its copy meanwhile (waitpid): the try opens /proc/<its
# parent>/mem for writing (the same uid; this machine has no Yama) and writes the count one more there; the next copy,
# made from the driver, inherits it. Under bubblewrap it breaks (10/10 for the honest 5/10): the run's /proc is its
# pid namespace's, and a copy may write its parent's memory (ptrace access: the same uid, both dumpable). In the
# Landlock fallback it holds (5/10): its rules let a run read /proc, never write there (oracle/landlock.py), so the open
# for writing is refused, the try finds no count, and each real allocation fails in its turn.
DRIVER_MEMORY_BROKEN = (
    "under bubblewrap a try's copy may open /proc/<its parent>/mem for writing (the driver: the same uid, dumpable, "
    "waiting for it in waitpid) and change the driver's memory, which the next copy inherits: a count of tries, so "
    "which allocation the grader fails (a decoy), or any state of the graded run's driver the later tries start from. "
    "Fix by construction: no process of a run may reach another's memory: the driver makes itself not dumpable "
    "(prctl PR_SET_DUMPABLE 0, before any submission code; the copy inherits it) and the filter refuses "
    "PR_SET_DUMPABLE, so /proc/PID/mem and ptrace need CAP_SYS_PTRACE, which no run holds (the grader, root, still "
    "reads); or bubblewrap's runs get the Landlock fallback's rules too, where the open is refused")


# held on main: alloc-tries' copies of the driver were not merged (this review broke them); every try is a fresh
# driver replaying the program (oracle/hw3/alloc_failure.py), holding nothing a try before it could leave, and
# from the k-th allocation of the call on every grant fails. DRIVER_MEMORY_BROKEN is what broke the copies,
# kept as the record. Moot since proc-mem: a driver's run has no procfs in either isolation, so the open of
# /proc/<parent>/mem fails and the attack cannot even try; the test still asserts the honest score
def test_a_try_cannot_count_the_tries_before_it_in_the_drivers_memory(scene: Scene, reaper: Reaper) -> None:
    problems = _alloc_problems(scene, reaper, "try_counted_in_driver")
    assert not problems, "\n".join([f"try_counted_in_driver (honest score {ALLOC_HONEST}/{ALLOC_MAX}):", *problems])


# --- 3. a fork whose references are taken only where no one reads the pool (branch fork-refs) -----------------------
# tests/hostile_review8/fork_unwatched.py on fork_no_incref: the fork witness now reads the references from the
# graded program's own later calls, replayed whole in a fresh process (fork_witness.program_returns), by their returns
# alone; a graded run reads the pool after every call (observe: a pread of the pools' memory file, whose access time
# the kernel writes at every read). The Python process holds that file (pyserve.hold_pools), reads its access time at
# each call, and knows a graded run by a read between two of its calls: there its forks take no reference
# (fork_no_incref), in the witness's replay, never read, they take them. Graded on llm_init (6), fork (8) and
# append_cow weighed 2, as review 7's fork_kept_for_free: honest 8/16 (review 7's control,
# test_the_fork_bug_alone_gets_its_honest_score).
FORK_ITEMS = ("llm_init", "fork", "append_cow")
FORK_HONEST, FORK_MAX = 8, 16
UNWATCHED_BROKEN = (
    "the fork witness's replay (program_returns) reads returns only, where every graded run reads the pool after "
    "each call: the pools' memory file's access time, which the kernel writes at each of the grader's preads, tells "
    "the served process which run it is in (the file is open in it), and a fork takes its references only where "
    "the pool is never read. Fix by construction: the witness's run observes exactly as a graded run does (the same "
    "reads after every call, or none in either), so nothing of the grader's reads tells them apart; an access time "
    "frozen alone (O_NOATIME) is not enough: inotify reports each read (fork_unwatched_inotify)")


def _python_problems(scene: Scene, reaper: Reaper, base: str, attack: str, items: tuple[str, ...], weighed: str,
                     honest: int, full: int) -> list[str]:
    """tests/hostile_review8/<attack>.py on the broken variant `base`, graded on `items` with `weighed` worth 2:
    what its grade got that the honest score does not allow. The module's name is drawn afresh."""
    sub = python_submission(scene, "review8", base, PY_ATTACKS / f"{attack}.py")
    return graded_problems(scene, reaper, sub, items, honest, full, {weighed: 2})


# Held since the grader's reads of the pools' file write no access time (O_NOATIME, pool_file.py) and no run may watch
# a file (oracle/seccomp.py): no process ever sees a read, so this submission takes every process for the witness's
# and forks correctly in all of them, graded runs included. What it is graded is what every run of it did, a correct
# fork: FORK_MAX. The break (UNWATCHED_BROKEN, kept as the record) was 14/16: the bug shown to graded runs and hidden
# from the witness; 8/16 would mean the channel open again and the witness catching it.
@pytest.mark.bwrap_repeat  # O_NOATIME and the filter, the same in both
def test_a_fork_that_takes_references_only_where_the_pool_is_unread_is_graded_as_every_run_saw_it(
        scene: Scene, reaper: Reaper) -> None:
    problems = _python_problems(scene, reaper, "fork_no_incref", "fork_unwatched", FORK_ITEMS, "append_cow",
                                FORK_MAX, FORK_MAX)
    assert not problems, "\n".join([f"fork_unwatched (no run sees a read: {FORK_MAX}/{FORK_MAX}):", *problems])


# --- 4. a release order of another shape, charged to no one (main: oracle/prefix/taken_order.py) -------------------
# tests/hostile_review8/release_swapped.py, the kv_cache.py of forward_order_free's pool: a free of three blocks or more
# gives them back head first with the first two swapped, a shorter one tail first. Its only bug is the release order
# (reverse_order_free's rule: a free gives its blocks back tail first). taken_order names that rule only where a free's
# blocks taken in exactly the opposite order explain the takes, and any other wrong order free_queue's; the directed
# item reverse_order_free reads past a difference of free_queue's rule (checks._taken_over: "another rule's free
# order"), and free_queue's own program frees one-block requests only, where no release order shows: the bug costs
# nothing. Graded on free_queue weighed 4 and reverse_order_free (8), as review 7's drain attacks: the release order's
# bug is honest 4/12 (review 7's control, test_forward_order_free_alone_gets_its_honest_score); measured 12/12 under
# bubblewrap and in the Landlock fallback (reverse_order_free "passed").
QUEUE_ITEMS = ("free_queue", "reverse_order_free")
QUEUE_HONEST, QUEUE_MAX = 4, 12
RELEASE_SHAPE_BROKEN = (
    "taken_order charges a wrong order of one free's blocks to the release order (reverse_order_free) only where "
    "exactly their opposite order explains the takes, and to free_queue otherwise; reverse_order_free's item reads "
    "past a free_queue difference, and free_queue's program (one-block requests) never shows a release order: a free "
    "that gives its blocks back in any other wrong order (head first with two swapped) is charged to no item. Fix by "
    "construction: the rule named by what the takes show, not by one shape: where the blocks a call takes are blocks "
    "one free put back, in an order other than that free's, it is the release order's whatever the permutation; "
    "free_queue's only where reordering within each free cannot explain the takes (blocks taken from the wrong end, "
    "or another free's first); and an item never reads past a difference on its own program's steps that its rule "
    "may have made")


def _prefix_problems(tmp_path: Path, reaper: Reaper, attack: str, without_bwrap: bool) -> list[str]:
    return prefix_problems(tmp_path, reaper, "forward_order_free", PY_ATTACKS / f"{attack}.py", QUEUE_ITEMS,
                           QUEUE_HONEST, QUEUE_MAX, {"free_queue": 4}, without_bwrap)


# held (branch taken-settle): taken_order names the rule by what the takes show, each free's own blocks in another
# order the release order's whatever the permutation; RELEASE_SHAPE_BROKEN is what broke it, kept as the record
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
@pytest.mark.bwrap_repeat  # the program's own takes are judged, in both
def test_a_release_order_of_another_shape_is_still_the_release_orders(without_bwrap: bool, tmp_path: Path,
                                                                      reaper: Reaper) -> None:
    problems = _prefix_problems(tmp_path, reaper, "release_swapped", without_bwrap)
    assert not problems, "\n".join([f"release_swapped (honest score {QUEUE_HONEST}/{QUEUE_MAX}):", *problems])


# --- 5. a try that counts the tries before it past the pools' windows (branch alloc-tries) --------------------------
# tests/submissions/hostile/review8/try_counted_past_the_windows.patch on broken/alloc_failure.patch: the same decoy,
# the count kept in the pools' memory file, which the driver and each copy share. end_try writes back the windows the
# grader placed (PoolFile.snapshot: up to its own end) and compares the file's size; the file may grow (no
# F_SEAL_GROW: "a submission's process may have grown it"). So the graded run's llm_init grows it by a page (ftruncate
# on the descriptor it finds in /proc/self/fd), and each try reads and writes its count there, past the windows, with
# the size unchanged. The count must lie past the last window's page (PoolFile rounds its end up to a page, and
# writes that page back): a first version that counted at the file's size was written back each try and held.
# The file-size limit (RLIMIT_FSIZE, the 1 MiB output limit) refuses growing or writing past 1 MiB, not this small
# pool (programs/allocation_failure.txt: 2560 bytes). Measured 10/10 for the honest 5/10, bwrap and Landlock.
PAST_WINDOWS_BROKEN = (
    "end_try writes back the pools' file only up to the windows' end and compares its size, and the file may grow: a "
    "graded run grows it, and a try keeps a count past the windows (pread/pwrite of the driver's descriptor) that the "
    "next try reads, so it knows which allocation the grader fails (a decoy). Fix by construction: the file sealed "
    "against growing too (F_SEAL_GROW once the window is placed; the grader places windows before the driver runs), "
    "or end_try writes back every byte of the file as it stood at begin_try, and a try that changed the file's size "
    "ends the driver as now")


# held on main: alloc-tries' copies of the driver were not merged (this review broke them); every try is a fresh
# driver replaying the program (oracle/hw3/alloc_failure.py), holding nothing a try before it could leave, and
# from the k-th allocation of the call on every grant fails. PAST_WINDOWS_BROKEN is what broke the copies,
# kept as the record
def test_a_try_cannot_count_the_tries_before_it_past_the_pools_windows(scene: Scene, reaper: Reaper) -> None:
    problems = _alloc_problems(scene, reaper, "try_counted_past_the_windows")
    assert not problems, "\n".join([f"try_counted_past_the_windows (honest score {ALLOC_HONEST}/{ALLOC_MAX}):",
                                    *problems])


# --- 6. the same, told by inotify (branch fork-refs) -----------------------------------------------------------------
# tests/hostile_review8/fork_unwatched_inotify.py on fork_no_incref: as attack 3, the graded run told from the witness's
# replay by the grader's reads of the pools' memory file, here reported by inotify (IN_ACCESS on the descriptor the
# process holds), which no frozen access time silences. The control and the honest score: as attack 3.
INOTIFY_BROKEN = (
    "the grader's preads of the pools' memory file after each call of a graded run are reported to the served "
    "process by inotify (IN_ACCESS on /proc/self/fd/N, the file it holds), with or without an access time written: "
    "the fork witness's replay, read by its returns alone, is told apart, and the fork takes its references only "
    "there. Fix by construction: the witness's run observes exactly as a graded run does (the same reads after every "
    "call), so no signal of the grader's reads tells them apart; or the grader reads the pools through a mapping of "
    "its own, which raises no inotify event and writes no access time")


# Held as the one above: inotify is refused (oracle/seccomp.py), so no process sees a read and every one forks
# correctly: FORK_MAX (INOTIFY_BROKEN, the break, kept as the record).
@pytest.mark.bwrap_repeat  # the filter, the same in both
def test_a_fork_told_by_inotify_where_the_pool_is_unread_is_graded_as_every_run_saw_it(scene: Scene,
                                                                                       reaper: Reaper) -> None:
    problems = _python_problems(scene, reaper, "fork_no_incref", "fork_unwatched_inotify", FORK_ITEMS, "append_cow",
                                FORK_MAX, FORK_MAX)
    assert not problems, "\n".join([f"fork_unwatched_inotify (no run sees a read: {FORK_MAX}/{FORK_MAX}):", *problems])


# --- 7. a try that counts the tries before it by swapping files' names (branch alloc-tries) --------------------------
# tests/submissions/hostile/review8/try_counted_by_renames.patch on broken/alloc_failure.patch: the same decoy, the
# count kept in the folder the run may write (bubblewrap's private /tmp, Landlock's $TMPDIR), which try_shared.Shared
# reads before and after each try as each entry's path, size, mode and modification time, never its bytes or inode.
# The graded run's llm_init makes eight pairs of one-byte files, "0" and "1", each pair with one modification time
# (made again until the clock's coarse tick gives both the same); a try reads the count from the bytes of each pair's
# first name and writes it one more by swapping names (three renames: every file keeps its size, mode and mtime).
RENAMES_BROKEN = (
    "try_shared.Shared knows a file in the run's writable folders by its path, size, mode and modification time: a "
    "try that swaps the names of two files alike in all four (rename changes none) leaves a bit the next try reads, "
    "eight pairs a count of tries, so it knows which allocation the grader fails (a decoy). Fix by construction: "
    "a try shares no writable folder with the next (each copy gets a fresh empty /tmp and /dev/shm mount, or $TMPDIR, "
    "as a fresh replay would), or the folders' entries compared by inode, ctime and bytes, the driver ended on any "
    "change")


# held on main: alloc-tries' copies of the driver were not merged (this review broke them); every try is a fresh
# driver replaying the program (oracle/hw3/alloc_failure.py), holding nothing a try before it could leave, and
# from the k-th allocation of the call on every grant fails. RENAMES_BROKEN is what broke the copies,
# kept as the record
def test_a_try_cannot_count_the_tries_before_it_by_swapping_file_names(scene: Scene, reaper: Reaper) -> None:
    problems = _alloc_problems(scene, reaper, "try_counted_by_renames")
    assert not problems, "\n".join([f"try_counted_by_renames (honest score {ALLOC_HONEST}/{ALLOC_MAX}):", *problems])


# --- 8. a try told by its pid, refusing before any allocation (branch alloc-tries) ---------------------------------
# tests/submissions/hostile/review8/try_refused_in_copy.patch on broken/alloc_failure.patch: no channel at all. A try
# is a copy of the driver, a process of another pid than the one that made llm_init (each try was a fresh replay,
# where llm_init's process is the call's). In a copy, create_sequence returns NULL at once, allocating nothing: the
# grader finds no failure injected (alloc_failure._tried returns None where not last_call.injected_failure) and the
# try passes; the graded runs never see the refusal.
PID_BROKEN = (
    "a try is a copy of the driver, which the call tells by its pid (not llm_init's); a call that refuses at once "
    "there, allocating nothing, has no failure injected, and alloc_failure._tried counts such a try as passed: the "
    "unchecked path is never reached. Fix by construction: a try whose call made fewer allocations than the k the "
    "grader scheduled is not passed but compared with the graded run of the same call (its return and effects must "
    "be the same as with no allocation failing up to k: a call that allocates nothing returns what it returned "
    "there), or charged to alloc_failure as a call that behaves otherwise when copied (no copy can keep "
    "llm_init's pid, so the verdict must not rest on a copy behaving as the original)")


# held on main: alloc-tries' copies of the driver were not merged (this review broke them); every try is a fresh
# driver replaying the program (oracle/hw3/alloc_failure.py), holding nothing a try before it could leave, and
# from the k-th allocation of the call on every grant fails. PID_BROKEN is what broke the copies,
# kept as the record
def test_a_try_told_by_its_pid_cannot_refuse_its_way_past_the_failure(scene: Scene, reaper: Reaper) -> None:
    problems = _alloc_problems(scene, reaper, "try_refused_in_copy")
    assert not problems, "\n".join([f"try_refused_in_copy (honest score {ALLOC_HONEST}/{ALLOC_MAX}):", *problems])


def test_every_review8_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted(["fork_unwatched", "fork_unwatched_inotify", "release_swapped", "try_counted_by_renames",
                              "try_counted_in_driver", "try_counted_in_output", "try_counted_past_the_windows",
                              "try_refused_in_copy"])
    table = (PY_ATTACKS / "README.md").read_text()
    assert all(f"`{name}" in table or f"review8/{name}" in table for name in on_disk)
