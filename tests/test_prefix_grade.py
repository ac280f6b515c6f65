"""`pagedcheck grade --family prefix`: the lab rubric over our engine, the broken variants of it, each
adapter shape's test implementation, and the CLI's reports and usage errors."""

import builtins
import json
import re
import shutil
from pathlib import Path

import pytest

from oracle.cli import main
from oracle.grading.grader import GraderError
from oracle.prefix.grade import grade, load
from oracle.prefix.programs import BY_ITEM
from oracle.prefix.rules import RULES
from tests.conftest import LONG_PROFILE, ROOT
from tests.fixtures import PREFIX_FAILS, PREFIX_FUZZ, PREFIX_SHAPES_APPLY
from tests.test_prefix_teeth import broken_engine  # noqa: F401 (a fixture)


def with_lab_package(folder: Path) -> Path:
    """`folder` holding a copy of our engine as the package `labsol` (a student's files must be their own:
    the sandboxed child sees nothing else)."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(ROOT / "engine" / "prefix", folder / "labsol", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def statuses(report) -> dict[str, str]:
    return {item.id: item.status for item in report.items}


DEFAULT_RUBRIC = ROOT / "oracle" / "prefix" / "rubric.toml"


def small_rubric(path: Path, prefix: str = "") -> Path:
    """The default rubric, every item, with a small fuzz budget (30 programs of 30 calls for 600 of 50: the fuzz item
    took 104 s of our engine's 115 s grade on a loaded machine), `prefix` on top; for a test whose subject is not what
    the fuzz item finds (as tests/test_grade.py's for hw3)."""
    text = DEFAULT_RUBRIC.read_text()
    small = re.sub(r"^examples = \d+", "examples = 30", text, count=1, flags=re.M)
    small = re.sub(r"^steps = \d+", "steps = 30", small, count=1, flags=re.M)
    if small.count("examples = 30") != 1 or "steps = 30" not in small:
        raise RuntimeError(f"small_rubric: {DEFAULT_RUBRIC}'s fuzz item no longer has `examples` and `steps`")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(prefix + small)
    return path


def clean_grade_rubric(path: Path):
    """For a test that a correct implementation grades cleanly: the default rubric in the long profile; in the
    default suite its small fuzz budget (small_rubric): the directed items are the same, and a correct
    implementation's fuzz passes whatever its budget (600 x 50 cost 75 to 110 s of CI per grade)."""
    return load() if LONG_PROFILE else load(small_rubric(path))


def test_every_rule_of_the_rubric_has_a_program_and_every_variant_an_expectation():
    assert set(BY_ITEM) | {"fuzz"} == set(RULES) == {item.id for item in load().items}
    assert PREFIX_FAILS.keys() == PREFIX_FUZZ.keys()
    assert load().max_score == 100


def test_our_engine_gets_full_marks_with_nothing_read_past(tmp_path):
    report = grade("engine", clean_grade_rubric(tmp_path / "rubric.toml"), tmp_path / "out")
    assert report.exit_status == 0 and report.score == report.max_score == 100
    assert [item.message for item in report.items] == [""] * len(report.items)
    assert report.family == "prefix" and report.isolation.startswith("bubblewrap")


def test_the_submission_runs_in_its_own_sandboxed_process_never_in_the_graders(tmp_path):
    student = with_lab_package(tmp_path) / "imported_here.py"
    student.write_text("import builtins\nbuiltins.PAGEDCHECK_IMPORTED_HERE = True\n"
                       "from labsol import KVCacheManager, Request\n")
    rubric = small_rubric(tmp_path / "course" / "rubric.toml")  # beside the student's folder, not in it
    report = grade(str(student), load(rubric), tmp_path / "out", require_sandbox=True)
    assert report.exit_status == 0, report.items
    assert not hasattr(builtins, "PAGEDCHECK_IMPORTED_HERE")


def test_a_submission_that_kills_its_process_fails_its_steps_and_the_grader_goes_on(tmp_path):
    student = with_lab_package(tmp_path) / "exits.py"
    student.write_text("import os\nfrom labsol import KVCacheManager as Base, Request\n\n"
                       "class KVCacheManager(Base):\n"
                       "    def free(self, request):\n        os._exit(0)\n")
    report = grade(str(student), load(), tmp_path / "out")
    got = statuses(report)
    assert got["free_queue"] == got["reverse_order_free"] == got["fuzz"] == "failed", report.items
    assert "ended the process" in next(i.message for i in report.items if i.id == "free_queue")
    assert got["hit_cap"] == "passed"  # its program frees nothing


@pytest.mark.parametrize("variant", sorted(PREFIX_FAILS))
def test_broken_variant_fails_exactly_its_own_items(variant, broken_engine, tmp_path):  # noqa: F811
    report = grade(f"lab:{broken_engine(variant)}", load(), tmp_path)
    failed, not_run = PREFIX_FAILS[variant]
    got = statuses(report)
    assert {item for item, status in got.items() if status == "failed"} == failed, report.items
    assert {item for item, status in got.items() if status == "not_run"} == not_run, report.items
    for item in report.items:
        if item.status == "failed" and item.id != "fuzz":
            # the step, the call, expected and actual, and the rule, as a student reads them
            assert f"{BY_ITEM[item.id].name}: step " in item.message and "expected " in item.message
            assert item.message.endswith(f"[rule: {item.id}]") and "  1  manager = KVCacheManager(" in item.details
        if item.status == "not_run":
            assert "checked nothing of its own rule" in item.message and "that is item " in item.message
    fuzz = next(item for item in report.items if item.id == "fuzz")
    if fuzz.status == "failed":  # every aspect has a rule row
        assert any(f"[rule: {rule}]" in fuzz.message for rule in RULES), fuzz.message


def test_a_failing_item_names_the_step_and_values(broken_engine, tmp_path):  # noqa: F811
    report = grade(f"lab:{broken_engine('forward_order_free')}", load(), tmp_path)
    item = next(item for item in report.items if item.id == "reverse_order_free")
    # the free's order shows where the program's own next admit takes its blocks (oracle/prefix/taken_order.py)
    assert item.message == ("reverse order free: step 4 admit(req 1, tokens [20..36]): release order: the blocks "
                            "free(req 0) put back: expected [4, 3, 2, 1], got [1, 2, 3, 4] (in the order this call takes "
                            "them from the free queue) [rule: reverse_order_free]")


# shape -> the items that apply to its test implementation under its own policy: tests/fixtures.py, PREFIX_SHAPES_APPLY
APPLIES = PREFIX_SHAPES_APPLY


@pytest.mark.unmeasured
@pytest.mark.parametrize("shape", sorted(APPLIES))
def test_shape_test_implementation_grades_cleanly_under_its_policy(shape, tmp_path):
    # nanovllm's false hit is found by the default fuzz's budget (its seed and 600 x 50), not by the small one
    rubric = load() if shape == "nanovllm" else clean_grade_rubric(tmp_path / "rubric.toml")
    report = grade(f"{shape}:tests.prefix_shapes.{shape}_shape", rubric, tmp_path / "out")
    got = statuses(report)
    assert {item for item, status in got.items() if status == "passed"} == APPLIES[shape], report.items
    failed = {"fuzz", "no_false_hit"} if shape == "nanovllm" else set()
    assert {item for item, status in got.items() if status == "not_applicable"} == set(got) - APPLIES[shape] - failed
    assert {item for item, status in got.items() if status == "failed"} == failed
    assert not [item.message for item in report.items if item.status == "passed" and item.message]
    if failed:
        assert "no false hit" in next(item.message for item in report.items if item.id == "fuzz")
        assert next(item.message for item in report.items if item.id == "no_false_hit").startswith(
            "no false hit: step 22 admit(req 9, tokens [7, 7, 7, 7, 7, 7, 7, 7, 5]): req 9 "
            "block_table[1] (block 13) holds the KV computed for the prefix [8, 8, 8, 8, 7, 7, 7, 7], not the KV of "
            "the prefix asked for, [7, 7, 7, 7, 7, 7, 7, 7]")


def test_under_the_universal_invariants_only_the_exact_rules_do_not_apply(tmp_path):
    report = grade("lab:engine.prefix@any", clean_grade_rubric(tmp_path / "rubric.toml"), tmp_path / "out")
    got = statuses(report)
    assert {item for item, status in got.items() if status == "not_applicable"} == \
        {"free_queue", "reverse_order_free", "eviction"}
    assert report.exit_status == 0


def test_a_py_file_of_the_labs_shape_is_graded(tmp_path):
    student = with_lab_package(tmp_path / "student") / "my_cache.py"
    student.write_text("from labsol import KVCacheManager, Request\n")
    report = grade(str(student), load(small_rubric(tmp_path / "rubric.toml")), tmp_path / "out")
    assert report.exit_status == 0, report.items


def test_a_module_that_does_not_load_is_graded_not_run(tmp_path):
    student = tmp_path / "broken_import.py"
    student.write_text("raise SystemExit(3)\n")
    report = grade(str(student), load(), tmp_path / "out")
    assert set(statuses(report).values()) == {"not_run"} and report.exit_status == 1
    assert "did not load: called sys.exit(3) while loading" in report.items[0].message


@pytest.mark.parametrize("submission, words", [
    ("engine@nope", "unknown policy 'nope'"),
    ("lab:no_such_module_here", "cannot find module"),
    ("tests/prefix_shapes/nothing.py", "no such file"),
])
def test_what_cannot_be_graded_is_a_grader_error(submission, words, tmp_path):
    with pytest.raises(GraderError, match=words):
        grade(submission, load(), tmp_path)


def test_cli_grades_prefix_with_json_and_gradescope(tmp_path, capsys):
    code = main(["grade", "--family", "prefix", "engine", "--json", str(tmp_path / "r.json"),
                 "--gradescope", str(tmp_path / "g.json"), "--rubric", str(small_rubric(tmp_path / "rubric.toml")), "-q"])
    out = capsys.readouterr().out
    assert code == 0 and "100/100" in out and "submission code ran in: bubblewrap" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["family"] == "prefix" and report["score"] == 100 and len(report["items"]) == 12
    assert json.loads((tmp_path / "g.json").read_text())["score"] == 100


@pytest.mark.parametrize("argv, words", [
    (["grade", "--family", "nope", "engine"], "unknown family 'nope'; known: blockspace, hw3, prefix"),
    (["grade-all", "--family", "nope", "."], "unknown family 'nope'"),
    (["mutation", "--family", "nope"], "unknown family 'nope'"),
    (["grade", "--family", "prefix", "tests"], "grades a package folder"),
])
def test_cli_bad_family_input_is_one_line_and_status_2(argv, words, capsys):
    assert main([*argv, "-q"] if argv[0] != "mutation" else argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err and "Traceback" not in err


def test_grade_all_grades_prefix_folders(tmp_path):
    classroom = tmp_path / "class"
    with_lab_package(classroom / "alice")
    (classroom / "alice" / "kv_cache.py").write_text("from labsol import KVCacheManager, Request\n")
    (classroom / "bob").mkdir()
    (classroom / "bob" / "kv_cache.py").write_text("KVCacheManager = None\n")
    rubric = small_rubric(tmp_path / "rubric.toml")
    assert main(["grade-all", "--family", "prefix", str(classroom), "--rubric", str(rubric), "-q"]) == 1
    rows = (tmp_path / "class-grades" / "scores.csv").read_text().splitlines()
    assert rows[1].startswith("alice,100,100,passed") and rows[2].startswith("bob,0,")
    assert json.loads((tmp_path / "class-grades" / "alice" / "report.json").read_text())["family"] == "prefix"


def test_the_child_server_answers_adapter_calls_in_json(tmp_path):
    """oracle/prefix/serve.py's adapter on the core's AdapterServer, run here over real pipes (the child runs the
    same code)."""
    import os

    import engine.prefix
    from oracle.prefix.adapters.lab import LabAdapter
    from oracle.prefix.observation import ImplementationFailure
    from oracle.prefix.policy import LAB
    from oracle.prefix.serve import METHODS, Served
    from oracle.serve import AdapterServer, receive, write

    requests_r, requests_w = os.pipe()
    replies_r, replies_w = os.pipe()
    server = AdapterServer(replies_w, lambda target: Served(LabAdapter(target, "engine.prefix", LAB)), METHODS,
                           ImplementationFailure, [engine.prefix])
    asked = [{"op": "new"}, {"op": "call", "method": "start", "args": [4, 2]},
             {"op": "call", "method": "admit", "args": [0, [1, 2, 3]]}, {"op": "call", "method": "observe", "args": []},
             {"op": "call", "method": "fork", "args": [9, 0]}]  # (a fatal reply would end this process)
    for request in asked:
        write(requests_w, json.dumps(request).encode())
    os.close(requests_w)
    server.serve(requests_r)
    replies = [receive(replies_r) for _ in asked]
    assert replies[:3] == [{"ret": None}, {"ret": None}, {"ret": [True, 0]}]
    assert replies[3]["ret"]["tables"] == [[0, [1, 2]]] and replies[3]["ret"]["free"] == [3]
    assert [block for block, _ in replies[3]["ret"]["hashes"]] == [1]  # the full block, its hash as text
    assert replies[4] == {"failure": "raised KeyError: 9", "fatal": False}  # no request 9


def test_a_package_folder_named_like_a_grader_module_changes_nothing_in_the_grader(tmp_path):
    """A package folder is named by its path: its parent never goes on the grader's import path, so a package
    called `oracle` (or a module beside it called `xml`) is imported in the sandboxed child alone."""
    import sys

    (tmp_path / "oracle").mkdir()
    (tmp_path / "oracle" / "__init__.py").write_text("from labsol import KVCacheManager, Request\n")
    (tmp_path / "xml.py").write_text("raise SystemExit('the grader imported the submission')\n")
    path = list(sys.path)
    report = grade(str(tmp_path / "oracle"), load(small_rubric(tmp_path / "rubric.toml")), tmp_path / "out")
    assert sys.path == path and str(tmp_path) not in sys.path
    assert report.items and all("the grader imported" not in item.message for item in report.items)


def test_a_call_that_hangs_fails_its_step_within_the_timeout(tmp_path):
    student = with_lab_package(tmp_path) / "hangs.py"
    student.write_text("from labsol import KVCacheManager as Base, Request\n\n"
                       "class KVCacheManager(Base):\n"
                       "    def free(self, request):\n        while True:\n            pass\n")
    rubric = tmp_path / "rubric.toml"
    rubric.write_text('[[item]]\nid = "free_queue"\npoints = 1\n\n[[item]]\nid = "hit_cap"\npoints = 1\n')
    report = grade(str(student), load(rubric), tmp_path / "out", timeout=0.5)
    failed = next(item for item in report.items if item.id == "free_queue")
    assert failed.status == "failed" and "hung: no answer within 0.5 s" in failed.message, failed
    assert statuses(report)["hit_cap"] == "passed"  # the child was restarted for the next item
