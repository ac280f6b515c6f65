"""Tamper suite, the fourth adversarial review's attacks (issue 17, round 4): hostile submissions written by a
reviewer who had not seen the design, in classes the earlier rounds had not tried: what the system call filters let
through (io_uring's socket, the kernel reading the process's memory for it), telling a probe's run from a graded
one, what of a hidden item reaches a student's results.json, a prefix pool that says nothing where its bug shows,
and Python return values of exotic types; with and without bubblewrap (the `scene` fixture).

Same shape as tests/test_tamper_review3b.py: each attack sits on a known bug (C: tests/submissions/broken/<base>.patch,
then tests/submissions/hostile/review4/<attack>.patch; Python: engine/llm_memory.py with tests/broken/<base>.patch's
calls, then tests/hostile_review4/<attack>.py), is graded by a separate `pagedcheck` process in a world of its own
on the items it concerns, and must get no more than the bug's honest score, leave no process, change no file
outside the scratch, and the grader must write its report (tests/test_tamper_review2.attack_problems). An attack
that breaks the grader today is a strict xfail naming the mechanism and a fix by construction.
"""

import json
import socket
from pathlib import Path

import pytest

from tests.conftest import REFERENCE_C, SUBMISSIONS, patched
from tests.tamper import Reaper, Scene
from tests.tamper_grading import (check_report, grade_args, grade_in_scene, python_module, reaper,  # noqa: F401
                                  scene)
from tests.test_tamper_review import Attack
from tests.test_tamper_review2 import attack_problems

C_ATTACKS = SUBMISSIONS / "hostile" / "review4"
PY_ATTACKS = Path(__file__).with_name("hostile_review4")

