"""PrairieLearn's external grader results (the results.json its grading container writes).

Format: `succeeded` (the grader ran), `gradable` (false: the submission could not be graded, and the
student keeps the attempt), `score` (a fraction, 0 to 1), `message`, `output`, and `tests[]` with `name`,
`description`, `points`, `max_points`, `message` and `output`. `output` names the isolation used. When our grader could not run, `succeeded`
and `gradable` are false and the message says why.
"""

import json
from pathlib import Path
from typing import Any

from oracle.grading.report import GradeReport, ItemResult, as_text, write_atomic

_OUTPUT_LIMIT = 20_000  # characters of feedback per test


def results(report: GradeReport) -> dict[str, Any]:
    if report.grader_error:
        return {
            "succeeded": False,
            "gradable": False,
            "score": 0.0,
            "message": f"The grader could not run: {report.grader_error}. Please tell the course staff.",
            "output": "",
            "tests": [],
        }
    fraction = report.score / report.max_score if report.max_score else 0.0
    return {
        "succeeded": True,
        "gradable": True,
        "score": min(max(fraction, 0.0), 1.0),
        "message": f"Score {report.score:g}/{report.max_score:g} (pagedcheck, seed {report.seed}).",
        "output": f"Submission code ran in: {report.isolation}" if report.isolation else "",
        "tests": [_test(item) for item in report.items],
    }


def _test(item: ItemResult) -> dict[str, Any]:
    return {
        "name": item.name,
        "description": item.rule,
        "points": item.points,
        "max_points": item.max_points,
        "message": _first_line(item) or item.status.replace("_", " "),
        "output": as_text(item.for_student(_OUTPUT_LIMIT)),
    }


def _first_line(item: ItemResult) -> str:
    """The student's text's first line, markup dropped (PrairieLearn shows `message` as plain text)."""
    text = as_text(item.for_student(_OUTPUT_LIMIT))
    return text.splitlines()[0] if text else ""


def write(path: Path | str, report: GradeReport) -> None:
    write_atomic(path, json.dumps(results(report), indent=2) + "\n")
