"""Tamper suite, the adversarial review's attacks: a hostile student's submissions that try to score more
than their honest score, with and without bubblewrap (tests/tamper.py's Scene(without_bwrap=True)).

Each attack sits on a known bug (C: tests/submissions/broken/<base>.patch, then
tests/submissions/hostile/review/<attack>.patch; Python: engine/llm_memory.py with tests/broken/<base>.patch's
calls, then tests/hostile_review/<attack>.py) and is graded by a separate `pagedcheck` process in a world of
its own on the rubric items the attack concerns. It must get no more than the bug's honest score (the same
score: an attack that harms only itself is listed with its own lower score), leave no process, change no file
outside the scratch, leak no secret, and the grader must write its report. An attack that currently breaks
the grader is marked xfail(strict=True) with the mechanism that let it through.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REFERENCE_C, SUBMISSIONS, patched
from tests.tamper import ROOT, Reaper, Scene
from tests.tamper_grading import (check_report, grade_args, grade_in_scene, max_points, python_module,  # noqa: F401
                                  reaper, scene)
from tests.test_grade import small_rubric

C_ATTACKS = SUBMISSIONS / "hostile" / "review"
PY_ATTACKS = Path(__file__).with_name("hostile_review")


@dataclass(frozen=True)
class Attack:
    name: str  # C: C_ATTACKS/<name>.patch; Python: PY_ATTACKS/<name>.py
    lang: str  # "c" or "python"
    base: str  # the known bug it sits on
    items: tuple[str, ...]  # the rubric items it is graded on
    expected: int  # the score it earns: the bug's honest score there
    broken: str = ""  # when the grader does not hold today: what broke (the test is then a strict xfail)
    timeout: float = 2.0
    queues: tuple[str, ...] = ()  # POSIX message queues it makes, which must not outlive the grading
    failing: tuple[str, ...] = ()  # items worth 0 points the bug fails honestly: they must still fail


ATTACKS = [
    # held since the submission's object is sealed (build.py _sealed): its read() took the driver's request
    # loop and rewrote each probe edit (9 for an honest 5)
    Attack("driver_read_interposed", "c", "l1_traversal", ("compiles", "l1_traversal"), 5),
    # held since no Python verdict rests on an edit made in the submission's interpreter (oracle/hw3/evidence.py):
    # the grader never asks for move_l2, so making it a no-op changes nothing. It scored 10/10 for an honest 6/10;
    # the honest score is 6/6 now: only that edit showed fork_breaks_at_null_l1's bug, and l1_traversal's own
    # programs, which rest on the engine's objects alone, are not graded for Python either (evidence.ITEMS)
    Attack("server_ops_replaced", "python", "fork_breaks_at_null_l1", ("llm_init", "l1_traversal"), 6),
    # our own attack on the same class: the server's white-box read of the engine rewritten to report the active
    # list in creation order (83/83 on the whole rubric for an honest 70/83: tail_insertion and fuzz). Held since
    # the grader reads none of a Python engine's objects (oracle/hw3/unread.py): read_engine is never asked for,
    # so rewriting it changes nothing; the list's order shows in no return value and no pool byte, so
    # tail_insertion is not graded for Python (6/6 honest and attacked alike)
    Attack("state_forged", "python", "create_at_head", ("llm_init", "tail_insertion"), 6),
]
ATTACKS += [
    # both refused at build now (c/refusal.py: valgrind's client-request preamble in the object; a `syscall`
    # instruction), 0: RUNNING_ON_VALGRIND hid an out-of-bounds read from valgrind (15 for an honest 5), and an
    # inline-asm mmap leaked Sequences behind the accounting (11 for an honest 5). A program that spots valgrind
    # another way (/proc/self/maps) and changes what the grader observes fails memory_safety by the native run's
    # comparison (tests/test_tamper_c2.py); one that changes nothing observed stays open (the closing note)
    Attack("valgrind_detected", "c", "memory_safety", ("compiles", "memory_safety"), 0),
    Attack("leak_behind_accounting", "c", "llm_destroy", ("compiles", "llm_destroy"), 0),
]
ATTACKS += [
    # held: RLIMIT_MSGQUEUE is 0; and its constructor is refused at build now (c/refusal.py): 0
    Attack("mqueue_outlives", "c", "append_cow", ("compiles", "null_engine", "append_cow"), 0,
           queues=tuple(f"/pagedcheck-review-mq-{i}" for i in range(3))),
]
ATTACKS += [
    Attack("huge_reply", "python", "fork_breaks_at_null_l1", ("llm_init", "l1_traversal"), 0),  # it never loads
]
ATTACKS += [
    Attack("newline_label", "python", "fork_breaks_at_null_l1", ("llm_init", "l1_traversal"), 0),  # see below
]
ATTACKS += [
    # held as root; 6/6 (was 6/10, then 10/10): fork_breaks_at_null_l1's bug shows only to an edit, and
    # l1_traversal is not graded for Python now
    Attack("spawn_daemon", "python", "fork_breaks_at_null_l1", ("llm_init", "l1_traversal"), 6),
]
REPLY_FRAMES = (
    "the C adapter's _receive (oracle/hw3/c/adapter.py) trusts the frame the driver's reply descriptor carries, "
    "and the submission shares the driver's process: argv[2], which a constructor sees, names that descriptor")
ATTACKS += [
    # its act is in a constructor, refused at build now (c/refusal.py: no code outside the API calls): 0
    Attack("reply_flood", "c", "append_cow", ("compiles", "null_engine"), 0),
    # held since replies are bounded and checked before use (oracle/hw3/c/adapter.py reply_bound): a frame of 4
    # bytes (no status byte) made data[4] raise IndexError, the grader's error instead of the failing call; and
    # now refused at build, since its constructor runs code outside the API calls (c/refusal.py): 0
    Attack("reply_short", "c", "append_cow", ("compiles", "null_engine"), 0),
]
ATTACKS += [
    Attack("printed_summary", "c", "append_cow", ("compiles", "null_engine"), 5),  # held: see the terminal test
]
ATTACKS += [
    Attack("udp_datagram", "c", "append_cow", ("compiles", "null_engine"), 10),  # see the UDP test (the table
    # runs it with a port no one listens on)
]
ATTACKS += [
    Attack("proc_cmdlines", "python", "fork_breaks_at_null_l1", ("llm_init", "l1_traversal"), 6),  # held; see
    # test_another_process_command_line_reaches_no_report
]
ATTACKS += [
    # held since a package folder is named by its path (oracle/prefix/grade.py, pylocate): its parent went first
    # on the grader's own sys.path, so an xml.py beside it ran inside the grader (100 for an honest 72; the
    # honest score is 80 since the rubric's fuzz item weighs 12, the new append item 8)
    Attack("prefix_shadow", "prefix", "hash_not_chained", (), 80),
]
ATTACKS += [
    Attack("html_label", "python", "fork_breaks_at_null_l1", ("llm_init", "l1_traversal"), 0),  # held; see below
]
BY_NAME = {attack.name: attack for attack in ATTACKS}
# The attacks the isolation itself holds (a process, the network, what /proc shows): CI grades them in both. Every
# other one is held by the grader whatever the isolation (a refusal at build, the evidence it reads, a bounded reply,
# its own text): CI grades it without bubblewrap, the long profile with it too (bwrap_repeat, tests/conftest.py)
BY_ISOLATION = {"spawn_daemon", "udp_datagram", "proc_cmdlines"}


def attack_params(attacks: list[Attack]) -> list:
    """The attacks' names as params: an xfail for each one `broken`, bwrap_repeat for each one not BY_ISOLATION."""
    return [pytest.param(a.name, marks=[*([pytest.mark.xfail(strict=True, reason=a.broken)] if a.broken else []),
                                        *([] if a.name in BY_ISOLATION else [pytest.mark.bwrap_repeat])])
            for a in attacks]