# Once broken without bubblewrap: oracle/seccomp.py refused an internet socket by socket()'s first argument and let
# io_uring through (IORING_OP_SOCKET makes the socket in the kernel, with no socket() call for the filter to see), so
# each llm_init's datagram reached 127.0.0.1. Held by construction since every run's filter refuses io_uring_setup,
# io_uring_enter and io_uring_register (EPERM): a socket is made only by socket(), the call the filter reads
URING_DATAGRAM = Attack("uring_datagram", "python", "fork_breaks_at_null_l1", ("llm_init", "l1_traversal"), 6)
# the same in C: the driver runs under the same filter; libc's syscall() is reached by its address in libc's symbol
# table; honest 10 (append_cow's bug)
URING_DATAGRAM_C = Attack("uring_datagram_c", "c", "append_cow", ("compiles", "null_engine"), 10)
URING = (URING_DATAGRAM, URING_DATAGRAM_C)
ATTACKS = [
    URING_DATAGRAM,
    URING_DATAGRAM_C,
    # honest 5 (compiles): freeing a block table stops at the first NULL L1 slot
    # Once 9/9 for an honest 5: a probe's driver served every block from the C library's heap, a graded run's from
    # the fence's span [0x200000000000, +1 TiB), so one look at a pointer told the submission it was probed, and it
    # kept its bug where no probe looks. Held by construction: a probe's driver gets its blocks from the same ledger
    # and span as a graded run (driver.c keeps the fence through the probes); a stray access in a probe's run is
    # the probe's premise broken, left to memory_safety and charged there (c/probe_adapter.py)
    Attack("probe_spotted", "c", "l1_traversal", ("compiles", "l1_traversal"), 5),
]
# on the reference (base "none"): its refusal is the bug, and what it buys is the course's hidden program, not points.
# Honest 8/18: create_free fails (whichever program shows its rule's failure), tail_insertion passes (the failure
# its program met is create_free's)
# Once a leak: settlement charged the visible create_free with what the hidden item's program saw, and its
# results.json output quoted those calls ("found by the tests of tail_insertion"). Held by construction: what a
# reader shown later than the item it charges saw stays in the staff's report.json; the student's text says only
# that a test not shown found it (oracle/grading/grader.py, _settled)
HIDDEN_PROGRAM_SHOWN = Attack("hidden_program_shown", "c", "none", ("compiles", "create_free", "tail_insertion"), 8)
ATTACKS.append(HIDDEN_PROGRAM_SHOWN)
# a prefix pool (tests/test_tamper_prefix.py's layout) on forward_order_free; honest 4/12 under a course's rubric that
# weighs free_queue 4 and reverse_order_free 8 (on the default rubric, 8 points each, it changes which item fails)
# Once 8/12 for an honest 4/12: the free queue sent null (the served adapter runs in the submission's interpreter) was
# taken as a pool with none to show, reverse_order_free's check was skipped and the bug charged to free_queue where
# the next admit showed it. Held by construction: what a pool shows is its shape's (the adapters' `shows`, read in
# the grader's own process): a null there is a reply the grader cannot read (oracle/prefix/remote.py)
FREE_QUEUE_UNSEEN = Attack("free_queue_unseen", "prefix", "forward_order_free", ("free_queue", "reverse_order_free"), 4)
ATTACKS.append(FREE_QUEUE_UNSEEN)
# honest 5 (compiles): freeing a table reads l2[16]
# honest 5 (compiles): freeing a table reads l2[16], by the kernel: process_vm_readv on the process itself (libc's
# syscall() by address). Once 15/15: natively a kernel read of the guard page is an EFAULT, no fault the fence sees,
# and valgrind does not check the memory the call reads. Held by construction: every run's filter (valgrind's runs
# included) refuses process_vm_readv and process_vm_writev (oracle/seccomp.py); the patch then reads it plainly
ATTACKS.append(Attack("overread_by_kernel", "c", "memory_safety", ("compiles", "memory_safety"), 5))
# held by construction: a returned object becomes a number the server gives it (pyserve.Server._handle, kept by
# identity), and an int call's value is sent only when its type is exactly int (pyserve._value: else its text, made
# within the child's own CPU limit); the grader decodes plain JSON and never holds, compares or prints an object of
# the submission's. Honest 6 (llm_init; free_count fails), as review3b's base
ATTACKS.append(Attack("hostile_dunders", "python", "free_count_not_incremented", ("llm_init", "free_count"), 6))
# honest 10 (append_cow's bug on compiles, null_engine); what breaks is the grader's memory, not the score
# Once the grader peaked at 738 MB (36 MB for the bug alone): the ledger kept every page of span an mprotect asked to
# make accessible, 64 at a time, for as many requests as a call made (40,000 a call here). Held by construction: the
# ledger keeps at most STRAYS_PER_CALL (64) stray pages a call and refuses the rest (oracle/native/ledger.py), so
# what it keeps is bounded by the calls the grader makes
STRAY_PAGE_FLOOD = Attack("stray_page_flood", "c", "append_cow", ("compiles", "null_engine"), 10)
ATTACKS.append(STRAY_PAGE_FLOOD)
LEDGER_BOUND_KIB = 512 << 10  # over ten times the grader's peak for the bug alone on these items (35,600 KiB, measured)
BY_NAME = {attack.name: attack for attack in ATTACKS}
# correct submissions written in an unusual way (not attacks): tests/hostile_review4/<name>.py on engine/llm_memory.py
UNUSUAL = ("enum_returns",)


def submission(scene: Scene, attack: Attack, **names: str) -> Path:
    """Writes the attack's submission into the scene (its @NAME@s filled, `names` too); what `pagedcheck grade`
    is given."""
    if attack.lang == "python":
        (scene.mods / "review4_attack.py").write_text(
            scene.fill(python_module(attack.base, (PY_ATTACKS / f"{attack.name}.py").read_text()), **names))
        return Path("review4_attack")
    base = REFERENCE_C.read_text()
    if attack.base != "none":
        base = patched(base, SUBMISSIONS / "broken" / f"{attack.base}.patch")
    source = patched(base, C_ATTACKS / f"{attack.name}.patch")
    sub = scene.root / "submission"
    sub.mkdir()
    (sub / "llm_memory.c").write_text(scene.fill(source, **names))
    return sub


def _at_most(folder: Path, expected: float, max_score: float) -> list[str]:
    """check_report's problems, where a score below `expected` is no problem (an attack that, once the grader holds,
    harms only itself: a reply refused, a run ended)."""
    problems = check_report(folder, expected, max_score)
    try:
        lower = json.loads((folder / "report.json").read_text())["score"] < expected
    except (OSError, ValueError, KeyError, TypeError):
        return problems
    return [p for p in problems if not p.startswith(("score ", "exit_status"))] if lower else problems


