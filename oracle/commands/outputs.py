"""The files a command writes where the user asked (JSON, the HTML page): each said on stdout ("wrote PATH"),
and one that cannot be written is a usage error."""

import json
from pathlib import Path
from typing import Callable

from oracle.commands.status import UsageError
from oracle.family import Family
from oracle.failed_item import FailedItem
from oracle.page import write_page


def write_file(path: Path, write: Callable[[Path], object], what: str = "") -> None:
    """Runs write(path) and says so ("wrote PATH (what)"); an OSError becomes the usage error "cannot write
    PATH: why"."""
    try:
        write(path)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None
    print(f"wrote {path}" + (f" ({what})" if what else ""))


def write_json(path: Path, data: dict, what: str = "") -> None:
    write_file(path, lambda target: target.write_text(json.dumps(data, indent=2) + "\n"), what)


def write_html(family: Family, path: Path, title: str, items: list[FailedItem]) -> None:
    """Writes the family's HTML page of the failing steps (oracle/page.py)."""
    write_file(path, lambda target: write_page(family, target, title, items),
               "the failing steps, pictured" if items else "no failing step to picture")
