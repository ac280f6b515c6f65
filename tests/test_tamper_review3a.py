"""Tamper suite, the third adversarial review's attacks (issue 17, round 3a): hostile submissions written against
the grader of the Python-served families (blockspace: oracle/grading/python_family.py's ServedGrader, oracle/served.py,
oracle/child.py, oracle/serve.py) and the batch tools, with and without bubblewrap.

Same shape as tests/test_tamper_review.py: each attack sits on a known bug (our engine/blockspace copied as a
student's folder, tests/broken_blockspace/<base>.patch applied, then tests/hostile_review3a/<attack>.py appended to
its block_manager.py), is graded by a separate `pagedcheck` process in a world of its own (tests/tamper.py's Scene)
on the items it concerns, and must get no more than the bug's honest score, leave no process, change no file outside
the scratch, leak no secret, and the grader must write its report without an error of its own. An attack that
breaks the grader today is a strict xfail naming the mechanism that let it through.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.tamper import Reaper, Scene, differences, snapshot
from tests.test_blockspace_grade import student_copy
from tests.tamper_grading import check_report, grade_in_scene, reaper, scene  # noqa: F401  (fixtures)
from tests.test_tamper_review2 import _outside_code

ATTACKS_DIR = Path(__file__).with_name("hostile_review3a")
BROKEN = ROOT / "tests" / "broken_blockspace"
NAMES = {"block_table": "Block tables", "watermark": "can_allocate against the watermark",
         "copy_on_write": "Copy-on-write", "sharing": "Sharing by reference count", "swap": "Swapping",
         "recompute": "Recomputation", "fuzz": "Stateful fuzzing against the model"}


def rubric(path: Path, points: dict[str, int]) -> Path:
    """A course's blockspace rubric: these items, in the default rubric's order, with these points (the fuzz item
    keeps its default options: seed 1, 150 programs of 30 calls)."""
    items = (f'\n[[item]]\nid = "{item}"\nname = "{NAMES[item]}"\npoints = {n}\n' for item, n in points.items())
    path.write_text('title = "review3a"\n' + "".join(items))
    return path


def submission(scene: Scene, base: str, attack: str | None) -> Path:
    """A student's folder: our engine's block manager with the known bug `base` (a patch of tests/broken_blockspace,
    or ATTACKS_DIR/bug_*.py appended, or "" for none), the attack's code appended to block_manager.py."""
    patch = str(BROKEN / f"{base}.patch") if base and not base.startswith("bug_") else None
    folder = student_copy(scene.root / "submission", patch)
    manager = folder / "block_manager.py"
    for code in ([base] if base.startswith("bug_") else []) + ([attack] if attack else []):
        manager.write_text(manager.read_text() + "\n\n" + scene.fill((ATTACKS_DIR / f"{code}.py").read_text()))
    return folder


def grade_args(sub: Path, scene: Scene, rubric_file: Path) -> list[str]:
    return ["grade", "--family", "blockspace", str(sub), "--rubric", str(rubric_file), "--json",
            str(scene.out / "report.json"), "--gradescope", str(scene.out / "results.json"), "--out", str(scene.out),
            "--timeout", "2", "-q"]


def graded(scene: Scene, reaper: Reaper, sub: Path, points: dict[str, int], expected: int) -> list[str]:
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric(scene.rubric_dir / "rubric.toml", points)))
    problems = evidence.problems + check_report(scene.out, expected, sum(points.values()))
    if evidence.ran.status not in (0, 1):
        problems.append(f"pagedcheck grade exited {evidence.ran.status}: {evidence.ran.stderr[-300:]}")
    try:
        isolation = json.loads((scene.out / "report.json").read_text()).get("isolation", "")
    except (OSError, ValueError):
        isolation = ""  # check_report said so
    if isolation and isolation.startswith("bubblewrap") == scene.without_bwrap:  # the scene ran the isolation it names
        problems.append(f"graded in {isolation.split(' ', 1)[0]}, not the scene's isolation")
    return problems


@dataclass(frozen=True)
class Attack:
    name: str  # ATTACKS_DIR/<name>.py
    base: str  # the known bug it sits on (tests/broken_blockspace/<base>.patch; "": the attack plants it)
    points: dict[str, int]  # the rubric it is graded on: item -> points
    expected: int  # the known bug's honest score there
    broken: str = ""  # when the grader does not hold today: the mechanism (the test is then a strict xfail)
    planted: int | None = None  # the attack plants a bug of its own: the honest score of both bugs together


TWO_ITEMS = {"block_table": 10, "watermark": 10}
DEFAULT = {"block_table": 10, "watermark": 10, "copy_on_write": 15, "sharing": 15, "swap": 15, "recompute": 10,
           "fuzz": 25}  # the default rubric's points (oracle/blockspace/rubric.toml)
