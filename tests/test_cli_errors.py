"""The CLI's error paths: every bad input is one line on stderr and exit status 2, never a traceback; and the
progress lines a person sees when not quiet. All in-process through oracle.cli.main."""

import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from engine import llm_memory
from oracle.cli import main
from oracle.hw3.grade import load as load_rubric
from oracle.hw3.adapters import API

ROOT = Path(__file__).resolve().parents[1]
UNWRITABLE = "/proc/pagedcheck-report.json"  # the parent is a directory; no one (root included) may create a file there


def one_line_error(capsys: pytest.CaptureFixture[str], command: str, words: str) -> None:
    err = capsys.readouterr().err
    assert err.startswith(f"pagedcheck {command}: error: "), err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err, err


def test_json_into_a_directory_is_refused_by_the_parser(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["fuzz", "--json", str(tmp_path)])
    assert exited.value.code == 2 and "is a directory" in capsys.readouterr().err


def test_an_unwritable_json_file_is_one_line_and_exit_2(capsys):
    assert main(["fuzz", "--examples", "2", "--steps", "3", "--seed", "1", "-q", "--json", UNWRITABLE]) == 2
    one_line_error(capsys, "fuzz", f"cannot write {UNWRITABLE}: ")


def test_fuzz_without_quiet_shows_progress_and_still_reports(capsys):
    assert main(["fuzz", "--examples", "3", "--steps", "5", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "3 examples" in out and "OK: the implementation agreed" in out


@pytest.mark.parametrize("value, words", [("abc", "expected seconds, got 'abc'"), ("0", "expected seconds > 0, got 0.0"),
                                          ("-1", "expected seconds > 0")])
def test_a_bad_timeout_is_refused(value, words, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["grade", "engine", f"--timeout={value}"])
    assert exited.value.code == 2 and words in capsys.readouterr().err


def _rubric(tmp_path: Path, item: str = "create_free") -> Path:
    path = tmp_path / "rubric.toml"
    path.write_text(f'title = "t"\n[[item]]\nid = "{item}"\npoints = 2\n')
    return path


def test_grade_without_quiet_prints_one_progress_line_per_item(tmp_path, capsys):
    rubric = _rubric(tmp_path)
    assert main(["grade", "engine", "--rubric", str(rubric), "--out", str(tmp_path / "out")]) == 0
    captured = capsys.readouterr()
    assert "grade: create_free: passed (" in captured.err
    assert "2/2" in captured.out


def test_grade_of_a_module_that_does_not_import_writes_failure_reports_and_exits_2(tmp_path, capsys):
    report, scope = tmp_path / "report.json", tmp_path / "results.json"
    assert main(["grade", "no_such_pkg.mod", "--json", str(report), "--gradescope", str(scope), "--seed", "5", "-q"]) == 2
    one_line_error(capsys, "grade", "no_such_pkg.mod: not a C submission")
    data = json.loads(report.read_text())
    assert data["exit_status"] == 2 and data["kind"] == "unknown" and data["seed"] == 5 and data["items"] == []
    assert "no_such_pkg.mod" in data["grader_error"]
    results = json.loads(scope.read_text())
    assert results["score"] == 0 and results["tests"] == [] and "The grader could not run" in results["output"]


def test_grade_of_a_missing_c_path_is_exit_2(tmp_path, capsys):
    assert main(["grade", str(tmp_path / "alice" / "llm_memory.c"), "-q"]) == 2
    one_line_error(capsys, "grade", "alice")


def test_grade_all_of_a_file_or_missing_directory_is_exit_2(tmp_path, capsys):
    assert main(["grade-all", str(tmp_path / "missing")]) == 2
    one_line_error(capsys, "grade-all", "is not a directory")
    (tmp_path / "file").write_text("")
    assert main(["grade-all", str(tmp_path / "file")]) == 2
    one_line_error(capsys, "grade-all", "is not a directory")


def test_grade_all_of_a_directory_without_submission_folders_is_exit_2(tmp_path, capsys):
    batch = tmp_path / "batch"
    (batch / ".git").mkdir(parents=True)  # hidden folders are not submissions, nor are files
    (batch / "notes.txt").write_text("x")
    assert main(["grade-all", str(batch)]) == 2
    one_line_error(capsys, "grade-all", "holds no submission folders")


@pytest.mark.parametrize("where", ["batch", "batch/alice"])
def test_grade_all_refuses_an_out_that_mixes_reports_with_submissions(tmp_path, capsys, where):
    (tmp_path / "batch" / "alice").mkdir(parents=True)
    assert main(["grade-all", str(tmp_path / "batch"), "--out", str(tmp_path / where)]) == 2
    one_line_error(capsys, "grade-all", "would mix reports with submissions")


def test_grade_all_passes_rubric_and_seed_to_each_grader(tmp_path, capsys):
    (tmp_path / "batch" / "empty").mkdir(parents=True)  # no llm_memory.c: the submission's failure, graded 0
    out = tmp_path / "grades"
    assert main(["grade-all", str(tmp_path / "batch"), "--out", str(out), "--seed", "77", "--rubric",
                 str(_rubric(tmp_path)), "-q"]) == 1
    report = json.loads((out / "empty" / "report.json").read_text())
    assert report["seed"] == 77 and report["rubric"]["source"] == str(_rubric(tmp_path))
    assert report["grader_error"] is None and "no llm_memory.c was uploaded" in report["items"][0]["message"]
    assert "graded 1 of 1 submissions" in capsys.readouterr().out


def test_mutation_without_mutmut_installed_is_exit_2(tmp_path, capsys, monkeypatch):
    """A Python whose import path has no mutmut (PYTHONPATH is not consulted in-process: sys.path is)."""
    import importlib.util
    import sys

    if importlib.util.find_spec("mutmut") is None:
        pytest.skip("mutmut is not installed here")
    origin = Path(importlib.util.find_spec("mutmut").origin).resolve().parents[1]
    monkeypatch.setattr(sys, "path", [p for p in sys.path if Path(p or ".").resolve() != origin])
    for name in [m for m in sys.modules if m == "mutmut" or m.startswith("mutmut.")]:
        monkeypatch.delitem(sys.modules, name)
    assert importlib.util.find_spec("mutmut") is None
    assert main(["mutation", "-q"]) == 2
    one_line_error(capsys, "mutation", "mutmut is not installed")


def test_mutation_c_of_a_source_that_does_not_compile_cleanly_is_exit_2(tmp_path, capsys):
    source = tmp_path / "llm_memory.c"
    source.write_text('#include "llm_memory.h"\nint unused_result(int x) { int y; return x; }\n')
    assert main(["mutation", "--c", str(source), "-q"]) == 2
    one_line_error(capsys, "mutation", "itself does not compile cleanly with the official flags")


def test_mutation_c_on_a_tiny_source_prints_the_summary_and_writes_json(tmp_path, capsys):
    """Every mutant of a source that defines none of the API fails to link: killed by "compiles"."""
    source = tmp_path / "llm_memory.c"
    source.write_text('#include "llm_memory.h"\nint answer(int x);\nint answer(int x) { return x + 1; }\n')
    report = tmp_path / "mutation.json"
    assert main(["mutation", "--c", str(source), "--jobs", "2", "--json", str(report)]) == 0
    captured = capsys.readouterr()
    assert "mutation: " in captured.err and "PASS" in captured.out
    data = json.loads(report.read_text())
    assert data["graded"] >= 1 and data["killed"] == data["graded"] and data["killed_by_item"] == {"compiles": data["killed"]}
    assert data["passed"] and data["score"] == 1.0


def _presses_ctrl_c_at(program: int) -> SimpleNamespace:
    """The built-in engine, with a person pressing Ctrl-C as the `program`-th program starts (its llm_init).
    The KeyboardInterrupt is raised in that call, where Python's SIGINT handler would raise it between two
    bytecodes: sent as a real signal, it can land inside coverage's tracer and leave the tracer's lock held,
    which hung CI. It is raised before the call touches anything, so no program is left half-run."""
    inits = itertools.count(1)

    def llm_init(*args: Any) -> Any:
        if next(inits) == program:
            raise KeyboardInterrupt
        return llm_memory.llm_init(*args)

    return SimpleNamespace(**{api: getattr(llm_memory, api) for api in API} | {"llm_init": llm_init})


PRESSES_CTRL_C = _presses_ctrl_c_at(50)


def test_an_interrupt_is_exit_130_with_one_line(capsys):
    """Ctrl-C during a fuzz run (as its 50th program of 2000 starts) ends it with one line and exit status 130."""
    impl = "tests.test_cli_errors:PRESSES_CTRL_C"
    status = main(["fuzz", "--impl", impl, "--examples", "2000", "--seed", "3", "-q"])
    assert status == 130
    err = capsys.readouterr().err
    assert err == "pagedcheck fuzz: interrupted\n"


def test_grade_all_with_the_default_rubric_and_seed(tmp_path, capsys):
    (tmp_path / "batch" / "empty").mkdir(parents=True)
    out = tmp_path / "grades"
    assert main(["grade-all", str(tmp_path / "batch"), "--out", str(out), "-q"]) == 1
    report = json.loads((out / "empty" / "report.json").read_text())
    assert report["seed"] == 110 and report["rubric"]["source"].endswith("rubric.toml")
    assert (report["score"], report["max_score"]) == (0, load_rubric().max_score) > (0, 0)  # never "0 of 0"
    assert "no llm_memory.c was uploaded" in report["items"][0]["message"]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="needs root and unshare, to mount a small full tmpfs in a mount namespace of its own")
def test_a_full_disk_while_preparing_the_run_is_one_line_and_a_report(tmp_path: Path) -> None:
    """The grader's temporary folder on a 1 MiB tmpfs with one page left: `tempfile` still finds it usable, copying
    the submission into the sandbox then fails with ENOSPC. That is the one submission's one-line error (exit 2) and
    its report says so; no traceback."""
    from tests.test_blockspace_grade import student_copy

    top = Path(tempfile.mkdtemp(prefix="pagedcheck-enospc-"))  # every run's uid passes through it (else: /tmp)
    top.chmod(0o711)
    try:
        sub, disk, report = student_copy(top / "sub"), top / "disk", tmp_path / "report.json"
        disk.mkdir(mode=0o711)
        script = ('mount -t tmpfs -o size=1m,mode=0711 tmpfs "$0" && dd if=/dev/zero of="$0/fill" bs=4k count=255 '
                  '2>/dev/null && TMPDIR="$0" "$@"')
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(disk),
                               sys.executable, "-m", "oracle.cli", "grade", "--family", "blockspace", str(sub), "-q",
                               "--json", str(report)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    said = "pagedcheck grade: error: the grader could not prepare the run: No space left on device\n"
    assert (done.returncode, done.stderr) == (2, said), done.stderr[-800:]
    assert json.loads(report.read_text())["grader_error"] == said.split("error: ", 1)[1].strip()
