"""`pagedcheck grade`: the reference gets full marks, each broken submission fails its own item with a repro
that builds and shows the bug, Python modules get the checks that apply, and reports are deterministic."""

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.cli import main
from oracle.grading.report import timing_free
from oracle.hw3.grade import DEFAULT_RUBRIC, grade, load
from tests.conftest import broken_python
from tests.fixtures import HW3_C_WORDS

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "engine" / "c"
SMALL_FUZZ = 'seed = 110\nexamples = 30\nsteps = 30\nshrink_replays = 2000\nseconds = 300.0\n'


def small_rubric(path: Path, items: list[str] | None = None) -> Path:
    """The default rubric, restricted to `items`, with a small fuzz budget."""
    text = DEFAULT_RUBRIC.read_text()
    start = text.index("[item.options]")
    text = text[:start] + "[item.options]\n" + SMALL_FUZZ + text[text.index("[[item]]", start):]
    if items is not None:
        head, *blocks = text.split("[[item]]")
        text = head + "".join("[[item]]" + b for b in blocks if any(f'id = "{i}"\n' in b for i in items))
    path.write_text(text)
    return path


# Unmeasured (conftest.py `unmeasured`): traced by --cov, the default rubric's fuzz ran past its safety net of 300
# CPU seconds on a loaded machine (ci36: failed after 662 s; `incomplete` is no pass), which no student's grade comes
# near (the same grade untraced: 21 s wall, 16.7 s of CPU, `pagedcheck grade engine/c -q`). Its paths are measured
# by the measured grades of broken fixtures (each passes every item but its own) and the probes' run of the reference
# (tests/test_probes.py).
@pytest.mark.unmeasured
def test_the_reference_gets_full_marks_with_the_default_rubric(tmp_path: Path) -> None:
    report = grade(str(REFERENCE), load(), tmp_path)
    failed = [(item.id, item.message) for item in report.items if item.status != "passed"]
    assert failed == []
    assert report.score == report.max_score == 100 and report.exit_status == 0
    assert not list(tmp_path.glob("repro*.c"))


# Each broken submission, the item it must fail, and words its message must hold: tests/fixtures.py, HW3_C_WORDS.
BROKEN_ITEMS = [(name, item, words) for name, (item, words) in HW3_C_WORDS.items()]


def test_an_engine_llm_init_should_have_refused_is_not_counted_as_a_leak(
    tmp_path: Path, submission: Callable[..., Path]
) -> None:
    """The llm_init fixture accepts a 63-byte pool: that costs the llm_init item, not memory_safety."""
    rubric = load(small_rubric(tmp_path / "rubric.toml", ["memory_safety"]))
    (result,) = grade(str(submission("broken", "llm_init")), rubric, tmp_path / "out", timeout=1.0).items
    assert result.status == "passed", result.message


@pytest.mark.parametrize("name, item, words", BROKEN_ITEMS, ids=[b[0] for b in BROKEN_ITEMS])
def test_each_broken_submission_fails_its_own_item(
    name: str, item: str, words: str, tmp_path: Path, submission: Callable[..., Path]
) -> None:
    rubric = load(small_rubric(tmp_path / "rubric.toml", [item]))
    report = grade(str(submission("broken", name)), rubric, tmp_path / "out", timeout=1.0)
    (result,) = report.items
    assert result.status == "failed" and result.points == 0, result.message
    assert words in result.message + result.details
    assert report.exit_status == 1
    if result.repro:  # it builds against the submission with the official flags and shows the difference
        source = tmp_path / "out" / result.repro
        assert source.is_file()
        assert "does not build" not in result.details
        shutil_copy = (submission("broken", name) / "llm_memory.c").read_text()
        (tmp_path / "llm_memory.c").write_text(shutil_copy)
        (tmp_path / result.repro).write_text(source.read_text())
        build = subprocess.run(  # built alone, as it says: it includes llm_memory.c and counts its heap
            ["gcc", "-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2", "-ggdb", "-I", str(REFERENCE),
             result.repro, "-o", "repro"], cwd=tmp_path, capture_output=True, text=True)
        assert build.returncode == 0, build.stderr
        run = subprocess.run(["./repro"], cwd=tmp_path, capture_output=True, text=True, timeout=30)
        assert run.returncode != 0 and "OK: no divergence" not in run.stdout


