"""A submission's own mistakes are graded, never blamed on the grader (oracle/hw3/c/build.py's
submission_source and BuildResult.verdict): an empty upload, a name in another case, two copies score 0 of
the rubric's total naming what was expected and what was uploaded (exit 1); a lone llm_memory.c in a folder of
the upload is found; a main() of its own says to remove it, without the grader's paths; the build's problem is
named in every rubric, one without a `compiles` item too; `fuzz --impl` judges a file that only warns as
`grade` does. Real gcc, real grading runs through the CLI."""

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.cli import main
from tests.test_grade import REFERENCE, small_rubric

ROOT = Path(__file__).resolve().parents[1]
WITH_COMPILES = ["compiles", "create_free", "tail_insertion"]  # 5 + 10 + 3 points
WITHOUT_COMPILES = ["create_free", "tail_insertion"]  # 10 + 3


def upload(folder: Path, files: dict[str, str | Path]) -> Path:
    """A submission folder holding `files` (relative name -> text, or a file to copy)."""
    folder.mkdir(parents=True)
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copyfile(content, folder / name)
        else:
            (folder / name).write_text(content)
    return folder


def stray_main() -> str:
    return (REFERENCE / "llm_memory.c").read_text() + "\nint main(void)\n{\n    return 0;\n}\n"


MISTAKES: dict[str, tuple[dict[str, str | Path], list[str]]] = {
    "empty": ({}, ["no llm_memory.c was uploaded", "expected a file named llm_memory.c", "the upload is empty"]),
    "misnamed": ({"LLM_memory.c": REFERENCE / "llm_memory.c", "notes.txt": "x"},
                 ["no llm_memory.c was uploaded", "the upload holds LLM_memory.c, notes.txt",
                  "LLM_memory.c differs in case: rename it llm_memory.c"]),
    "two_copies": ({"a/llm_memory.c": REFERENCE / "llm_memory.c", "b/llm_memory.c": REFERENCE / "llm_memory.c"},
                   ["the upload holds 2 files named llm_memory.c (a/llm_memory.c, b/llm_memory.c)"]),
    "stray_main": ({"llm_memory.c": stray_main()},
                   ["llm_memory.c defines main() (line ", "remove main(): the grader links its own"]),
}


def graded(tmp_path: Path, folder: Path, items: list[str]) -> tuple[int, dict, dict]:
    rubric = small_rubric(tmp_path / "rubric.toml", items)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    status = main(["grade", str(folder), "--rubric", str(rubric), "--json", str(out / "report.json"),
                   "--gradescope", str(out / "results.json"), "-q"])
    return status, json.loads((out / "report.json").read_text()), json.loads((out / "results.json").read_text())


