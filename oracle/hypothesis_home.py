"""Where Hypothesis keeps its files (its constants cache; our runs keep no example database): the user's cache
folder, $XDG_CACHE_HOME/pagedcheck/hypothesis (default ~/.cache/pagedcheck/hypothesis), never `.hypothesis/`
in the folder a command runs in (a student's folder, Gradescope's /autograder). HYPOTHESIS_STORAGE_DIRECTORY,
when set, is the user's own choice and is kept. The CLI and tests/conftest.py set it before anything runs.
The same cache folder holds the programs pagedcheck builds for its runs (the frozen runtime, the /proc launcher),
each in a folder of the user's alone (`own_cache`)."""

import os
from pathlib import Path

STORAGE_VARIABLE = "HYPOTHESIS_STORAGE_DIRECTORY"


def cache_home() -> Path:
    """pagedcheck's folder under the user's cache folder ($XDG_CACHE_HOME when absolute, else ~/.cache)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "pagedcheck"


def own_cache(folder: Path, traversable: bool, what: str) -> None:
    """`folder` made if missing, this user's alone: mode 0700, or 0711 when `traversable` (runs of other uids pass
    through it and the folders above it that this user owns, and list none). OSError naming `what` the folder
    holds when another user owns it or others may write into it: no program is run from such a folder."""
    folder.mkdir(mode=0o711 if traversable else 0o700, parents=True, exist_ok=True)
    if traversable:
        for up in [folder, *folder.parents][:-1]:  # not the root itself
            if up.stat().st_uid == os.geteuid():
                up.chmod(up.stat().st_mode & 0o7777 | 0o111)
    mine = folder.lstat()
    if mine.st_uid != os.geteuid() or mine.st_mode & 0o022 or folder.is_symlink():
        raise OSError(f"{what}'s cache {folder} is not this user's alone: refusing to run programs from it")


def keep_hypothesis_files_in_cache() -> Path:
    """Points Hypothesis's storage at the user's cache (or HYPOTHESIS_STORAGE_DIRECTORY); returns where."""
    from hypothesis.configuration import set_hypothesis_home_dir

    chosen = os.environ.get(STORAGE_VARIABLE)
    home = Path(chosen) if chosen else cache_home() / "hypothesis"
    set_hypothesis_home_dir(home)
    return home
