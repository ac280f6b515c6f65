"""`--junit` and `--prairielearn`: each report checked against its format's documented schema, written
here as explicit checks (JUnit: the Ant/Jenkins junit XSD's testsuites/testsuite/testcase/failure/error/
skipped and their attributes; PrairieLearn: the external grader's results.json), on real grades."""

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oracle.cli import main
from oracle.grading import junit, prairielearn
from oracle.grading.report import GradeReport, ItemResult
from oracle.hw3.grade import grade, load
from tests.conftest import broken_python
from tests.test_grade import small_rubric

DECIMAL = re.compile(r"^\d+(\.\d+)?$")
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")  # xs:dateTime without a zone, as the XSD has it


def _count(value: str | None) -> int:
    assert value is not None and value.isdigit(), value
    return int(value)


def junit_problems(root: ET.Element) -> list[str]:
    """What breaks the Ant/Jenkins junit schema in a <testsuites> document (empty: it conforms)."""
    problems = []

    def need(element: ET.Element, *names: str) -> None:
        for name in names:
            if name not in element.attrib:
                problems.append(f"<{element.tag}> lacks {name}")

    if root.tag != "testsuites":
        return [f"root is <{root.tag}>, not <testsuites>"]
    need(root, "name", "tests", "failures", "errors", "time")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in root:
        if suite.tag != "testsuite":
            problems.append(f"<testsuites> holds <{suite.tag}>")
            continue
        need(suite, "name", "tests", "failures", "errors", "time", "timestamp", "hostname", "id", "package")
        if not TIMESTAMP.match(suite.get("timestamp", "")):
            problems.append(f"timestamp {suite.get('timestamp')!r} is not an xs:dateTime")
        if not DECIMAL.match(suite.get("time", "")):
            problems.append(f"suite time {suite.get('time')!r} is not a decimal")
        order = " ".join(child.tag for child in suite)
        if not re.fullmatch(r"(properties )?(testcase )*system-out system-err", order):
            problems.append(f"<testsuite> children out of the schema's order: {order}")
        for prop in suite.iter("property"):
            need(prop, "name", "value")
        cases = suite.findall("testcase")
        counted = {"tests": len(cases), "failures": 0, "errors": 0, "skipped": 0}
        for case in cases:
            need(case, "name", "classname", "time")
            if not DECIMAL.match(case.get("time", "")):
                problems.append(f"testcase time {case.get('time')!r} is not a decimal")
            outcomes = [child for child in case if child.tag in ("failure", "error", "skipped")]
            if len(outcomes) > 1 or any(child.tag not in ("failure", "error", "skipped", "system-out", "system-err")
                                        for child in case):
                problems.append(f"testcase {case.get('name')!r} holds {[c.tag for c in case]}")
            for outcome in outcomes:
                need(outcome, *(("message",) if outcome.tag == "skipped" else ("message", "type")))
                counted[{"failure": "failures", "error": "errors", "skipped": "skipped"}[outcome.tag]] += 1
        for key, value in counted.items():
            if key in suite.attrib and _count(suite.get(key)) != value:
                problems.append(f"suite {key}={suite.get(key)} but it holds {value}")
            totals[key] += value
    for key, value in totals.items():
        if key in root.attrib and _count(root.get(key)) != value:
            problems.append(f"testsuites {key}={root.get(key)} but its suites hold {value}")
    return problems


def prairielearn_problems(data: Any) -> list[str]:
    """What breaks PrairieLearn's external grader results format (empty: it conforms)."""
    if not isinstance(data, dict):
        return ["not a JSON object"]
    problems = []
    kinds = {"succeeded": bool, "gradable": bool, "score": (int, float), "message": str, "output": str, "tests": list}
    for key, kind in kinds.items():
        if key in data and not isinstance(data[key], kind):
            problems.append(f"{key} is {type(data[key]).__name__}")
    if data.get("gradable", True) and "score" not in data:
        problems.append("a gradable result without a score")
    if isinstance(data.get("score"), (int, float)) and not 0 <= data["score"] <= 1:
        problems.append(f"score {data['score']} is outside 0..1")
    for number, test in enumerate(data.get("tests", [])):
        if not isinstance(test.get("name"), str):
            problems.append(f"test {number} has no name")
        for key in ("description", "message", "output"):
            if key in test and not isinstance(test[key], str):
                problems.append(f"test {number} {key} is not a string")
        points, most = test.get("points"), test.get("max_points")
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (points, most)):
            problems.append(f"test {number} points/max_points are not numbers")
        elif not 0 <= points <= most:
            problems.append(f"test {number} has {points} of {most} points")
    return problems


