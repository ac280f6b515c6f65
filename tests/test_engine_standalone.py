"""engine/ stands alone: no module of it imports oracle/ (read from the source, never imported), its copy of
the spec's numbers equals the grader's, and engine/llm_memory.py copied alone into an empty folder is graded,
as a student's file would be, at full marks."""

import ast
import json
import shutil
from pathlib import Path

import pytest

from oracle.cli import main
from oracle.hw3 import spec
from tests.test_grade import small_rubric

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "engine"


def imported_packages(path: Path) -> set[str]:
    """The top-level names a file imports absolutely, anywhere in it (a function's own imports too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant):
            names.add(str(node.args[0].value).split(".")[0])
    return names


def test_no_engine_module_imports_oracle() -> None:
    modules = sorted(ENGINE.rglob("*.py"))
    assert len(modules) >= 8  # llm_memory.py and engine/prefix/'s modules
    importers = {str(path.relative_to(ROOT)): sorted(imported_packages(path) & {"oracle", "tests", "mutation"})
                 for path in modules}
    assert {name: found for name, found in importers.items() if found} == {}


def test_the_reading_of_imports_sees_an_import_of_oracle(tmp_path: Path) -> None:
    """The check above can fail: each way of importing is seen."""
    for line in ("import oracle.hw3", "from oracle.hw3.spec import API", "def f():\n    from oracle import cli",
                 "import importlib\nimportlib.import_module('oracle.hw3')"):
        (tmp_path / "m.py").write_text(line + "\n")
        assert "oracle" in imported_packages(tmp_path / "m.py"), line


def test_the_engine_holds_the_numbers_of_the_spec() -> None:
    from engine import llm_memory

    for name in ("BLOCK_SIZE", "KV_SIZE", "KV_PER_BLOCK", "L1_PT_SIZE", "L2_PT_SIZE", "MAX_LOGICAL_BLOCKS",
                 "UNMAPPED", "INT32_MIN", "INT32_MAX"):
        assert getattr(llm_memory, name) == getattr(spec, name), name


@pytest.mark.unmeasured  # the engine's packaging is the subject; its code is measured by the engine's own tests
def test_the_engine_copied_alone_into_an_empty_folder_gets_full_marks(tmp_path: Path) -> None:
    student = tmp_path / "student"
    student.mkdir()
    shutil.copyfile(ENGINE / "llm_memory.py", student / "llm_memory.py")
    status = main(["grade", str(student / "llm_memory.py"), "--json", str(tmp_path / "report.json"), "-q"])
    report = json.loads((tmp_path / "report.json").read_text())
    failed = {item["id"]: item["message"] for item in report["items"] if item["status"] != "passed"
              and item["status"] != "not_applicable"}
    assert failed == {}
    assert (report["score"], report["max_score"], status, report["kind"]) == (76, 76, 0, "python")


@pytest.mark.unmeasured  # the engine's packaging is the subject; its code is measured by the engine's own tests
def test_the_engine_uploaded_in_a_folder_for_a_python_course_gets_full_marks(tmp_path: Path) -> None:
    """`grade --lang python DIR` (what a Gradescope bundle made with --lang python runs) finds DIR's llm_memory.py.
    Every item, with a small fuzz budget: the default rubric's full marks are the test above's."""
    student = tmp_path / "upload" / "hw3"
    student.mkdir(parents=True)
    shutil.copyfile(ENGINE / "llm_memory.py", student / "llm_memory.py")
    rubric = small_rubric(tmp_path / "rubric.toml")
    status = main(["grade", str(tmp_path / "upload"), "--lang", "python", "--rubric", str(rubric),
                   "--json", str(tmp_path / "report.json"), "-q"])
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["score"], report["max_score"], status, report["kind"]) == (76, 76, 0, "python")