HONEST = [("c", "l1_traversal", ("compiles", "l1_traversal"), 5),
          ("c", "append_cow", ("compiles", "null_engine", "append_cow"), 10),
          ("c", "memory_safety", ("compiles", "memory_safety"), 5),
          ("c", "llm_destroy", ("compiles", "llm_destroy"), 5),
          ("python", "fork_breaks_at_null_l1", ("llm_init", "l1_traversal"), 6),  # 6/6: see server_ops_replaced
          ("python", "create_at_head", ("llm_init", "tail_insertion"), 6)]


def submission(scene: Scene, lang: str, base: str, attack: str | None, udp_port: int = 9) -> Path:
    """Writes the submission into the scene; what `pagedcheck grade` is given."""
    if lang == "python":
        code = "" if attack is None else (PY_ATTACKS / f"{attack}.py").read_text()
        (scene.mods / "review_attack.py").write_text(scene.fill(python_module(base, code)))
        return Path("review_attack")
    source = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / f"{base}.patch")
    if attack is not None:
        source = patched(source, C_ATTACKS / f"{attack}.patch")
    sub = scene.root / "submission"
    sub.mkdir()
    (sub / "llm_memory.c").write_text(scene.fill(source, UDP_PORT=str(udp_port)))
    return sub


def graded(scene: Scene, reaper: Reaper, sub: Path, items: tuple[str, ...], expected: int, timeout: float,
           lang: str = "c") -> list[str]:
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric, timeout))
    problems = evidence.problems + check_report(scene.out, expected, max_points(items, lang))
    if evidence.ran.status not in (0, 1):
        problems.append(f"pagedcheck grade exited {evidence.ran.status}: {evidence.ran.stderr[-300:]}")
    return problems


