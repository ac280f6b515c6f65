"""Tamper suite, C: a hostile student's attacks on `pagedcheck grade` and `grade-all` (issue 7).

Each attack is applied on top of a known bug (tests/submissions/broken/<base>.patch, then
tests/submissions/hostile/tamper/<attack>.patch), so "the attack worked" shows as a score above the bug's
honest one. Each is graded by a separate `pagedcheck` process in a world of its own (tests/tamper.py), on
the rubric items the attack concerns, and must: get exactly the score its behaviour earns (the bug's honest
score, lower for an attack that harms only itself, never higher), leave no process behind, change no file
outside the grader's scratch (the grader's installed files included, byte for byte), let no secret into any
report, make no network connection, and never crash the grader. `-k` selects attacks by name.
"""

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REFERENCE_C, SUBMISSIONS, patched
from tests.tamper import Reaper, Scene
from tests.tamper_grading import check_report, grade_args, grade_in_scene, max_points, reaper  # noqa: F401
from tests.test_grade import small_rubric

ATTACKS = SUBMISSIONS / "hostile" / "tamper"

# The known bugs the attacks sit on, each with the rubric items an attack is graded on (by default the first
# row of its bug) and the bug's honest score there (checked by test_each_base_bug_scores_its_honest_score).
# No `llm_init` item by default: it runs every white-box probe, which only the attacks on probes need.
BASES = [
    ("append_cow", ("compiles", "null_engine", "append_cow"), 10),  # of 18: append_cow fails
    ("append_cow", ("compiles", "llm_init", "append_cow"), 11),  # of 19: with the probes (llm_init's)
    ("l1_traversal", ("compiles", "l1_traversal"), 5),  # of 9
    ("llm_destroy", ("compiles", "llm_destroy"), 5),  # of 11: the leak fails llm_destroy
]
WITH_PROBES = BASES[1][1]


@dataclass(frozen=True)
class Attack:
    name: str  # tests/submissions/hostile/tamper/<name>.patch
    base: str  # the known bug it is applied on (BASES)
    expected: int  # the score its behaviour earns on the base's items (or `items`)
    why: str  # why that is the score
    mode: str = "grade"  # "grade"; "batch": grade-all, with a correct classmate graded after it; "symlink"
    items: tuple[str, ...] = ()  # rubric items, when not the base's
    timeout: float = 2.0  # --timeout, per call
    options: tuple[str, ...] = ()  # more `pagedcheck grade` options
    memory_guard: int | None = None  # RLIMIT_AS on the grader process: protects this shared machine only

    @property
    def rubric_items(self) -> tuple[str, ...]:
        return self.items or next(items for bug, items, _ in BASES if bug == self.base)


HONEST = "the act cannot reach its target, so the bug's honest score"
# issue 17: no code may run outside the API calls (refusal.py), so an attack made in a constructor, which would
# run before the driver's limits and seccomp filter and could hold valgrind's log descriptor, is refused at build
CONSTRUCTOR = "its act runs in a constructor, refused at build (code outside the API calls): does not compile"
COMPILES_ONLY = "every program linked with it fails at once: only `compiles` passes"
ATTACKS_C = [
    # the attacks of issue 7
    Attack("include_reference", "append_cow", 10, "<llm_memory.c> is not on the include path: its own code is graded"),
    Attack("include_reference_by_path", "append_cow", 10, "the reference cannot be read: its own code is graded"),
    Attack("symlink_reference", "append_cow", 0, "a symlinked llm_memory.c is refused as the submission's fault",
           mode="symlink"),
    Attack("read_secrets", "append_cow", 10, HONEST),
    Attack("write_files", "append_cow", 10, HONEST),
    Attack("socket", "append_cow", 10, HONEST),
    Attack("classmate_error", "append_cow", 10, HONEST, mode="batch"),
    Attack("oracle_edit", "append_cow", 10, HONEST, mode="batch"),
    Attack("cache_poison", "append_cow", 10, HONEST, mode="batch"),
    Attack("daemon_rewrite", "append_cow", 0, CONSTRUCTOR, items=WITH_PROBES),
    Attack("probe_pass", "l1_traversal", 0, CONSTRUCTOR),
    Attack("include_dev_zero", "append_cow", 0, "gcc is stopped by its limits: does not compile",
           items=("compiles", "null_engine"), memory_guard=4 << 30),
    Attack("include_dev_stdin", "append_cow", 10, "gcc reads an empty standard input: its own code is graded"),
    Attack("include_etc_passwd", "append_cow", 0, "does not compile", items=("compiles", "null_engine")),
    Attack("slow_calls", "append_cow", 5, "its calls sleep, spending none of the grade's 20 CPU seconds: append_cow "
           "fails on its bug within the wall-clock cap (10 times the limit), or is stopped by it; compiles passes",
           items=("compiles", "append_cow"), options=("--time-limit", "20")),
    Attack("kill_parent", "append_cow", 0, CONSTRUCTOR, items=WITH_PROBES),
    Attack("kill_group", "append_cow", 5, COMPILES_ONLY),
    Attack("constructor_exit", "append_cow", 0, CONSTRUCTOR),
    # attacks beyond issue 7's list
    Attack("include_secret", "append_cow", 0, "does not compile", items=("compiles", "null_engine")),
    Attack("proc_environ", "append_cow", 10, HONEST),
    Attack("stop_parent", "append_cow", 0, CONSTRUCTOR, items=WITH_PROBES, timeout=0.5),
    Attack("real_malloc", "llm_destroy", 0, "the driver's own hooks are refused at build: does not compile"),
    Attack("libc_malloc", "llm_destroy", 0, "glibc's __libc_malloc allocates behind the accounting: refused at build"),
    Attack("probe_token_scan", "l1_traversal", 0, CONSTRUCTOR),
    Attack("fd_spray", "append_cow", 5, "junk on the driver's own channels fails its calls: " + COMPILES_ONLY),
    Attack("signal_hang", "append_cow", 0, CONSTRUCTOR, items=("compiles", "null_engine", "append_cow", "fork"), timeout=0.5),
    Attack("spawn_sleeper", "append_cow", 0, CONSTRUCTOR),
]
BY_NAME = {attack.name: attack for attack in ATTACKS_C}
CLASSMATE = "z-classmate"  # sorts after every hostile folder: grade-all grades it last


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[Scene]:
    world = Scene(tmp_path)
    yield world
    world.close()


