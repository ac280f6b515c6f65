"""A failed (or not run) item as a page shows it (oracle/page.py gathers them, oracle/page_html.py draws them)."""

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FailedItem:
    name: str  # the rubric item's name, or "fuzz"
    rule: str  # the rule the item enforces ("" when it is the family's to say)
    message: str  # one line
    details: str = ""
    program: tuple[str, ...] = ()  # a printed program (the fuzz item's), one line each
    evidence: Any = None  # the family's own record of the failing step (hw3: a Finding or a Divergence)