@pytest.mark.parametrize("lang, base, items, honest", HONEST, ids=[f"{lang}-{base}" for lang, base, _, _ in HONEST])
def test_each_base_bug_scores_its_honest_score(lang: str, base: str, items: tuple[str, ...], honest: int,
                                               scene: Scene, reaper: Reaper) -> None:
    problems = graded(scene, reaper, submission(scene, lang, base, None), items, honest, 2.0, lang)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", attack_params([a for a in ATTACKS if a.lang != "prefix"]))
def test_review_attack_gets_no_more_than_its_honest_score(name: str, scene: Scene, reaper: Reaper) -> None:
    attack = BY_NAME[name]
    problems = graded(scene, reaper, submission(scene, attack.lang, attack.base, name), attack.items,
                      attack.expected, attack.timeout, attack.lang)
    problems += [f"the message queue {queue} outlived the grading" for queue in attack.queues if _unlink_queue(queue)]
    assert not problems, "\n".join([f"{name} (honest score {attack.expected}):", *problems])


def _unlink_queue(name: str) -> bool:
    """Removes the POSIX message queue `name`; whether there was one."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    return libc.mq_unlink(name.encode()) == 0


def test_every_fixture_is_in_the_table() -> None:
    on_disk = sorted([p.stem for p in C_ATTACKS.glob("*.patch")] + [p.stem for p in PY_ATTACKS.glob("*.py")]
                     + [p.name for p in PY_ATTACKS.iterdir() if p.is_dir() and p.name != "__pycache__"])
    assert on_disk == sorted(a.name for a in ATTACKS)


# held since printable() spells a byte that is not UTF-8 as that byte: the CSV's encoder raised on the lone
# surrogates os.fsdecode made of it, a traceback, and the classmates after it had no row
@pytest.mark.bwrap_repeat
def test_grade_all_with_a_folder_name_that_is_not_utf8_spares_the_classmates(scene: Scene, reaper: Reaper) -> None:
    import os

    items = ("compiles", "null_engine")
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
    batch = scene.root / "batch"
    for name in (b"a-\xff\xfe", b"z-classmate"):
        folder = os.fsencode(batch) + b"/" + name
        os.makedirs(folder)
        with open(folder + b"/llm_memory.c", "w") as f:
            f.write(REFERENCE_C.read_text())
    evidence = grade_in_scene(scene, reaper, ["grade-all", str(batch), "--out", str(scene.out), "--rubric", str(rubric),
                                              "--jobs", "1", "-q"])
    full = max_points(items)
    problems = evidence.problems + [f"classmate: {p}" for p in check_report(scene.out / "z-classmate", full, full)]
    from tests.test_tamper import scores_csv_problems

    problems += scores_csv_problems(scene.out, {"z-classmate": full})
    assert not problems, "\n".join(problems)


GRADER_MEMORY_KIB = 1 << 20  # the honest gradings peak near 50 MiB in the grader (gcc and the children less)
MEMORY_CASES = [
    ("python", "fork_breaks_at_null_l1", "huge_reply", ("llm_init",),
     "oracle/child.py's _receive bounds a reply's bytes (MAX_REPLY, 64 MiB) but json.loads builds every value "
     "before pyreply checks one: 64 MiB of `{},` is about 22 million dicts, about 1.7 GB in the grader (and as "
     "much again per --jobs); measured 1742720 KiB against 50900 KiB for the honest bug"),
    ("c", "append_cow", "reply_flood", ("compiles", "null_engine"),
     REPLY_FRAMES + ": a length field is believed up to 4 GiB, and _read waits `timeout` per chunk, not per "
     "reply, so as long as bytes flow it reads them all, then joins them (twice the bytes): a claim of 768 MiB "
     "peaked at 1655980 KiB; a claim of 4 GiB would take over 8 GB"),
]


@pytest.mark.parametrize("lang, base, attack, items, why", [
    pytest.param(*case, id=case[2]) for case in MEMORY_CASES])  # both held since replies are bounded (oracle/reply.py)
def test_a_huge_reply_costs_the_grader_no_more_than_its_bound(lang: str, base: str, attack: str,
                                                             items: tuple[str, ...], why: str, tmp_path: Path) -> None:
    """With bubblewrap (the reply is read the same way without it)."""
    import resource

    scene = Scene(tmp_path)
    sub = submission(scene, lang, base, attack)
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
    launcher = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:]); "
                "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    guard = 3 << 30  # RLIMIT_AS on the grader: keeps this shared machine safe, far above the honest peak
    done = subprocess.run([sys.executable, "-c", launcher, sys.executable, "-m", "oracle.cli",
                           *grade_args(sub, scene, rubric)], cwd=scene.work, env=scene.env(), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=300,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (guard, guard)))
    peak = int(done.stdout.split()[-1])  # KiB: the largest of the grader and every process it waited for
    problems = [] if (scene.out / "report.json").is_file() else [f"no report: {done.stderr[-300:]}"]
    if peak >= GRADER_MEMORY_KIB:
        problems.append(f"the grader (or a child) peaked at {peak} KiB: {why}")
    scene.close()
    assert not problems, "\n".join(problems)


TERMINAL_CASES = [
    # held: a label the submission words (its exception's text) reached the terminal with its newlines, lines of
    # its own at the TA's left margin ('score: 100/100 (passed)')
    pytest.param("python", "fork_breaks_at_null_l1", "newline_label", ("llm_init", "l1_traversal"), id="newline_label"),
    pytest.param("c", "append_cow", "printed_summary", ("compiles", "null_engine"), id="printed_summary"),
]


@pytest.mark.bwrap_repeat  # what the grader prints
@pytest.mark.parametrize("lang, base, attack, items", TERMINAL_CASES)
def test_the_submission_writes_no_line_of_its_own_on_the_terminal(lang: str, base: str, attack: str,
                                                                  items: tuple[str, ...], scene: Scene,
                                                                  reaper: Reaper) -> None:
    sub = submission(scene, lang, base, attack)
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
    evidence = grade_in_scene(scene, reaper, ["grade", str(sub), "--rubric", str(rubric), "--out", str(scene.out)])
    forged = [line for line in evidence.ran.stdout.splitlines() if line.startswith(("score: 100/100", "  total    "))
              and "100/100" in line]
    assert not evidence.problems and not forged, "\n".join([*evidence.problems, *forged])


NOBODY = 65534


ORDINARY_USER_CASES = [  # (language, known bug, attack fixture, items, honest score)
    ("python", "fork_breaks_at_null_l1", PY_ATTACKS / "spawn_daemon.py", ("llm_init", "l1_traversal"), 6),
    # a constructor, refused at build now (c/refusal.py): 0
    ("c", "append_cow", SUBMISSIONS / "hostile" / "tamper" / "spawn_sleeper.patch", ("compiles", "null_engine", "append_cow"), 0),
]


def ordinary_user_submission(world: Scene, lang: str, base: str, attack: Path) -> Path:
    if lang == "python":
        return submission(world, lang, base, attack.stem)
    source = patched(patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / f"{base}.patch"), attack)
    sub = world.root / "submission"
    sub.mkdir()
    (sub / "llm_memory.c").write_text(world.fill(source))
    return sub


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root (to run the grader as another user) and setpriv")
@pytest.mark.parametrize("lang, base, attack, items, honest", ORDINARY_USER_CASES, ids=[c[2].stem for c in ORDINARY_USER_CASES])
# held since the system call filter keeps every process of a run in its process group where no pid namespace
# holds it (oracle/seccomp.py): a daemon in a session of its own (posix_spawn + setsid, or a C constructor's)
# outlived a grader run by an ordinary user without bubblewrap
def test_a_spawned_process_dies_with_a_grader_run_by_an_ordinary_user(
    lang: str, base: str, attack: Path, items: tuple[str, ...], honest: int, reaper: Reaper
) -> None:
    top = Path(tempfile.mkdtemp(prefix="pagedcheck-review-"))
    top.chmod(0o755)
    world = Scene(top / "scene", without_bwrap=True)
    try:
        sub = ordinary_user_submission(world, lang, base, attack)
        rubric = small_rubric(world.rubric_dir / "rubric.toml", list(items))
        for folder in (top, world.tmp):
            subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(folder)], check=True)
        done = subprocess.run(["setpriv", "--reuid", str(NOBODY), "--regid", str(NOBODY), "--clear-groups",
                               sys.executable, "-m", "oracle.cli", *grade_args(sub, world, rubric)],
                              cwd=world.work, env=world.env(), capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=300)
        left = reaper.leftovers(*world.markers)
        reaper.kill(left)
        problems = [f"left running: pid {p.pid} {p.cmdline[:100]}" for p in left]
        problems += check_report(world.out, honest, max_points(items, lang))
        full = honest == max_points(items, lang)  # fork_breaks_at_null_l1 passes what is graded for Python: exit 0
        assert done.returncode == (0 if full else 1) and not problems, "\n".join([done.stderr[-300:], *problems])
    finally:
        world.close()
        shutil.rmtree(top, ignore_errors=True)


# held without bubblewrap since the system call filter refuses internet sockets (oracle/seccomp.py): Landlock
# names TCP ports only, so a run outside bubblewrap's network namespace sent UDP datagrams to the host
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
def test_a_udp_datagram_reaches_no_one(without_bwrap: bool, tmp_path: Path, reaper: Reaper) -> None:
    import socket

    scene = Scene(tmp_path, without_bwrap=without_bwrap)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
        udp.bind(("127.0.0.1", 0))
        udp.setblocking(False)
        sub = submission(scene, "c", "append_cow", "udp_datagram", udp.getsockname()[1])
        items = ("compiles", "null_engine")
        rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
        evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric))
        received = 0
        while True:
            try:
                udp.recv(100)
            except BlockingIOError:
                break
            received += 1
    scene.close()
    problems = evidence.problems + check_report(scene.out, 10, max_points(items))
    problems += [f"{received} UDP datagram(s) reached 127.0.0.1"] if received else []
    assert not problems, "\n".join(problems)


def test_another_process_command_line_reaches_no_report(scene: Scene, reaper: Reaper) -> None:
    """A process of the host holds the scene's secret in its command line; the submission looks for it in /proc
    and would raise it into its report."""
    other = subprocess.Popen(["sleep", "300", f"home-secret-{scene.token}"])
    try:
        items = ("llm_init", "l1_traversal")
        sub = submission(scene, "python", "fork_breaks_at_null_l1", "proc_cmdlines")
        rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
        evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric))
    finally:
        other.kill()
        other.wait()
    problems = evidence.problems + check_report(scene.out, 6, max_points(items, "python"))  # fork_breaks_at_null_l1's honest
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", attack_params([a for a in ATTACKS if a.lang == "prefix"]))
def test_prefix_review_attack_gets_no_more_than_its_honest_score(name: str, scene: Scene, reaper: Reaper) -> None:
    """The prefix family's whole rubric; the student's folder holds the package (engine/prefix with the known
    bug, tests/test_tamper_prefix.py's `labsol`) and the attack's files beside it; the package is graded."""
    from tests.tamper_grading import PREFIX_RUBRIC, prefix_grade_args
    from tests.test_tamper_prefix import submission as prefix_submission

    attack = BY_NAME[name]
    folder = prefix_submission(scene.mods / "student", attack.base, None)
    for path in (PY_ATTACKS / name).iterdir():
        if path.suffix == ".py":
            shutil.copy(path, folder / path.name)
    rubric = scene.rubric_dir / "rubric.toml"
    rubric.write_text(PREFIX_RUBRIC.read_text())
    evidence = grade_in_scene(scene, reaper, prefix_grade_args(folder / "labsol", scene, rubric))
    problems = evidence.problems + check_report(scene.out, attack.expected, 100)
    assert not problems, "\n".join([f"{name} (honest score {attack.expected}):", *problems])


def test_the_prefix_base_bug_scores_its_honest_score(scene: Scene, reaper: Reaper) -> None:
    from tests.tamper_grading import PREFIX_RUBRIC, prefix_grade_args
    from tests.test_tamper_prefix import submission as prefix_submission

    folder = prefix_submission(scene.mods / "student", "hash_not_chained", None)
    rubric = scene.rubric_dir / "rubric.toml"
    rubric.write_text(PREFIX_RUBRIC.read_text())
    evidence = grade_in_scene(scene, reaper, prefix_grade_args(folder / "labsol", scene, rubric))
    problems = evidence.problems + check_report(scene.out, 80, 100)  # hash_chaining 8 and fuzz 12 lost
    assert not problems, "\n".join(problems)


@pytest.mark.bwrap_repeat  # the page the grader writes
def test_a_label_of_the_submissions_is_text_in_report_html(scene: Scene, reaper: Reaper) -> None:
    sub = submission(scene, "python", "fork_breaks_at_null_l1", "html_label")
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", ["llm_init", "l1_traversal"])
    evidence = grade_in_scene(scene, reaper, ["grade", str(sub), "--rubric", str(rubric), "--out", str(scene.out)])
    page = (scene.out / "report.html").read_text()
    assert "RuntimeError" in page  # the label is on the page, escaped
    raw = [tag for tag in ("<script>alert", "<img src=x") if tag in page]
    assert not evidence.problems and not raw, "\n".join([*evidence.problems, *raw])


@pytest.mark.parametrize("layout", ["linked_folder", "linked_import"])
def test_a_python_upload_that_links_to_the_reference_gets_nothing_of_it(layout: str, scene: Scene, reaper: Reaper) -> None:
    """An upload (a folder) whose llm_memory.py is the reference reached through a link to its folder, or whose
    own llm_memory.py imports the reference through a linked package: the reference is never graded."""
    upload = scene.root / "upload"
    upload.mkdir()
    if layout == "linked_folder":  # no llm_memory.py at the top; the only one below is behind a link
        (upload / "mine").symlink_to(ROOT / "engine", target_is_directory=True)
    else:
        (upload / "ref").symlink_to(ROOT / "engine", target_is_directory=True)
        (upload / "llm_memory.py").write_text("from ref.llm_memory import *  # noqa: F401,F403\n"
                                             "from ref.llm_memory import llm_init, create_sequence, fork_sequence, "
                                             "append_kv, free_sequence, llm_destroy  # noqa: F401\n")
    items = ("llm_init", "l1_traversal")
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
    evidence = grade_in_scene(scene, reaper, grade_args(upload, scene, rubric))
    problems = evidence.problems + check_report(scene.out, 0, max_points(items))  # graded as a C upload
    assert not problems, "\n".join(problems)