def hostile_source(attack: Attack, scene: Scene, **more: str) -> str:
    base = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / f"{attack.base}.patch")
    return scene.fill(patched(base, ATTACKS / f"{attack.name}.patch"), MAX=str(max_points(attack.rubric_items)), **more)


@pytest.mark.parametrize("base, items, honest", BASES, ids=[f"{bug}-{len(items)}" for bug, items, _ in BASES])
def test_each_base_bug_scores_its_honest_score(
    base: str, items: tuple[str, ...], honest: int, scene: Scene, reaper: Reaper
) -> None:
    """The baseline every attack is measured against: the bug alone, graded the same way."""
    sub = scene.root / "submission"
    sub.mkdir()
    (sub / "llm_memory.c").write_text(patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / f"{base}.patch"))
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, small_rubric(scene.rubric_dir / "rubric.toml", list(items))))
    problems = evidence.problems + check_report(scene.out, honest, max_points(items))
    assert not problems, "\n".join(problems)
    assert evidence.ran.status == 1


@pytest.mark.parametrize("name", [a.name for a in ATTACKS_C if a.mode != "batch"])
def test_c_attack_gets_its_score_and_nothing_else(name: str, scene: Scene, reaper: Reaper) -> None:
    attack = BY_NAME[name]
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(attack.rubric_items))
    sub = scene.root / "submission"
    sub.mkdir()
    if attack.mode == "symlink":
        (sub / "llm_memory.c").symlink_to(REFERENCE_C)
    else:
        (sub / "llm_memory.c").write_text(hostile_source(attack, scene))
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric, attack.timeout, attack.options),
                              attack.memory_guard)
    problems = evidence.problems + check_report(scene.out, attack.expected, max_points(attack.rubric_items))
    if evidence.ran.status != 1:
        problems.append(f"pagedcheck grade exited {evidence.ran.status}, expected 1: {evidence.ran.stderr[-300:]}")
    assert not problems, "\n".join([f"{name} (expected {attack.expected}: {attack.why}):", *problems])


