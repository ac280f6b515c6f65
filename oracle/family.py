"""What a allocator family plugs into the shared runner and CLI: its machine, its adapters, its repro text."""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from oracle.stats import RunStats

AdapterFactory = Callable[[], Any]


@dataclass(frozen=True)
class Family:
    name: str
    summary: str
    machine_for: Callable[[AdapterFactory, RunStats], type]
    load_adapter: Callable[[str], AdapterFactory]  # raises ValueError with a one-line reason
    repro_preamble: Callable[[str], list[str]]  # the imports that make a printed program runnable
    default_impl: str = "engine"
    load_rubric: Callable[[Path | None], Any] | None = None  # its rubric at a path, or its default; RubricError
    # (title, failed items) -> one self-contained HTML page picturing each failing step (oracle/page.py)
    render_html: Callable[[str, list[Any]], str] | None = None


def families() -> dict[str, Family]:
    from oracle.hw3 import FAMILY as hw3

    return {hw3.name: hw3}