def test_a_fuzz_failure_shows_the_program_twice(tmp_path: Path, submission: Callable[..., Path]) -> None:
    rubric = load(small_rubric(tmp_path / "rubric.toml", ["fuzz"]))
    (result,) = grade(str(submission("broken", "fuzz")), rubric, tmp_path).items
    assert result.program.startswith("from oracle.hw3 import load_adapter")
    assert re.search(r"state\.(create(_filling_pool)?\(|blind_call\(api='create_sequence').*seq_id=-\d", result.program), result.program
    assert result.repro == "repro.c" and (tmp_path / "repro.c").is_file()
    assert "seed 110" in result.message


def test_python_modules_get_the_checks_that_apply(tmp_path: Path) -> None:
    rubric = load(small_rubric(tmp_path / "rubric.toml"))
    report = grade("engine", rubric, tmp_path)
    statuses = {item.id: item.status for item in report.items}
    assert {i for i, s in statuses.items() if s == "not_applicable"} == {
        "compiles", "memory_safety", "alloc_failure", "big_pool", "l1_traversal", "tail_insertion"}
    assert all(s == "passed" for i, s in statuses.items() if s != "not_applicable")
    assert report.score == report.max_score == 76 and report.exit_status == 0
    # a Python submission's objects are its own word (oracle/hw3/evidence.py, unread.py): the items whose rule
    # shows only in them leave the score with the student's words, and an item graded on its programs says
    # what of it (its probes) was not graded
    said = "Not graded for a Python submission: this check reads your engine's objects"
    walks = {item.id: item for item in report.items}["l1_traversal"]
    assert walks.max_points == 0 and said in walks.student and said in walks.message
    assert said in walks.for_student(1000)
    init = {item.id: item for item in report.items}["llm_init"]  # its probe init_untouched reads the counts
    assert init.status == "passed" and init.max_points == 6 and said in init.student
    for variant in ("free_breaks_at_null_l1", "fork_breaks_at_null_l1"):  # only the edit shows their bug
        broken = grade(broken_python(variant), load(small_rubric(tmp_path / "r2.toml", ["l1_traversal"])), tmp_path)
        assert broken.items[0].status == "not_applicable" and said in broken.items[0].student, variant


def test_same_submission_and_seed_give_the_same_report(tmp_path: Path, submission: Callable[..., Path]) -> None:
    rubric = load(small_rubric(tmp_path / "rubric.toml", ["fuzz", "first_fit", "append_cow"]))
    first = grade(str(submission("broken", "first_fit")), rubric, tmp_path / "a").as_dict()
    second = grade(str(submission("broken", "first_fit")), rubric, tmp_path / "b").as_dict()
    assert timing_free(first) == timing_free(second)
    assert (tmp_path / "a" / "repro.c").read_text() == (tmp_path / "b" / "repro.c").read_text()


def test_cli_exit_status_json_and_gradescope(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], submission: Callable[..., Path]
) -> None:
    rubric = small_rubric(tmp_path / "rubric.toml", ["compiles", "create_free", "tail_insertion"])
    common = ["--rubric", str(rubric), "-q"]
    assert main(["grade", str(REFERENCE), *common]) == 0
    report, results = tmp_path / "report.json", tmp_path / "results.json"
    broken = str(submission("broken", "tail_insertion"))
    assert main(["grade", broken, *common, "--json", str(report), "--gradescope", str(results)]) == 1
    out = capsys.readouterr().out
    assert "Call 3 create_sequence(engine, 1, 1): right after it, active list" in out and "0/3" in out
    data = json.loads(report.read_text())
    # head insertion costs the tail_insertion item only: create_free compares the list as a set of ids
    assert data["schema"] == "pagedcheck-grade/1" and data["exit_status"] == 1 and data["score"] == 15
    assert [i["status"] for i in data["items"]] == ["passed", "passed", "failed"]
    assert data["items"][2]["repro"] == "repro-tail_insertion.c" and (tmp_path / "repro-tail_insertion.c").is_file()
    scope = json.loads(results.read_text())
    assert scope["score"] == 15 and [t["status"] for t in scope["tests"]] == ["passed", "passed", "failed"]
    assert {t["visibility"] for t in scope["tests"]} == {"visible"} and "Rule: " in scope["tests"][2]["output"]


