"""`pagedcheck grade --family blockspace`: the paged block manager rubric over our engine (in the sandboxed
child), a broken variant of it, submissions that do not load, and the CLI's usage errors."""

import json
import shutil
import sys
from pathlib import Path

import pytest

from oracle.blockspace.grade import GRADER
from oracle.blockspace.rules import RULES
from oracle.cli import main
from oracle.grading.grader import GraderError
from tests.conftest import ROOT, patched


def student_copy(folder: Path, patch: str | None = None) -> Path:
    """A student's folder holding a copy of our engine's block manager as plain modules (block_manager.py and
    the modules it imports), with one of the broken variants' patches applied if asked."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in (ROOT / "engine" / "blockspace").glob("*.py"):
        text = path.read_text().replace("from .", "from ")
        if patch and path.name in Path(patch).read_text():
            text = patched(text, Path(patch))
        (folder / path.name).write_text(text.replace("from . import", "import"))
    (folder / "__init__.py").unlink()
    return folder


def test_the_rubric_names_every_rule_once_and_totals_100():
    assert set(GRADER.checks) == set(RULES) == {item.id for item in GRADER.load().items}
    assert GRADER.load().max_score == 100


def test_our_engine_gets_full_marks_in_the_sandbox(tmp_path):
    report = GRADER.grade("engine", GRADER.load(), tmp_path)
    assert report.exit_status == 0 and report.score == report.max_score == 100
    assert [item.message for item in report.items] == [""] * len(report.items)
    assert report.family == "blockspace" and report.kind == "python"


def test_a_students_folder_is_graded_and_a_bug_costs_its_own_item_and_fuzz_only(tmp_path):
    clean = student_copy(tmp_path / "clean")
    assert GRADER.grade(str(clean), GRADER.load(), tmp_path / "out1").score == 100
    broken = student_copy(tmp_path / "broken", str(ROOT / "tests" / "broken_blockspace" / "fork_no_incref.patch"))
    report = GRADER.grade(str(broken / "block_manager.py"), GRADER.load(), tmp_path / "out2")
    failed = {item.id for item in report.items if item.status != "passed"}
    assert failed == {"sharing", "fuzz"}, [(i.id, i.message) for i in report.items]
    sharing = next(item for item in report.items if item.id == "sharing")
    assert "[rule: sharing]" in sharing.message and "program beam_search:" in sharing.details


def test_a_submission_that_does_not_load_gets_every_item_not_run(tmp_path):
    (tmp_path / "block_manager.py").write_text("raise RuntimeError('not today')\n")
    report = GRADER.grade(str(tmp_path / "block_manager.py"), GRADER.load(), tmp_path / "out")
    assert report.score == 0 and {item.status for item in report.items} == {"not_run"}
    assert "RuntimeError: not today" in report.items[0].message


def test_a_manager_that_is_not_one_fails_each_item_on_the_call_it_lacks(tmp_path):
    (tmp_path / "block_manager.py").write_text("class BlockSpaceManager:\n    def __init__(self, *a):\n        pass\n")
    report = GRADER.grade(str(tmp_path / "block_manager.py"), GRADER.load(), tmp_path / "out")
    assert report.score == 0 and {item.status for item in report.items} == {"failed", "not_run"}
    assert "has no attribute 'get_num_free_gpu_blocks'" in report.items[0].message


def test_the_submission_is_never_imported_by_the_grader(tmp_path):
    (tmp_path / "block_manager.py").write_text("import sys\nsys.exit(3)\n")
    report = GRADER.grade(str(tmp_path / "block_manager.py"), GRADER.load(), tmp_path / "out")
    assert "block_manager" not in sys.modules and report.score == 0 and "sys.exit(3)" in report.items[0].message


def test_a_path_that_names_nothing_is_a_grader_error(tmp_path):
    with pytest.raises(GraderError, match="no such file"):
        GRADER.grade(str(tmp_path / "absent.py"), GRADER.load(), tmp_path)


def test_the_cli_grades_the_engine_with_full_marks_and_writes_json(tmp_path, capsys):
    status = main(["grade", "--family", "blockspace", "engine", "-q", "--json", str(tmp_path / "r.json")])
    assert status == 0 and "100/100" in capsys.readouterr().out
    assert json.loads((tmp_path / "r.json").read_text())["score"] == 100


def test_the_cli_fuzzes_the_engine_and_prints_the_memory_waste(capsys):
    assert main(["fuzz", "--family", "blockspace", "--examples", "30", "--steps", "20", "--seed", "3", "-q"]) == 0
    out = capsys.readouterr().out
    assert "memory waste: " in out and "OK: the implementation agreed" in out


def test_the_cli_refuses_an_impl_that_is_not_a_block_manager(capsys):
    assert main(["fuzz", "--family", "blockspace", "--impl", "engine.blockspace:Sequence", "-q"]) == 2
    assert "not a block manager class (no can_allocate" in capsys.readouterr().err
