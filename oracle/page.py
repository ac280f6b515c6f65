"""The HTML page of a run's failures (`grade --out DIR`, `fuzz --html FILE`), for any family: what the
shared layer hands to the family's `render_html` hook, which draws the page (hw3: oracle/hw3/page.py)."""

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oracle.family import Family
    from oracle.grading.report import GradeReport
    from oracle.runner import FuzzReport

PAGE_NAME = "report.html"  # what `grade` writes into its output directory


@dataclass(frozen=True)
class FailedItem:
    name: str  # the rubric item's name, or "fuzz"
    rule: str  # the rule the item enforces ("" when it is the family's to say)
    message: str  # one line
    details: str = ""
    program: tuple[str, ...] = ()  # a printed program (the fuzz item's), one line each
    evidence: Any = None  # the family's own record of the failing step (hw3: a Finding or a Divergence)


def grade_items(report: "GradeReport") -> list[FailedItem]:
    """The failed (or not run) items of a grade report, with what the family recorded of each."""
    return [
        FailedItem(item.name, item.rule, item.message, item.details, tuple(item.program.splitlines()),
                   report.evidence.get(item.id))
        for item in report.items
        if item.counts_as_failure
    ]


def fuzz_items(report: "FuzzReport") -> list[FailedItem]:
    if report.passed:
        return []
    return [FailedItem("fuzz", "", report.divergence or "", "", tuple(report.program), report.failure)]


def write_page(family: "Family", path: Path, title: str, items: list[FailedItem]) -> None:
    """Writes the family's page (its render_html hook must be set). Raises OSError."""
    assert family.render_html is not None
    path.write_text(family.render_html(title, items))
