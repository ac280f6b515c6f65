"""The report as a person reads it in a terminal: one row per item, then what went wrong, item by item."""

from oracle.grading.report import GradeReport, ItemResult
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
        note = item.message if item.status != "passed" or item.message else ""
        if note:
            room = max(width - len(row) - 2, 20)
            row += "  " + (note if len(note) <= room else note[: room - 3] + "...")
        lines.append(row.rstrip())
    total = f"{_points(report.score)}/{_points(report.max_score)}"
    lines.append(f"  {'total':<{name_w}}  {total:>7}   ({report.seconds:.1f} s, seed {report.seed})")
    if report.isolation:
        lines.append(f"  submission code ran in: {report.isolation}")
    failed = [item for item in report.items if item.status in ("failed", "not_run", "incomplete", "error")]
    for item in failed:
        lines += ["", *_feedback(item)]
    return printable("\n".join(lines))  # submission text in messages must not drive the reader's terminal


def _feedback(item: ItemResult) -> list[str]:
    lines = [f"[{item.id}] {item.name}  (rule: {item.rule})", f"  {item.message}"]
    for title, text in (("", item.details), ("Minimal failing program (as Hypothesis prints it):", item.program)):
        if not text:
            continue
        if title:
            lines.append(f"  {title}")
        body = text.rstrip("\n").splitlines()
        if len(body) > _DETAIL_LINES:
            body = body[:_DETAIL_LINES] + [f"... ({len(body) - _DETAIL_LINES} more lines in the JSON report)"]
        lines += [f"    {line}" for line in body]
    if item.repro:
        lines.append(f"  Standalone repro: {item.repro} (build it with the official flags; run it under gdb)")
    return lines
