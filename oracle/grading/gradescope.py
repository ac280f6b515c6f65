"""Gradescope's results.json: always a valid file, even when grading itself failed.

Format: top-level score, execution_time, output, tests[] with name, score, max_score, status, output,
output_format and visibility (hidden, after_due_date, after_published, visible).
"""

import json
from pathlib import Path
from typing import Any

from oracle.grading.report import GradeReport, ItemResult, write_atomic

_OUTPUT_LIMIT = 20_000  # characters per test's output; Gradescope pages get slow beyond that


def results(report: GradeReport) -> dict[str, Any]:
    output = f"Score {report.score:g}/{report.max_score:g} (pagedcheck, seed {report.seed})."
    if report.grader_error:
        output += f"\nThe grader could not run: {report.grader_error}\nPlease tell the course staff."
    return {
        "score": report.score,
        "execution_time": round(report.seconds, 3),
        "output": output,
        "output_format": "text",
        "tests": [_test(item) for item in report.items],
        "extra_data": {"isolation": report.isolation},  # the sandbox submission code ran in (oracle/sandbox.py)
    }


def failure_results(error: str) -> dict[str, Any]:
    """What Gradescope gets when there is no report at all (bad rubric, missing gcc, ...)."""
    return {
        "score": 0,
        "execution_time": 0,
        "output": f"The grader could not run: {error}\nPlease tell the course staff.",
        "output_format": "text",
        "tests": [],
    }


def _test(item: ItemResult) -> dict[str, Any]:
    text = item.feedback(_OUTPUT_LIMIT)
    return {
        "name": item.name,
        "score": item.points,
        "max_score": item.max_points,
        "status": "passed" if item.status in ("passed", "not_applicable") else "failed",
        "output": text,
        "output_format": "text",
        "visibility": item.visibility,
    }


def write(path: Path | str, data: dict[str, Any]) -> None:
    """Writes atomically, so Gradescope never reads half a file."""
    write_atomic(path, json.dumps(data, indent=2) + "\n")