def test_compile_error_is_exit_1_and_the_rest_not_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = (REFERENCE / "llm_memory.c").read_text().replace("return seq;", "return seq", 1)  # a syntax error
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "llm_memory.c").write_text(source)
    rubric = small_rubric(tmp_path / "rubric.toml", ["compiles", "fork"])
    assert main(["grade", str(tmp_path / "sub"), "--rubric", str(rubric), "-q", "--out", str(tmp_path / "out")]) == 1
    out = capsys.readouterr().out
    assert "error: expected" in out and re.search(r"Not graded:\s+the submission does not build", out)
    assert "graded on that build" not in out


@pytest.mark.parametrize("kind, name", [
    pytest.param("broken", "compiles", id="broken"),
    # the same bug elsewhere in the file: the long profile's (grade-all grades it in tests/test_grade_batch.py)
    pytest.param("hostile", "warning", id="hostile", marks=pytest.mark.slow),
])
def test_warnings_fail_compiles_and_the_rest_is_graded(
    kind: str, name: str, tmp_path: Path, submission: Callable[..., Path]
) -> None:
    """Both are the reference plus an unused variable: "compiles" fails with gcc's words, every other item
    is graded on the build without -Werror, and gets its points."""
    report = grade(str(submission(kind, name)), load(small_rubric(tmp_path / "rubric.toml")), tmp_path)
    compiles, *rest = report.items
    assert compiles.id == "compiles" and compiles.status == "failed"
    assert "-Werror" in compiles.message and "unused variable" in compiles.message + compiles.details
    assert "the other items are graded on that build" in compiles.message
    assert [(i.id, i.status) for i in rest if i.status != "passed"] == []
    assert report.score == report.max_score - compiles.max_points == 95 and report.exit_status == 1


# One bug costs the item of the rule it breaks (and the fuzz item, which checks every rule), not the items
# whose scenarios merely pass through the bug's aspect.
# One bug, the items of its rule only (fuzz included, exactly): tests/test_fixture_verdicts.py's NOT_PASSED,
# checked on the grade that test makes of each broken fixture anyway.


@pytest.mark.parametrize(
    "argv, words",
    [
        (["grade", "no/such/dir/"], "does not exist"),
        (["grade", "no_such_module_xyz"], "cannot find module"),  # found by its files, never imported
        (["grade", str(REFERENCE), "--rubric", "/nonexistent.toml"], "cannot read it"),
    ],
)
def test_the_grader_that_cannot_run_exits_2_and_still_writes_gradescope(
    argv: list[str], words: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.json"
    assert main([*argv, "--gradescope", str(results)]) == 2
    assert words in capsys.readouterr().err
    scope = json.loads(results.read_text())
    assert scope["score"] == 0 and scope["tests"] == [] and words in scope["output"]


def test_no_gcc_is_the_graders_fault(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["grade", str(REFERENCE), "--out", str(tmp_path)]) == 2


def test_a_fuzz_run_stopped_by_its_time_limit_is_incomplete_not_passed(tmp_path: Path) -> None:
    path = tmp_path / "rubric.toml"
    path.write_text('[[item]]\nid = "fuzz"\npoints = 1\n[item.options]\nseconds = 1e-9\n')
    report = grade(str(REFERENCE), load(path), tmp_path)
    (result,) = report.items
    assert result.status == "incomplete" and result.points == 0 and report.exit_status == 1
    assert result.message.startswith("incomplete: stopped at the 1e-09 s time limit (CPU seconds; 1e-08 s of wall clock) after 0 of 120 programs"), result.message