ATTACKS = [
    # honest 10/25: sharing fails on beam search's first free. Held: the plant (can_append_slots False, block_table's
    # rule) is a refusal the model takes over (checked.py, Checked.ask's `follows`), so beam search goes on to the
    # sharing bug and the sharing item fails on it; block_table takes the plant (found by sharing's programs): both
    # bugs cost their items, 0/25, the honest score of the two
    Attack("plant_cheaper_rule", "free_ignores_sharing", {"block_table": 10, "sharing": 15}, 10, planted=0),
    # honest 60/100: swap and fuzz fail. Held: the plant (a table of the wrong size) stops the swap program, where the
    # model cannot follow, and the swap item passes "not checked past" it; the fuzz item finds the swap-in bug and its
    # failure charges the swap item (settlement.py): 50/100, the honest score of the two bugs (measured by the review)
    Attack("plant_hides_swap_in", "bug_swap_in_leaks", DEFAULT, 60, planted=50),
    # honest 5/25 under a course's weights: the watermark item fails. Held: a query's crash is the query's rule's
    # (rules.py _BY_OP names can_allocate's), so the watermark item fails on it and block_table passes
    Attack("crash_in_query", "watermark_ignored", {"block_table": 5, "watermark": 20}, 5),
    # held: every served answer is checked against its method's declared shape where it enters (oracle/served.py,
    # oracle/reply_shape.py): the ref count's position 0.5 is "a reply the grader cannot read", the submission's
    Attack("float_ref_position", "watermark_ignored", TWO_ITEMS, 10),
    # honest 10/45: watermark and fuzz fail. Held: the fuzz item's failure (flaky or not: the grader saw it) charges
    # the item of the rule it breaks where that item passed, once (python_family.py fuzz_check, settlement.py)
    Attack("every_other_manager", "", {"block_table": 10, "watermark": 10, "fuzz": 25}, 10),
    # held: neither bubblewrap nor Landlock shows the reference to the child
    Attack("reference_borrowed", "watermark_ignored", TWO_ITEMS, 10),
    # held: bubblewrap's pid namespace; without it, the run's own uid (every process of it killed at the end) and the
    # system call filter that keeps a run in its process group
    Attack("daemon_at_import", "watermark_ignored", TWO_ITEMS, 10),
]
BY_NAME = {attack.name: attack for attack in ATTACKS}
# The attacks the isolation itself holds (what the child can read, its processes): CI grades them in both. The others
# are held by the grader whatever the isolation (the model, the settlement, the shapes of answers): CI grades them
# without bubblewrap, the long profile with it too (bwrap_repeat, tests/conftest.py)
BY_ISOLATION = {"reference_borrowed", "daemon_at_import"}
HONEST = sorted({(a.base or "watermark_ignored", tuple(a.points.items()), a.expected) for a in ATTACKS} |
                {("watermark_ignored", (("watermark", 10),), 0), ("watermark_ignored", (("fuzz", 25),), 0)})


@pytest.mark.parametrize("base, points, honest", HONEST, ids=[f"{b}-{'-'.join(f'{i}{n}' for i, n in p)}"
                                                              for b, p, _ in HONEST])
def test_each_blockspace_base_scores_its_honest_score(base: str, points: tuple, honest: int, scene: Scene,
                                                      reaper: Reaper) -> None:
    problems = graded(scene, reaper, submission(scene, base, None), dict(points), honest)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", [pytest.param(a.name, marks=[
    *([pytest.mark.xfail(strict=True, reason=a.broken)] if a.broken else []),
    *([] if a.name in BY_ISOLATION else [pytest.mark.bwrap_repeat])]) for a in ATTACKS])
def test_review3a_attack_gets_no_more_than_its_honest_score(name: str, scene: Scene, reaper: Reaper) -> None:
    attack = BY_NAME[name]
    honest = attack.expected if attack.planted is None else attack.planted
    problems = graded(scene, reaper, submission(scene, attack.base, name), attack.points, honest)
    assert not problems, "\n".join([f"{name} (honest score {honest}):", *problems])


def test_every_review3a_fixture_is_in_the_table() -> None:
    on_disk = sorted(p.stem for p in ATTACKS_DIR.glob("*.py"))
    own_tests = ["markdown_label", "markdown_label_prefix", "disk_fill", "html_cell", "bug_swap_in_leaks"]
    assert on_disk == sorted([a.name for a in ATTACKS] + own_tests)


# held: the page escapes every cell (oracle/page_html.py)
@pytest.mark.bwrap_repeat
def test_a_block_id_the_submission_words_is_text_on_report_html(scene: Scene, reaper: Reaper) -> None:
    """html_cell (on watermark_ignored, honest 0/25 on the fuzz item): the page is written, the script is text."""
    problems = graded(scene, reaper, submission(scene, "watermark_ignored", "html_cell"), {"fuzz": 25}, 0)
    page = (scene.out / "report.html").read_text()
    assert "REVIEW3A" in page  # the id is on the page, escaped
    problems += ["a script element of the submission's on report.html"] if "<script>alert" in page else []
    assert not problems, "\n".join(problems)


