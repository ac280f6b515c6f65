"""JUnit XML, for CI systems (Jenkins, GitLab, GitHub test reporters): a grade report as one test suite.

The layout is the common Ant/Jenkins junit schema:

    <testsuites name tests failures errors skipped time>
      <testsuite id package name tests failures errors skipped time timestamp hostname>
        <properties><property name value/>...</properties>      score, max_score, seed, rubric, kind, isolation
        <testcase name classname time>                          one per rubric item, in rubric order
          <failure message type>...</failure>                   a failed item (type "failed") or one not run
          <error message type>...</error>                       a check that broke (the grader's fault)
          <skipped message/>                                    an item that does not apply
        </testcase>
        <system-out>...</system-out>  <system-err>...</system-err>
      </testsuite>
    </testsuites>

When the grader could not run, the suite holds one testcase `grader` with an <error> saying why. Text a
submission printed may hold characters XML 1.0 cannot carry; they are written as \\xNN.
"""

import re
import socket
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path

from oracle.grading.report import GradeReport, ItemResult, write_atomic

_TEXT_LIMIT = 20_000  # characters of feedback per testcase
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _clean(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def document(report: GradeReport) -> ET.Element:
    """The <testsuites> element of a report."""
    suite = ET.Element("testsuite", {
        "id": "0",
        "package": f"pagedcheck.{report.family}",
        "name": _clean(f"{report.family}: {report.submission}"),
        "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S"),
        "hostname": _clean(socket.gethostname() or "localhost"),
        "time": _seconds(report.seconds),
    })
    properties = ET.SubElement(suite, "properties")
    for name, value in (("score", f"{report.score:g}"), ("max_score", f"{report.max_score:g}"),
                        ("seed", str(report.seed)), ("rubric", report.rubric_title or report.rubric_source),
                        ("kind", report.kind), ("isolation", report.isolation)):
        ET.SubElement(properties, "property", {"name": name, "value": _clean(value)})
    cases = [_testcase(report, item) for item in report.items]
    if report.grader_error:
        case = ET.Element("testcase", {"name": "grader", "classname": f"pagedcheck.{report.family}", "time": "0.000"})
        ET.SubElement(case, "error", {"message": _clean(report.grader_error), "type": "grader_error"}).text = \
            _clean(f"The grader could not run: {report.grader_error}")
        cases.append(case)
    suite.extend(cases)
    counts = {
        "tests": len(cases),
        "failures": sum(case.find("failure") is not None for case in cases),
        "errors": sum(case.find("error") is not None for case in cases),
        "skipped": sum(case.find("skipped") is not None for case in cases),
    }
    for key, value in counts.items():
        suite.set(key, str(value))
    ET.SubElement(suite, "system-out").text = _clean(
        f"Score {report.score:g}/{report.max_score:g} (pagedcheck, seed {report.seed})")
    ET.SubElement(suite, "system-err").text = _clean(report.grader_error or "")
    root = ET.Element("testsuites", {"name": "pagedcheck", **{k: str(v) for k, v in counts.items()},
                                     "time": _seconds(report.seconds)})
    root.append(suite)
    return root


def _testcase(report: GradeReport, item: ItemResult) -> ET.Element:
    case = ET.Element("testcase", {"name": _clean(item.name), "classname": _clean(f"pagedcheck.{report.family}.{item.id}"),
                                   "time": _seconds(item.seconds)})
    if item.status == "passed":
        return case
    if item.status == "not_applicable":
        ET.SubElement(case, "skipped", {"message": _clean(item.message)})
        return case
    kind = "error" if item.status == "error" else "failure"
    element = ET.SubElement(case, kind, {"message": _clean(item.message), "type": item.status})
    element.text = _clean(item.feedback(_TEXT_LIMIT))
    return case


def text(report: GradeReport) -> str:
    root = document(report)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write(path: Path | str, report: GradeReport) -> None:
    write_atomic(path, text(report))