@pytest.mark.parametrize("items", [WITH_COMPILES, WITHOUT_COMPILES], ids=["with_compiles", "without_compiles"])
@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_a_mistake_of_the_submission_scores_0_of_the_rubric_and_says_why(
    name: str, items: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files, words = MISTAKES[name]
    status, report, results = graded(tmp_path, upload(tmp_path / "student", files), items)
    total = 18 if "compiles" in items else 13
    assert (status, report["exit_status"], report["grader_error"]) == (1, 1, None)
    assert (report["score"], report["max_score"]) == (0, total)  # never "0 of 0"
    assert results["score"] == 0 and sum(t["max_score"] for t in results["tests"]) == total
    for item in report["items"]:  # every item says why, in the submission's terms: the compiles item too
        assert all(word in item["message"] for word in words), (item["id"], item["message"])
    text = json.dumps(results)
    assert "course staff" not in text and "could not run" not in text
    assert str(ROOT) not in text and "driver" not in text  # no path or file of the grader's
    assert "wrote " + str(tmp_path / "out" / "report.json") in capsys.readouterr().out


@pytest.mark.parametrize("where", ["hw3/llm_memory.c", "hw3/src/llm_memory.c"])
def test_a_lone_llm_memory_c_in_a_folder_of_the_upload_is_graded(where: str, tmp_path: Path) -> None:
    """As run_autograder finds it on Gradescope, so grade and grade-all give the same grade."""
    status, report, _ = graded(tmp_path, upload(tmp_path / "student", {where: REFERENCE / "llm_memory.c"}),
                               WITH_COMPILES)
    assert (status, report["score"], report["max_score"]) == (0, 18, 18)


def test_a_compile_error_is_named_in_a_rubric_without_a_compiles_item(tmp_path: Path) -> None:
    source = (REFERENCE / "llm_memory.c").read_text().replace("return NULL;", "return NULL", 1)
    status, report, _ = graded(tmp_path, upload(tmp_path / "student", {"llm_memory.c": source}), WITHOUT_COMPILES)
    assert status == 1 and report["score"] == 0
    for item in report["items"]:
        assert item["status"] == "not_run" and "the submission does not build: gcc" in item["message"]
        assert "llm_memory.c:" in item["message"] and "error: expected" in item["message"], item["message"]


def test_a_path_that_does_not_exist_stays_the_callers_mistake(tmp_path: Path, capsys) -> None:
    assert main(["grade", str(tmp_path / "nowhere"), "-q"]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_fuzz_judges_a_file_that_only_warns_as_grade_does(
    submission: Callable[..., Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warning = submission("hostile", "warning")
    assert main(["fuzz", "--impl", str(warning / "llm_memory.c"), "--examples", "5", "--steps", "10", "--seed",
                 "1", "-q"]) == 1  # not 2: the file is fuzzed, and fails the spec's -Werror rule
    out = capsys.readouterr().out
    assert "warns, and the spec treats warnings as errors (-Werror)" in out
    assert "error: unused variable" in out and "5 examples" in out
    assert "OK: the implementation agreed with the model after every step, but it does not build" in out
    status, report, _ = graded(tmp_path, warning, WITH_COMPILES)
    compiles = report["items"][0]
    assert (status, compiles["status"]) == (1, "failed")
    assert "warns, and the spec treats warnings as errors (-Werror)" in compiles["message"]
    assert report["score"] == 13  # the other items graded on the build without -Werror


def test_fuzz_of_the_reference_has_no_fault(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fuzz", "--impl", str(REFERENCE / "llm_memory.c"), "--examples", "3", "--steps", "5", "--seed",
                 "1", "-q"]) == 0
    assert "-Werror" not in capsys.readouterr().out


@pytest.mark.parametrize("files, words", [
    ({}, ["no llm_memory.py was uploaded", "the upload is empty"]),
    ({"LLM_Memory.py": ROOT / "engine" / "llm_memory.py"}, ["LLM_Memory.py differs in case: rename it llm_memory.py"]),
    ({"llm_memory.c": REFERENCE / "llm_memory.c"}, ["no llm_memory.py was uploaded", "the upload holds llm_memory.c"]),
], ids=["empty", "misnamed", "c_file"])
def test_a_python_upload_without_llm_memory_py_scores_0_and_says_why(files, words, tmp_path: Path) -> None:
    rubric = small_rubric(tmp_path / "rubric.toml", WITH_COMPILES)
    status = main(["grade", str(upload(tmp_path / "student", files)), "--lang", "python", "--rubric", str(rubric),
                   "--json", str(tmp_path / "report.json"), "-q"])
    report = json.loads((tmp_path / "report.json").read_text())
    assert (status, report["kind"], report["grader_error"]) == (1, "python", None)
    # compiles is not for Python, nor tail_insertion (the list's order is read inside the submission's process)
    assert (report["score"], report["max_score"]) == (0, 10)
    graded = [item for item in report["items"] if item["max_points"]]
    assert [item["id"] for item in graded] == ["create_free"]
    for item in graded:
        assert item["status"] == "not_run" and all(word in item["message"] for word in words), item["message"]


def test_lang_is_refused_for_a_family_of_one_language(tmp_path: Path, capsys) -> None:
    assert main(["grade", str(tmp_path), "--family", "prefix", "--lang", "python", "-q"]) == 2
    assert "--lang: the prefix family grades one language" in capsys.readouterr().err


def test_an_upload_of_hidden_files_only_and_odd_names_are_said_plainly(tmp_path: Path) -> None:
    from oracle.native.upload import Refused, only_file_below

    hidden = upload(tmp_path / "hidden", {".git/llm_memory.c": REFERENCE / "llm_memory.c", ".DS_Store": "x"})
    with pytest.raises(Refused, match="the upload holds only hidden files and folders"):
        only_file_below(hidden, "llm_memory.c")
    odd = upload(tmp_path / "odd", {"a\x1b[31mb.c": "x"})
    with pytest.raises(Refused) as refused:
        only_file_below(odd, "llm_memory.c")
    assert "'a\\x1b[31mb.c'" in str(refused.value) and "\x1b" not in str(refused.value)
    many = upload(tmp_path / "many", {f"f{i:02d}.c": "x" for i in range(12)})
    with pytest.raises(Refused, match=r"f07\.c and 4 more"):
        only_file_below(many, "llm_memory.c")