def _datagrams(udp: socket.socket) -> int:
    count = 0
    while True:
        try:
            udp.recv(1 << 16)
        except BlockingIOError:
            return count
        count += 1


def _uring_datagram_params() -> list:
    """Bubblewrap's network namespace holds it (no route out); without it, the filter's refusal of io_uring."""
    return [pytest.param(attack.name, without, id=f"{attack.lang}-{'without-bwrap' if without else 'bwrap'}")
            for attack in URING for without in (False, True)]


@pytest.mark.parametrize("name, without_bwrap", _uring_datagram_params())
def test_a_socket_made_by_io_uring_reaches_no_one(name: str, without_bwrap: bool, tmp_path: Path,
                                                  reaper: Reaper) -> None:
    attack = BY_NAME[name]
    scene = Scene(tmp_path, without_bwrap=without_bwrap)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            udp.bind(("127.0.0.1", 0))
            udp.setblocking(False)
            sub = submission(scene, attack, UDP_PORT=str(udp.getsockname()[1]))
            problems = attack_problems(scene, reaper, attack, sub)
            received = _datagrams(udp)
    finally:
        scene.close()
    problems += [f"{received} UDP datagram(s) from a socket io_uring made reached 127.0.0.1"] if received else []
    assert not problems, "\n".join([f"{name} (honest score {attack.expected}):", *problems])


# each held by the grader whatever the isolation (one ledger for probes and graded runs, every run's system call
# filter, the server's numbering of returned objects): CI grades it without bubblewrap, the long profile with it too
@pytest.mark.bwrap_repeat
@pytest.mark.parametrize("name", [pytest.param(a.name, marks=pytest.mark.xfail(strict=True, reason=a.broken))
                                  if a.broken else a.name for a in ATTACKS
                                  if a not in (*URING, HIDDEN_PROGRAM_SHOWN, FREE_QUEUE_UNSEEN, STRAY_PAGE_FLOOD)])
def test_review4_attack_gets_no_more_than_its_honest_score(name: str, scene: Scene, reaper: Reaper) -> None:
    attack = BY_NAME[name]
    problems = attack_problems(scene, reaper, attack, submission(scene, attack))
    assert not problems, "\n".join([f"{name} (honest score {attack.expected}):", *problems])


def test_every_review4_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")])
    assert on_disk == sorted([a.name for a in ATTACKS] + list(UNUSUAL))


SECRET_PROGRAM = """\
# A course's own program, run by a hidden item: its calls are the course's to keep
llm_init 1088
create_sequence 7919 3
append_kv 7919 4241
free_sequence 7919
"""
COURSE_RUBRIC = """\
title = "a course's rubric: create_free visible, tail_insertion hidden with a program of the course's own"
[[item]]
id = "compiles"
points = 5
[[item]]
id = "create_free"
points = 10
visibility = "visible"
[[item]]
id = "tail_insertion"
points = 3
visibility = "hidden"
[item.options]
programs = ["tail_insertion", "our_secret_order"]
"""


@pytest.mark.bwrap_repeat  # what the grader writes into results.json
def test_a_hidden_items_program_reaches_no_visible_output(scene: Scene, reaper: Reaper) -> None:
    (scene.rubric_dir / "programs").mkdir()
    (scene.rubric_dir / "programs" / "our_secret_order.txt").write_text(SECRET_PROGRAM)
    rubric = scene.rubric_dir / "rubric.toml"
    rubric.write_text(COURSE_RUBRIC)
    evidence = grade_in_scene(scene, reaper, grade_args(submission(scene, HIDDEN_PROGRAM_SHOWN), scene, rubric))
    problems = evidence.problems + check_report(scene.out, HIDDEN_PROGRAM_SHOWN.expected, 18)
    results = json.loads((scene.out / "results.json").read_text())
    shown = [test["name"] for test in results["tests"] if test["visibility"] != "hidden" and "7919" in test["output"]]
    shown += ["the top-level output"] if "7919" in results["output"] else []
    problems += [f"results.json shows the hidden program's call create_sequence(engine, 7919, 3) in {where}"
                 for where in shown]
    assert not problems, "\n".join(["hidden_program_shown:", *problems])


