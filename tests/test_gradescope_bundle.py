"""`pagedcheck gradescope-bundle` and `gradescope-run`: the bundle holds Gradescope's files and this pagedcheck
pinned; in a simulated /autograder tree its setup.sh installs pagedcheck from the bundle and run_autograder
grades the reference, broken and hostile fixtures and an upload in a subfolder, and writes a valid
results.json even when there is nothing to grade or pagedcheck itself is gone."""

import contextlib
import io
import json
import os
import shutil
import signal
import stat
import subprocess
import time
import zipfile
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from oracle.cli import main
from oracle.grading import autograder, bundle
from tests.test_grade import REFERENCE, small_rubric
from tests.test_submission_mistakes import MISTAKES, upload

ITEMS = ["compiles", "create_free", "tail_insertion"]  # 5 + 10 + 3 points
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """A bundle with a small rubric, and a simulated tree that its set-up ran in once (reused after)."""
    home = tmp_path_factory.mktemp("gradescope")
    rubric = small_rubric(home / "rubric.toml", ITEMS)
    (home / "programs").mkdir()  # a program of the course's own, beside its rubric, for the last item
    (home / "programs" / "our_list_order.txt").write_text("llm_init 640\ncreate_sequence 2 1\ncreate_sequence 1 1\n")
    with rubric.open("a") as f:  # when students see the result, and each test that sets no visibility
        f.write('[item.options]\nprograms = ["tail_insertion", "our_list_order"]\n')
        f.write('\n[gradescope]\nvisibility = "after_due_date"\ntest_visibility = "after_published"\n')
    zipped = home / "autograder.zip"
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        assert main(["gradescope-bundle", str(zipped), "--rubric", str(rubric), "--time-limit", "120"]) == 0
    yield {"zip": zipped, "rubric": rubric, "root": home / "autograder", "said": said.getvalue()}


def gradescope_problems(data: Any) -> list[str]:
    """What breaks Gradescope's results.json format (empty: it conforms)."""
    if not isinstance(data, dict) or not isinstance(data.get("score"), (int, float)):
        return ["no numeric top-level score"]
    problems = [f"{key} is not a string" for key in ("output", "output_format") if key in data and not isinstance(data[key], str)]
    for number, test in enumerate(data.get("tests", [])):
        for key in ("score", "max_score"):
            if not isinstance(test.get(key), (int, float)):
                problems.append(f"test {number} {key} is not a number")
        if test.get("status") not in ("passed", "failed"):
            problems.append(f"test {number} status {test.get('status')!r}")
        if test.get("visibility", "visible") not in VISIBILITIES:
            problems.append(f"test {number} visibility {test.get('visibility')!r}")
        if not isinstance(test.get("name"), str) or not isinstance(test.get("output", ""), str):
            problems.append(f"test {number} name/output are not strings")
    return problems