MARKDOWN = (  # the mechanism review3a found (closed)"words the submission chose (blockspace: the `name` of what can_allocate returns, up to 100 "
            "characters; prefix: the text of an exception its free raises, up to 500) are quoted in the item's "
            "message, and ItemResult.for_student puts the message into results.json's Markdown as it is (report.plain "
            "strips the grader's internals, not Markdown); only the details go into a code block, and that block's "
            "fence is a fixed ``` the details themselves can close: a heading and an image of the submission's "
            "address reach the Gradescope page a student and a TA read")


def markdown_submission(scene: Scene, family: str) -> tuple[Path, Path]:
    """The submission and the rubric of markdown_label: blockspace on watermark_ignored (the watermark item alone,
    honest 0/10), or the prefix family's markdown_label_prefix on no_hit_cap (its default rubric)."""
    if family == "blockspace":
        return (submission(scene, "watermark_ignored", "markdown_label"),
                rubric(scene.rubric_dir / "rubric.toml", {"watermark": 10}))
    from tests.tamper_grading import PREFIX_RUBRIC
    from tests.test_tamper_prefix import submission as prefix_submission

    folder = prefix_submission(scene.mods / "student", "no_hit_cap", None)
    (folder / "kv_cache.py").write_text(scene.fill((ATTACKS_DIR / "markdown_label_prefix.py").read_text()))
    return folder, Path(shutil.copy(PREFIX_RUBRIC, scene.rubric_dir / "rubric.toml"))


# held: a failed item's message and details reach a student only inside one fenced block, its fence longer than any
# backtick run in them (oracle/markdown.py fenced, ItemResult.for_student)
@pytest.mark.bwrap_repeat
@pytest.mark.parametrize("family", ["blockspace", "prefix"])
def test_words_the_submission_chose_stay_inside_a_code_block(family: str, scene: Scene, reaper: Reaper) -> None:
    """Every line of results.json's Markdown holding the attack's mark lies inside a fenced code block, as CommonMark
    reads the fences; the grader keeps its other promises (no process left, no file changed, its report written)."""
    sub, rubric_file = markdown_submission(scene, family)
    args = grade_args(sub, scene, rubric_file)
    args[args.index("blockspace")] = family
    evidence = grade_in_scene(scene, reaper, args)
    problems = list(evidence.problems)
    results = json.loads((scene.out / "results.json").read_text())
    problems += [f"item {t['name']!r}: the submission's words are Markdown, outside any code block"
                 for t in results["tests"] if t.get("output_format", results.get("output_format")) == "md"
                 and _outside_code(t["output"], "REVIEW3A")]
    assert not problems, "\n".join(problems)


DISK_FILL = (  # the mechanism review3a found (closed)
    "without bubblewrap (Landlock) a run's private $TMPDIR is a folder under the grader's own temporary folder "
    "(sandbox.py popen: self.area('tmp')), bounded per file (RLIMIT_FSIZE) but not in total, and grade-all --jobs 2 "
    "grades two submissions at once: disk_fill fills the file system it shares with the batch's OUT and holds it "
    "(asleep, while the child's load is waited for): a classmate whose grade starts then cannot even copy its files "
    "into its sandbox, and its row is 0 for full marks")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="needs root and unshare, to mount a small tmpfs in a mount namespace of its own (the disk a "
                    "batch shares, without filling this machine's)")
