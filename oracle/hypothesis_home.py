"""Where Hypothesis keeps its files (its constants cache; our runs keep no example database): the user's cache
folder, $XDG_CACHE_HOME/pagedcheck/hypothesis (default ~/.cache/pagedcheck/hypothesis), never `.hypothesis/`
in the folder a command runs in (a student's folder, Gradescope's /autograder). HYPOTHESIS_STORAGE_DIRECTORY,
when set, is the user's own choice and is kept. The CLI and tests/conftest.py set it before anything runs."""

import os
from pathlib import Path

STORAGE_VARIABLE = "HYPOTHESIS_STORAGE_DIRECTORY"


def cache_home() -> Path:
    """pagedcheck's folder under the user's cache folder ($XDG_CACHE_HOME when absolute, else ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "pagedcheck"


def keep_hypothesis_files_in_cache() -> Path:
    """Points Hypothesis's storage at the user's cache (or HYPOTHESIS_STORAGE_DIRECTORY); returns where."""
    from hypothesis.configuration import set_hypothesis_home_dir

    chosen = os.environ.get(STORAGE_VARIABLE)
    home = Path(chosen) if chosen else cache_home() / "hypothesis"
    set_hypothesis_home_dir(home)
    return home