def _run(made: dict[str, Path], submission: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    assert main(["gradescope-run", str(made["zip"]), str(submission), "--root", str(made["root"])]) == 0
    results = json.loads((made["root"] / "results" / "results.json").read_text())
    assert gradescope_problems(results) == []
    return results, capsys.readouterr().out


def test_the_bundle_holds_gradescopes_files_and_this_pagedcheck_pinned(made: dict[str, Path]) -> None:
    with zipfile.ZipFile(made["zip"]) as archive:
        names = archive.namelist()
        modes = {info.filename: info.external_attr >> 16 for info in archive.infolist()}
        pins = archive.read("requirements.txt").decode().splitlines()
        wheel = next(name for name in names if name.endswith(".whl"))
        options = archive.read("grade-options").decode().splitlines()
        assert archive.read("rubric.toml") == made["rubric"].read_bytes()
        assert b"apt-get install" in archive.read("setup.sh") and b"trap finish EXIT" in archive.read("run_autograder")
        with zipfile.ZipFile(archive.open(wheel)) as inner:
            packaged = set(inner.namelist())
    assert {"setup.sh", "run_autograder", "requirements.txt", "rubric.toml", "grade-options"} <= set(names)
    assert "programs/our_list_order.txt" in names  # the course's programs travel with its rubric
    assert {"oracle/hw3/programs/tail_insertion.txt", "oracle/hw3/programs/battery/reinit.txt"} <= packaged
    assert all(modes[name] & stat.S_IXUSR and stat.S_ISREG(modes[name]) for name in ("setup.sh", "run_autograder"))
    assert wheel == f"pagedcheck-{metadata.version('pagedcheck')}-py3-none-any.whl"
    assert f"hypothesis=={metadata.version('hypothesis')}" in pins and all("==" in pin for pin in pins)
    assert {"oracle/hw3/rubric.toml", "oracle/hw3/c/driver.c", "engine/c/llm_memory.h", "oracle/cli.py",
            "oracle/commands/grade.py", "oracle/native/driver_heap.c", "oracle/native/driver_main.c"} <= packaged
    assert options == ["--time-limit", "120.0"]


def test_pins_follow_the_dependencies_transitively() -> None:
    pins = bundle.pins()
    assert pins == sorted(pins, key=str.lower) and f"hypothesis=={metadata.version('hypothesis')}" in pins
    needed = {name.split("==")[0].lower() for name in pins}
    assert needed >= {r.split(">")[0].split("=")[0].split(";")[0].strip().lower()
                      for r in metadata.requires("hypothesis") or [] if "extra" not in r and "python_version" not in r}


def test_the_reference_gets_full_marks_from_the_bundle_installed_in_the_tree(made, capsys) -> None:
    results, out = _run(made, REFERENCE, capsys)
    assert results["score"] == sum(t["max_score"] for t in results["tests"]) == 18
    assert [t["status"] for t in results["tests"]] == ["passed"] * 3
    root = made["root"]
    assert (root / "source" / "setup.sh").is_file() and (root / "run_autograder").is_file()
    report = json.loads((root / "results" / "report.json").read_text())
    assert report["rubric"]["source"] == str(root / "source" / "rubric.toml")
    site = list((root / "pagedcheck-venv" / "lib").glob("python3*/site-packages/oracle/cli.py"))
    assert site, "pagedcheck was not installed from the bundle into the tree's own environment"
    assert "score 18 of 18 (3 tests; set-up " in out
    assert results["visibility"] == "after_due_date"  # the rubric's [gradescope] table
    assert [t["visibility"] for t in results["tests"]] == ["after_published"] * 3


def test_the_bundle_says_the_rubrics_total_and_the_isolation_it_will_report(made) -> None:
    said = made["said"]
    assert f"rubric {made['rubric']}: HW3: vLLM PagedAttention Memory Manager, 3 items, 18 points in all" in said
    assert "results visibility after_due_date; 3 item(s) not visible at once" in said
    assert "isolation: bubblewrap (no network, own pid namespace, only its own files visible)" in said
    assert "else landlock where the kernel has it" in said and "else uid (each run as an unprivileged uid" in said


def test_a_broken_submission_loses_the_item_of_its_bug_and_the_set_up_is_reused(made, capsys, submission) -> None:
    results, out = _run(made, submission("broken", "tail_insertion"), capsys)
    scores = {t["name"]: t["score"] for t in results["tests"]}
    assert results["score"] == 15 and scores["Active list keeps creation order"] == 0
    failed = next(t for t in results["tests"] if t["status"] == "failed")
    assert "active list: expected [3, 1], got [1, 3]" in failed["output"]
    assert "set-up reused" in out


@pytest.mark.parametrize("name, label", [("abort", "aborted (SIGABRT)"), ("flood", "wrote more output than allowed")])
def test_a_hostile_submission_costs_the_item_it_reaches(name: str, label: str, made, capsys, submission) -> None:
    results, _ = _run(made, submission("hostile", name), capsys)
    tests = {t["name"]: t for t in results["tests"]}
    create_free = tests["Task 2: create_sequence / free_sequence"]
    assert (create_free["score"], create_free["status"]) == (0, "failed") and label in create_free["output"]
    assert results["score"] == sum(t["score"] for t in results["tests"]) < 18


def test_an_upload_inside_a_folder_is_found(made, capsys, tmp_path: Path) -> None:
    shutil.copytree(REFERENCE, tmp_path / "upload" / "hw3")
    results, _ = _run(made, tmp_path / "upload", capsys)
    assert results["score"] == 18


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_mistake_of_the_upload_scores_0_of_the_rubric_and_says_why(name: str, made, capsys, tmp_path: Path) -> None:
    """An empty upload, a name in another case, two copies, a main() of its own: the submission's failure, with
    what was expected and what was uploaded, in every test; never the staff's."""
    files, words = MISTAKES[name]
    results, _ = _run(made, upload(tmp_path / "upload", files), capsys)
    assert results["score"] == 0 and sum(t["max_score"] for t in results["tests"]) == 18
    assert [t["status"] for t in results["tests"]] == ["failed"] * 3
    for test in results["tests"]:
        assert all(word in test["output"] for word in words), test["output"]
    text = json.dumps(results)
    assert "course staff" not in text and "could not" not in text and "/autograder" not in text


def test_nothing_to_grade_still_writes_a_valid_results_json(made, capsys, tmp_path: Path) -> None:
    (tmp_path / "upload").mkdir()
    (tmp_path / "upload" / "README.txt").write_text("forgot the code\n")
    results, _ = _run(made, tmp_path / "upload", capsys)
    assert results["score"] == 0 and len(results["tests"]) == 3
    assert "no llm_memory.c was uploaded" in results["tests"][0]["output"] and "README.txt" in results["tests"][0]["output"]


def test_run_autograder_writes_results_json_when_pagedcheck_itself_is_gone(made, capsys) -> None:
    program = made["root"] / "pagedcheck-venv" / "bin" / "pagedcheck"
    _run(made, REFERENCE, capsys)  # the tree is set up
    program.rename(program.with_name("pagedcheck.away"))
    try:
        results, _ = _run(made, REFERENCE, capsys)
    finally:
        program.with_name("pagedcheck.away").rename(program)
    assert results["score"] == 0 and results["tests"] == []
    assert "could not grade this submission (pagedcheck grade: exit status 127, no results.json)" in results["output"]


def test_simulation_mistakes_are_one_line_and_exit_2(made, capsys, tmp_path: Path) -> None:
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "file").write_text("x")
    (tmp_path / "junk.zip").write_text("not a zip")
    with zipfile.ZipFile(tmp_path / "empty.zip", "w") as archive:
        archive.writestr("README", "no scripts")
    cases = [
        ([str(made["zip"]), str(REFERENCE), "--root", str(tmp_path / "busy")], "is not empty and was not set up"),
        ([str(tmp_path / "junk.zip"), str(REFERENCE), "--root", str(tmp_path / "a")], "is not a zip file"),
        ([str(tmp_path / "empty.zip"), str(REFERENCE), "--root", str(tmp_path / "b")], "not a pagedcheck bundle (missing"),
        ([str(tmp_path / "none.zip"), str(REFERENCE)], "none.zip: no such file"),
        ([str(made["zip"]), str(tmp_path / "junk.zip")], "is not a folder"),
    ]
    for args, words in cases:
        assert main(["gradescope-run", *args]) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and words in err and "Traceback" not in err, err


