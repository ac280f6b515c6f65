"""What a allocator family plugs into the shared runner and CLI: its machine, its adapters, its repro text."""

import tomllib
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import entry_points
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


GROUP = "pagedcheck.families"


def families() -> dict[str, Family]:
    """Every family registered under the entry-point group `pagedcheck.families`, by name.

    A checkout run without installing (no metadata) reads the same table from its pyproject.toml."""
    registered = {entry.name: entry.value for entry in entry_points(group=GROUP)} or _from_pyproject()
    found = {}
    for value in registered.values():
        module, _, attr = value.partition(":")
        family = getattr(import_module(module), attr)
        found[family.name] = family
    return dict(sorted(found.items()))


def _from_pyproject() -> dict[str, str]:
    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if not pyproject.is_file():
        return {}
    table = tomllib.loads(pyproject.read_text()).get("project", {}).get("entry-points", {})
    return dict(table.get(GROUP, {}))