def _item(status: str, **kw: Any) -> ItemResult:
    return ItemResult(**{"id": status, "name": f"Item {status}", "rule": "Task 3", "status": status,
                         "points": 3 if status == "passed" else 0, "max_points": 0 if status == "not_applicable" else 3,
                         "visibility": "visible", "message": f"{status} here", **kw})


EVERY_STATUS = GradeReport("hw3", "alice/llm_memory.c", "c", "HW3", "rubric.toml", 7, [
    _item("passed", message=""), _item("failed", details="printed \x00\x1b[31m\ud800 raw", program="state = M()"),
    _item("not_run"), _item("not_applicable"), _item("error", details="Traceback ..."),
], seconds=1.25)


def test_the_schema_checks_catch_what_breaks_each_format() -> None:
    bad = ET.fromstring('<testsuites name="x" tests="2" failures="0" errors="0" time="1"><testsuite name="s" '
                        'tests="1" failures="1" errors="0" time="x" timestamp="today" hostname="h" id="0" package="p">'
                        '<testcase name="a" time="0"><failure/><skipped message="m"/></testcase>'
                        '<system-err/><system-out/></testsuite></testsuites>')
    words = " | ".join(junit_problems(bad))
    for expected in ("lacks classname", "not an xs:dateTime", "time 'x'", "out of the schema's order",
                     "holds ['failure', 'skipped']", "<failure> lacks message", "testsuites tests=2"):
        assert expected in words, expected
    words = " | ".join(prairielearn_problems({"gradable": True, "score": 1.5, "tests": [{"points": 4, "max_points": 3}]}))
    assert "outside 0..1" in words and "test 0 has no name" in words and "4 of 3 points" in words


def test_junit_of_every_item_status_conforms_and_says_what_happened() -> None:
    root = ET.fromstring(junit.text(EVERY_STATUS))  # parses: no character XML cannot carry
    assert junit_problems(root) == []
    suite = root.find("testsuite")
    assert suite is not None
    assert {k: suite.get(k) for k in ("tests", "failures", "errors", "skipped")} == \
        {"tests": "5", "failures": "2", "errors": "1", "skipped": "1"}
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert list(cases["Item passed"]) == []
    failure = cases["Item failed"].find("failure")
    assert failure is not None and failure.get("type") == "failed" and failure.get("message") == "failed here"
    assert "printed \\x00\\x1b[31m\\xd800 raw" in (failure.text or "") and "state = M()" in (failure.text or "")
    assert cases["Item not_run"].find("failure").get("type") == "not_run"  # type: ignore[union-attr]
    assert cases["Item not_applicable"].find("skipped").get("message") == "not_applicable here"  # type: ignore[union-attr]
    assert cases["Item error"].find("error").get("type") == "error"  # type: ignore[union-attr]
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert (props["score"], props["max_score"], props["seed"]) == ("3", "12", "7")


def test_prairielearn_of_every_item_status_conforms_and_scores_a_fraction() -> None:
    data = prairielearn.results(EVERY_STATUS)
    assert prairielearn_problems(data) == []
    assert data["succeeded"] is data["gradable"] is True and data["score"] == 0.25
    tests = {t["name"]: t for t in data["tests"]}
    assert (tests["Item passed"]["points"], tests["Item passed"]["output"]) == (3, "")
    assert "printed" in tests["Item failed"]["output"] and tests["Item failed"]["description"] == "Task 3"
    assert tests["Item not_applicable"]["max_points"] == 0