# held: under Landlock the Python server gets no folder to write in (sandbox.py popen private_tmp=False, child.py),
# and a full disk in the grader's own copying is that submission's one-line error (commands/grade.py)
@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bwrap", "without-bwrap"])
def test_a_submission_that_fills_its_temporary_folder_spares_the_classmate_graded_beside_it(
        without_bwrap: bool, reaper: Reaper) -> None:
    """grade-all --jobs 2 of disk_fill (on watermark_ignored) and two correct classmates, the batch's temporary folder
    and OUT on one 32 MiB tmpfs: each classmate gets full marks and a report."""
    top = Path(tempfile.mkdtemp(prefix="pagedcheck-review3a-"))
    top.chmod(0o711)  # every run's uid passes through to its areas on the disk below
    world = Scene(top / "scene", without_bwrap=without_bwrap)
    try:
        batch, disk, kept = top / "batch", top / "disk", top / "grades"
        disk.mkdir()
        hostile = student_copy(batch / "a-disk_fill", str(BROKEN / "watermark_ignored.patch")) / "block_manager.py"
        hostile.write_text(hostile.read_text() + "\n\n" + (ATTACKS_DIR / "disk_fill.py").read_text())
        classmates = ("b-classmate", "c-classmate")  # b is graded beside it; c starts when b ends, the disk full
        for name in classmates:
            student_copy(batch / name)
        points = {"block_table": 10, "watermark": 10, "fuzz": 25}
        rubric_file = rubric(world.rubric_dir / "rubric.toml", points)
        # the tmpfs lives as long as the batch: its OUT is copied out before the namespace ends
        script = ('mount -t tmpfs -o size=32m,mode=0711 tmpfs "$0" && mkdir -m 0711 "$0/tmp" && "$@"; status=$?; '
                  f'cp -r "$0/out" "{kept}"; exit $status')
        before = snapshot(world.outside_scratch())
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(disk),
                               sys.executable, "-m", "oracle.cli", "grade-all", str(batch), "--out", str(disk / "out"),
                               "--family", "blockspace", "--rubric", str(rubric_file), "--jobs", "2", "-q"],
                              cwd=world.work, env={**world.env(), "TMPDIR": str(disk / "tmp")}, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, timeout=600)
        left = reaper.leftovers(*world.markers, f"{top}{os.sep}")
        reaper.kill(left)
        problems = [f"left running: pid {p.pid} {p.cmdline[:100]}" for p in left]
        problems += differences(before, snapshot(world.outside_scratch()))
        full = sum(points.values())
        problems += [f"{name}: {p}" for name in classmates for p in check_report(kept / name, full, full)]
        if "Traceback (most recent call last)" in done.stderr:
            problems.append("grade-all printed a traceback: " + done.stderr.strip().splitlines()[-1][:200])
        assert not problems, "\n".join([*problems, done.stderr[-500:]])
    finally:
        world.close()
        shutil.rmtree(top, ignore_errors=True)


LINKED_MODULE = (  # the mechanism review3a found (closed)
    "a folder submission of a served family names its module file (blockspace: ServedGrader.resolve gives "
    "FOLDER/block_manager.py; prefix: grade.py _folder_module gives FOLDER/kv_cache.py), and oracle/pylocate.py "
    "locate() resolves that path, links and all: the folder above the link's target becomes the submission's root, "
    "and the files copied into the sandbox are the target folder's. Alice's folder holds one symbolic link, "
    "block_manager.py (or kv_cache.py) -> ../z-bob/..., and grade-all grades Bob's code under Alice's name: full "
    "marks for an upload with no file of its own (the HW3 upload refuses a linked llm_memory.py: hw3/grade.py "
    "_python_upload; grade-all skips only linked folders)")


def correct_folder(folder: Path, family: str) -> Path:
    """A correct submission folder: our blockspace engine as a student's files, or our prefix engine as the package
    `labsol` with the lab's kv_cache.py beside it."""
    if family == "blockspace":
        return student_copy(folder)
    shutil.copytree(ROOT / "engine" / "prefix", folder / "labsol", ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "kv_cache.py").write_text("from labsol import KVCacheManager, Request  # noqa: F401\n")
    return folder


# held: a module file given by its path that is a link (or resolves out of its folder) is refused with a one-line
# reason (oracle/pylocate.py locate), and the folder's row gets nothing: by the grader, before any run
@pytest.mark.bwrap_repeat
@pytest.mark.parametrize("family", ["blockspace", "prefix"])
def test_an_upload_whose_module_links_to_a_classmates_gets_nothing_of_it(family: str, scene: Scene,
                                                                         reaper: Reaper) -> None:
    """grade-all: a-alice holds only a relative link to z-bob's module file; Bob (correct) gets full marks, Alice 0."""
    batch = scene.root / "batch"
    correct_folder(batch / "z-bob", family)
    module = "block_manager.py" if family == "blockspace" else "kv_cache.py"
    (batch / "a-alice").mkdir()
    (batch / "a-alice" / module).symlink_to(Path("..") / "z-bob" / module)
    if family == "blockspace":
        rubric_file, full = rubric(scene.rubric_dir / "rubric.toml", TWO_ITEMS), sum(TWO_ITEMS.values())
    else:
        from tests.tamper_grading import PREFIX_RUBRIC

        rubric_file, full = Path(shutil.copy(PREFIX_RUBRIC, scene.rubric_dir / "rubric.toml")), 100
    evidence = grade_in_scene(scene, reaper, ["grade-all", str(batch), "--out", str(scene.out), "--family", family,
                                              "--rubric", str(rubric_file), "--jobs", "1", "-q"])
    problems = evidence.problems + [f"z-bob: {p}" for p in check_report(scene.out / "z-bob", full, full)]
    report = json.loads((scene.out / "a-alice" / "report.json").read_text())
    if report["score"] != 0:
        problems.append(f"a-alice scored {report['score']}/{report['max_score']} with no file of her own")
    assert not problems, "\n".join(problems)