def _prefix_weighted_problems(scene: Scene, reaper: Reaper, attacked: bool) -> list[str]:
    """forward_order_free's pool (with free_queue_unseen's kv_cache.py when `attacked`) graded under a course's
    rubric weighing free_queue 4 and reverse_order_free 8: what its grade got that the honest 4/12 does not allow."""
    from tests.tamper_grading import prefix_grade_args, prefix_rubric
    from tests.test_tamper_prefix import submission as prefix_submission

    attack = FREE_QUEUE_UNSEEN
    sub = prefix_submission(scene.mods / "student", attack.base, None)
    if attacked:
        (sub / "kv_cache.py").write_text((PY_ATTACKS / f"{attack.name}.py").read_text())
    rubric = prefix_rubric(scene.rubric_dir / "rubric.toml", attack.items)
    rubric.write_text(rubric.read_text().replace(
        'name = "Free queue: take from the head, free to the tail"\npoints = 8',
        'name = "Free queue: take from the head, free to the tail"\npoints = 4'))
    evidence = grade_in_scene(scene, reaper, prefix_grade_args(sub, scene, rubric))
    return evidence.problems + (_at_most if attacked else check_report)(scene.out, attack.expected, 12)


def test_forward_order_free_alone_scores_4_of_12_on_the_weighted_rubric(scene: Scene, reaper: Reaper) -> None:
    problems = _prefix_weighted_problems(scene, reaper, attacked=False)
    assert not problems, "\n".join(["forward_order_free alone:", *problems])


@pytest.mark.bwrap_repeat  # the shape's `shows`, read in the grader's own process
def test_a_prefix_pool_that_hides_its_free_queue_gets_no_more(scene: Scene, reaper: Reaper) -> None:
    problems = _prefix_weighted_problems(scene, reaper, attacked=True)
    assert not problems, "\n".join([f"free_queue_unseen (honest score {FREE_QUEUE_UNSEEN.expected}/12):", *problems])


def test_a_correct_python_submission_returning_an_int_enum_gets_full_marks(scene: Scene, reaper: Reaper) -> None:
    from tests.tamper import ROOT
    from tests.test_grade import small_rubric
    from tests.tamper_grading import max_points

    items = ("llm_init", "create_free", "append_cow")
    engine = (ROOT / "engine" / "llm_memory.py").read_text()
    (scene.mods / "review4_unusual.py").write_text(f"{engine}\n\n{(PY_ATTACKS / 'enum_returns.py').read_text()}")
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
    evidence = grade_in_scene(scene, reaper, grade_args(Path("review4_unusual"), scene, rubric))
    full = max_points(items, "python")
    problems = evidence.problems + check_report(scene.out, full, full)
    assert not problems, "\n".join(["enum_returns:", *problems])


def test_stray_pages_asked_for_cost_the_grader_a_bounded_memory(tmp_path: Path) -> None:
    """With bubblewrap only: the ledger is the same without it. The grader runs under a launcher that prints the
    largest resident size of it and its children (as test_tamper_review's huge-reply test)."""
    import resource
    import subprocess
    import sys

    from tests.test_grade import small_rubric

    scene = Scene(tmp_path)
    try:
        sub = submission(scene, STRAY_PAGE_FLOOD, FLOOD="40000")
        rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(STRAY_PAGE_FLOOD.items))
        launcher = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
                    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
        guard = 3 << 30  # RLIMIT_AS on the grader: keeps this shared machine safe, far above the bound
        done = subprocess.run([sys.executable, "-c", launcher, sys.executable, "-m", "oracle.cli",
                               *grade_args(sub, scene, rubric)], cwd=scene.work, env=scene.env(), capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=600,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (guard, guard)))
        peak = int(done.stdout.split()[-1])  # KiB
        problems = _at_most(scene.out, STRAY_PAGE_FLOOD.expected, 10)
    finally:
        scene.close()
    if peak >= LEDGER_BOUND_KIB:
        problems.append(f"the grader (or a child) peaked at {peak} KiB, over {LEDGER_BOUND_KIB} KiB")
    assert not problems, "\n".join(["stray_page_flood:", *problems])