def test_reports_of_a_grader_that_could_not_run_conform_and_say_why() -> None:
    failure = GradeReport("hw3", "x", "unknown", "", "rubric.toml", 0, grader_error="gcc is not on PATH")
    root = ET.fromstring(junit.text(failure))
    assert junit_problems(root) == []
    (case,) = root.iter("testcase")
    assert case.get("name") == "grader" and case.find("error").get("message") == "gcc is not on PATH"  # type: ignore[union-attr]
    data = prairielearn.results(failure)
    assert prairielearn_problems(data) == []
    assert data["succeeded"] is data["gradable"] is False and "gcc is not on PATH" in data["message"]


def test_grade_cli_writes_conforming_reports_of_a_real_c_grade(tmp_path: Path, submission: Callable[..., Path]) -> None:
    rubric = small_rubric(tmp_path / "r.toml", ["compiles", "create_free", "tail_insertion"])
    xml, pl = tmp_path / "junit.xml", tmp_path / "pl.json"
    assert main(["grade", str(submission("broken", "tail_insertion")), "--rubric", str(rubric), "-q",
                 "--junit", str(xml), "--prairielearn", str(pl)]) == 1
    root = ET.parse(xml).getroot()
    assert junit_problems(root) == []
    failures = [case.get("classname") for case in root.iter("testcase") if case.find("failure") is not None]
    isolation = next(p.get("value") for p in root.iter("property") if p.get("name") == "isolation")
    assert isolation and isolation == json.loads(pl.read_text())["output"].removeprefix("Submission code ran in: ")
    assert failures == ["pagedcheck.hw3.tail_insertion"]
    data = json.loads(pl.read_text())
    assert prairielearn_problems(data) == []
    assert data["score"] == pytest.approx(15 / 18) and data["output"].startswith("Submission code ran in: ")
    assert [t["points"] for t in data["tests"]] == [5, 10, 0] and "active list" in data["tests"][2]["message"]
    assert (tmp_path / "repro-tail_insertion.c").is_file()  # repro files go beside the reports


def test_grade_of_a_python_module_skips_what_does_not_apply(tmp_path: Path) -> None:
    """compiles is not for Python and tail_insertion not graded for it (the list is read inside its process): both
    skipped; llm_destroy, which the bug breaks, a failure."""
    rubric = small_rubric(tmp_path / "r.toml", ["compiles", "llm_destroy", "tail_insertion"])
    report = grade(broken_python("destroy_returns_minus_one"), load(rubric), tmp_path)
    root = ET.fromstring(junit.text(report))
    assert junit_problems(root) == []
    assert [(c.get("name"), [x.tag for x in c]) for c in root.iter("testcase")] == [
        ("Compiles with the official flags", ["skipped"]), ("Task 5: llm_destroy", ["failure"]),
        ("Active list keeps creation order", ["skipped"])]
    assert prairielearn.results(report)["score"] == 0


def test_grade_cli_that_cannot_run_still_writes_both_reports(tmp_path: Path, capsys) -> None:
    xml, pl = tmp_path / "junit.xml", tmp_path / "pl.json"
    assert main(["grade", "no_such_pkg.mod", "-q", "--junit", str(xml), "--prairielearn", str(pl)]) == 2
    assert "no_such_pkg.mod" in capsys.readouterr().err
    assert junit_problems(ET.parse(xml).getroot()) == []
    assert json.loads(pl.read_text())["gradable"] is False


@pytest.mark.parametrize("option", ["--junit", "--prairielearn"])
def test_an_unwritable_report_file_is_one_line_and_exit_2(option: str, tmp_path: Path, capsys) -> None:
    (tmp_path / "r.toml").write_text('[[item]]\nid = "create_free"\npoints = 1\n')
    unwritable = "/proc/pagedcheck-report.out"  # no one, root included, may create a file there
    assert main(["grade", "engine", "--rubric", str(tmp_path / "r.toml"), "-q", "--out", str(tmp_path), option,
                 unwritable]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"cannot write {unwritable}" in err and "Traceback" not in err
