"""The HTML page of a run's failures (`grade --out DIR`, `fuzz --html FILE`), for any family, drawn by the core
(oracle/page_html.py): each failing call as a Scene (oracle/scene.py), the family's state as tables before and
after it. A Scene is the failing program replayed and watched through the family's `state_tables` hook, or the
failing step the family's checks recorded themselves, made a Scene by its `picture` hook."""

from pathlib import Path
from typing import TYPE_CHECKING, Any

from oracle.failed_item import FailedItem

if TYPE_CHECKING:
    from oracle.family import Family
    from oracle.grading.report import GradeReport
    from oracle.program import Program
    from oracle.runner import FuzzReport

PAGE_NAME = "report.html"  # what `grade` writes into its output directory


def grade_items(report: "GradeReport") -> list[FailedItem]:
    """The failed (or not run) items of a grade report, with what the family recorded of each."""
    return [
        FailedItem(item.name, item.rule, item.message, item.details, tuple(item.program.splitlines()),
                   report.evidence.get(item.id))
        for item in report.items
        if item.counts_as_failure
    ]


def fuzz_items(report: "FuzzReport", family: "Family | None" = None, factory: Any = None) -> list[FailedItem]:
    """The failed fuzz run as an item; with the family and its adapter factory, and a family that draws its
    state as tables from a replay, its evidence is the failing call replayed (oracle/scene.py)."""
    if report.passed:
        return []
    evidence, rule = report.failure, ""
    if family is not None and family.picture is not None:  # the failure recorded what its picture needs
        rule = getattr(report.failure, "rule", "") or ""
    elif family is not None and factory is not None and family.state_tables is not None:
        evidence, rule = fuzz_scene(family, factory, report.failing), getattr(report.failure, "rule", "") or ""
    return [FailedItem("fuzz", rule, report.divergence or "", "", tuple(report.program), evidence)]


def fuzz_scene(family: "Family", factory: Any, program: "Program | None") -> Any:
    """The Scene of a fuzz run's minimal program (FuzzReport.failing), replayed once more on adapters from
    `factory`; None when the family draws no tables, there is no such program, or it does not fail again."""
    import warnings

    from hypothesis.errors import HypothesisDeprecationWarning

    from oracle.scene import scene_of

    if family.state_tables is None or program is None or not program.steps:
        return None
    try:
        with warnings.catch_warnings():  # the replay runs outside Hypothesis, where a machine's `assume` warns
            warnings.simplefilter("ignore", HypothesisDeprecationWarning)
            found = scene_of(family.machine_for, factory, program, family.state_tables)
    except Exception:  # noqa: BLE001  (a picture that cannot be made changes no verdict: the page goes without)
        return None
    return None if found is None else found[0]


def write_page(family: "Family", path: Path, title: str, items: list[FailedItem]) -> None:
    """Writes the page of the items, each recorded failing step the family pictures made a Scene. Raises
    OSError."""
    from oracle.page_html import render_html

    path.write_text(render_html(title, pictured(family, items)))


def pictured(family: "Family", items: list[FailedItem]) -> list[FailedItem]:
    """The items, each one's evidence the family's `picture` of it where it has one (a Scene, or None)."""
    from dataclasses import replace

    from oracle.scene import Scene

    if family.picture is None:
        return items
    return [item if isinstance(item.evidence, Scene) else replace(item, evidence=family.picture(item.evidence))
            for item in items]
