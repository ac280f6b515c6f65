"""The report as a person reads it in a terminal: one row per item (its note wrapped at word boundaries, never
cut), then what went wrong, item by item, in the words a student reads (ItemResult.for_student)."""

import textwrap

from oracle.grading.report import GradeReport, ItemResult, as_text
from oracle.printable import printable

_MARK = {"passed": "ok", "failed": "FAIL", "not_run": "not run", "not_applicable": "n/a", "incomplete": "stopped",
         "error": "ERROR"}
_DETAIL_LINES = 40


def _points(value: float) -> str:
    return f"{value:g}"


def render(report: GradeReport, width: int = 100) -> str:
    lines = [f"pagedcheck grade: {report.submission} ({report.kind}), rubric: {report.rubric_title or report.rubric_source}"]
    if report.grader_error:
        lines.append(f"grader error: {report.grader_error}")
    name_w = max([len(item.name) for item in report.items] + [4])
    for item in report.items:
        score = f"{_points(item.points)}/{_points(item.max_points)}"
        row = f"  {item.name:<{name_w}}  {score:>7}  {_MARK[item.status]:<7}"
        lines.append(row.rstrip())
        note = _headline(item)
        if note:  # under its row, wrapped at spaces: never cut
            lines += textwrap.wrap(note, max(width, 40), initial_indent=" " * 6, subsequent_indent=" " * 6,
                                   break_long_words=False, break_on_hyphens=False)
    total = f"{_points(report.score)}/{_points(report.max_score)}"
    lines.append(f"  {'total':<{name_w}}  {total:>7}   ({report.seconds:.1f} s, seed {report.seed})")
    if report.isolation:
        lines.append(f"  submission code ran in: {report.isolation}")
    failed = [item for item in report.items if item.status in ("failed", "not_run", "incomplete", "error")]
    for item in failed:
        lines += ["", *_feedback(item)]
    return printable("\n".join(lines))  # submission text in messages must not drive the reader's terminal


def _headline(item: ItemResult) -> str:
    """The item's note in the table: the first line of what a student reads, markup dropped (a line that ends in a
    colon, "Not graded:", with the first line of the block below it)."""
    lines = [line.strip() for line in as_text(item.for_student(10_000, with_repro=False)).splitlines() if line.strip()]
    return f"{lines[0]} {lines[1]}" if len(lines) > 1 and lines[0].endswith(":") else lines[0] if lines else ""


def _feedback(item: ItemResult) -> list[str]:
    lines = [f"{item.name}  (rule: {item.rule})"]
    body = as_text(item.for_student(100_000, with_repro=False)).splitlines()
    if len(body) > _DETAIL_LINES:
        body = body[:_DETAIL_LINES] + [f"... ({len(body) - _DETAIL_LINES} more lines in the JSON report)"]
    lines += [f"  {line}" if line else "" for line in body]
    if item.repro:
        lines.append(f"  ({item.repro} is in the output folder named at the end.)")
    return lines