@pytest.mark.parametrize("name", [a.name for a in ATTACKS_C if a.mode == "batch"])
def test_c_attack_in_grade_all_spares_the_classmate_graded_after_it(name: str, scene: Scene, reaper: Reaper) -> None:
    """grade-all, one job: the hostile folder first, then a correct classmate, who gets full marks."""
    attack = BY_NAME[name]
    items = attack.rubric_items
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
    batch, hostile = scene.root / "batch", f"a-{name}"
    for folder in (hostile, CLASSMATE):
        (batch / folder).mkdir(parents=True)
    (batch / CLASSMATE / "llm_memory.c").write_text(REFERENCE_C.read_text())
    (batch / hostile / "llm_memory.c").write_text(hostile_source(
        attack, scene, SIBLING=str(batch / CLASSMATE / "llm_memory.c"),
        REPORT=str(scene.out / hostile / "report.json"), RESULTS=str(scene.out / hostile / "results.json")))
    args = ["grade-all", str(batch), "--out", str(scene.out), "--rubric", str(rubric), "--jobs", "1",
            "--timeout", str(attack.timeout), "-q"]
    evidence = grade_in_scene(scene, reaper, args)
    full = max_points(items)
    problems = evidence.problems + check_report(scene.out / hostile, attack.expected, full)
    problems += [f"classmate: {p}" for p in check_report(scene.out / CLASSMATE, full, full)]
    problems += scores_csv_problems(scene.out, {hostile: attack.expected, CLASSMATE: full})
    assert not problems, "\n".join([f"{name} (expected {attack.expected}: {attack.why}):", *problems])


def scores_csv_problems(out: Path, expected: dict[str, float]) -> list[str]:
    try:
        rows = {row["submission"]: row for row in csv.DictReader((out / "scores.csv").open())}
    except OSError as exc:
        return [f"no scores.csv: {exc}"]
    return [f"scores.csv: {name} has {rows.get(name, {}).get('score')}, expected {score:g}"
            for name, score in expected.items() if rows.get(name, {}).get("score") != f"{score:g}"]


def test_grade_all_gives_the_correct_submission_100_beside_a_hostile_one(scene: Scene, reaper: Reaper) -> None:
    """The whole default rubric (a small fuzz budget): a correct submission graded after one that edits
    the grader's installed files scores 100 regardless."""
    rubric = small_rubric(scene.rubric_dir / "rubric.toml")
    attack = BY_NAME["oracle_edit"]
    batch, hostile = scene.root / "batch", "a-oracle_edit"
    for folder in (hostile, CLASSMATE):
        (batch / folder).mkdir(parents=True)
    (batch / CLASSMATE / "llm_memory.c").write_text(REFERENCE_C.read_text())
    (batch / hostile / "llm_memory.c").write_text(hostile_source(attack, scene))
    evidence = grade_in_scene(scene, reaper, ["grade-all", str(batch), "--out", str(scene.out), "--rubric",
                                              str(rubric), "--jobs", "1", "-q"])
    problems = evidence.problems + [f"classmate: {p}" for p in check_report(scene.out / CLASSMATE, 100, 100)]
    assert not problems, "\n".join(problems)
    hostile_report = json.loads((scene.out / hostile / "report.json").read_text())
    assert hostile_report["score"] < 100 and hostile_report["items"][0]["status"] == "passed"


def test_attack_table_names_every_fixture_once() -> None:
    """Every tamper patch is in the table, on the base its own first line names, and applies to it."""
    patched_attacks = [a for a in ATTACKS_C if a.mode != "symlink"]
    assert sorted(p.stem for p in ATTACKS.glob("*.patch")) == sorted(a.name for a in patched_attacks)
    for attack in patched_attacks:
        first = (ATTACKS / f"{attack.name}.patch").read_text().splitlines()[3]
        assert first.startswith(f"+/* Hostile test submission (tamper suite), on top of tests/submissions/broken/{attack.base}.patch: ")
        base = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / f"{attack.base}.patch")
        assert patched(base, ATTACKS / f"{attack.name}.patch").startswith(first[1:])


def test_a_sandbox_that_cannot_start_is_never_the_submissions_fault(scene: Scene, reaper: Reaper) -> None:
    """A TMPDIR the sandbox's uid cannot pass through (mode 0700, as pytest's own folders or root's home):
    grading the reference either works or is the grader's error (exit 2), and nothing of that failure is
    cached, so the same submission graded with a usable TMPDIR gets full marks."""
    items = ("compiles", "llm_init")
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
    sub = scene.root / "submission"
    sub.mkdir()
    (sub / "llm_memory.c").write_text(REFERENCE_C.read_text())
    scene.tmp.chmod(0o700)
    blocked = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric))
    report = json.loads((scene.out / "report.json").read_text())
    problems = blocked.problems + ([] if report["score"] == max_points(items) or report["exit_status"] == 2 else
                                   [f"blamed on the submission: {[(i['id'], i['message'][:200]) for i in report['items']]}"])
    scene.tmp.chmod(0o711)
    usable = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric))
    problems += [f"then: {p}" for p in usable.problems + check_report(scene.out, max_points(items), max_points(items))]
    assert not problems, "\n".join(problems)