def test_a_bad_rubric_never_makes_a_bundle(tmp_path: Path, capsys) -> None:
    rubric = tmp_path / "r.toml"
    rubric.write_text('[[item]]\nid = "fuzz"\npoints = nan\n')
    assert main(["gradescope-bundle", str(tmp_path / "b.zip"), "--rubric", str(rubric)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "points must be a number >= 0 and finite, got nan" in err
    assert not (tmp_path / "b.zip").exists()


def test_a_bundle_needs_a_checkout_pip_can_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setattr(bundle, "PROJECT", tmp_path)  # no pyproject.toml here
    assert main(["gradescope-bundle", str(tmp_path / "b.zip")]) == 2
    assert "needs a pagedcheck source checkout" in capsys.readouterr().err
    (tmp_path / "pyproject.toml").write_text("[project\n")  # pip cannot read it
    with pytest.raises(bundle.BundleError, match="pip could not build the pagedcheck wheel: "):
        bundle.build_wheel(tmp_path / "dist")
    assert not (tmp_path / "b.zip").exists()


def test_an_unwritable_bundle_is_one_line_and_exit_2_before_any_build(capsys) -> None:
    assert main(["gradescope-bundle", "/proc/pagedcheck-autograder.zip"]) == 2  # no one may create a file there
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot write /proc/pagedcheck-autograder.zip" in err


def test_pins_leave_out_what_this_python_does_not_need() -> None:
    pins = bundle.pins("pytest")  # pytest needs exceptiongroup and tomli only before 3.11, colorama on Windows
    assert f"pluggy=={metadata.version('pluggy')}" in pins and f"iniconfig=={metadata.version('iniconfig')}" in pins
    assert not [pin for pin in pins if pin.startswith(("tomli", "colorama"))]


def _handmade(path: Path, setup: str, run_autograder: str) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in (("setup.sh", setup), ("run_autograder", run_autograder), ("rubric.toml", ""),
                           ("requirements.txt", "")):
            archive.writestr(name, text)
    return path


def test_the_simulation_reports_a_failed_set_up_and_a_run_without_results(tmp_path: Path, capsys) -> None:
    failing = _handmade(tmp_path / "failing.zip", "echo cannot install >&2; exit 3\n", "")
    assert main(["gradescope-run", str(failing), str(REFERENCE), "--root", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "setup.sh failed (exit 3; " in err and err.rstrip().endswith("cannot install")
    silent = _handmade(tmp_path / "silent.zip", "exit 0\n", "#!/bin/sh\necho '{not json' > \"$PAGEDCHECK_AUTOGRADER_ROOT/results/results.json\"\n")
    assert main(["gradescope-run", str(silent), str(REFERENCE), "--root", str(tmp_path / "b")]) == 2
    assert "run_autograder (exit 0) wrote no valid " in capsys.readouterr().out


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "stat").read_text().rsplit(")", 1)[1].split()[1] == str(pid):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_run_autograder_stopped_mid_grade_stops_it_and_still_writes_results_json(made, capsys, submission) -> None:
    root = made["root"]
    _run(made, REFERENCE, capsys)  # the tree is set up
    shutil.rmtree(root / "submission")
    shutil.copytree(submission("hostile", "hang"), root / "submission")
    (root / "results" / "results.json").unlink()
    runner = subprocess.Popen([str(root / "run_autograder")], env=autograder.environment(root), start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):  # until the grade runs (at most a minute)
            # pagedcheck's own argument, not any child whose command names this test's folder ("gradescope-...")
            # as mkdir's does before the script's traps are set
            grades = [pid for pid in _children(runner.pid)
                      if b"grade" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")]
            if grades:
                break
            time.sleep(0.1)
        assert grades, "run_autograder never started the grade"
        runner.send_signal(signal.SIGTERM)
        assert runner.wait(timeout=120) == 143
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGKILL)
            runner.wait()
    results = json.loads((root / "results" / "results.json").read_text())
    assert gradescope_problems(results) == [] and results["score"] == 0
    assert "pagedcheck grade: stopped by SIGTERM" in results["output"]
    assert not Path(f"/proc/{grades[0]}").exists()  # the grade was stopped and reaped


def test_a_python_bundle_grades_an_uploaded_llm_memory_py_and_scores_an_empty_upload_0(
    tmp_path_factory: pytest.TempPathFactory, capsys
) -> None:
    """gradescope-bundle --lang python: run_autograder grades the upload's llm_memory.py (the engine, copied
    alone: full marks); an empty upload is the submission's failure, 0 of the items that apply to Python."""
    home = tmp_path_factory.mktemp("gradescope-python")
    rubric = small_rubric(home / "rubric.toml", ITEMS)
    zipped = home / "autograder.zip"
    assert main(["gradescope-bundle", str(zipped), "--rubric", str(rubric), "--lang", "python"]) == 0
    assert "for Python the items that apply only to C are not counted" in capsys.readouterr().out
    made = {"zip": zipped, "root": home / "autograder"}
    student = upload(home / "student", {"llm_memory.py": Path(bundle.PROJECT) / "engine" / "llm_memory.py"})
    results, _ = _run(made, student, capsys)
    # compiles is C only; tail_insertion is not graded for Python (the list is read inside its process)
    assert results["score"] == sum(t["max_score"] for t in results["tests"]) == 10
    results, _ = _run(made, upload(home / "empty", {}), capsys)
    assert results["score"] == 0 and sum(t["max_score"] for t in results["tests"]) == 10
    failed = [t for t in results["tests"] if t["status"] == "failed"]
    assert [t["name"] for t in failed] == ["Task 2: create_sequence / free_sequence"]
    assert "no llm_memory.py was uploaded" in failed[0]["output"]
