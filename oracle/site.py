"""A submission's own dependencies, for the sandboxed Python child: a site folder the user makes with
`pip install --target DIR PACKAGE...` (`--site DIR`), mounted read-only in the sandbox and put on the child's
import path after the standard library and the submission's own files. The child runs the system Python in
isolated mode (`python3 -I`): without a site folder it sees the standard library, the system's
dist-packages and the submission, never the grader's packages (its virtual environment, pagedcheck).

    folder = site_folder("/tmp/deps")       # ValueError with a one-line reason when it cannot be given
    child = PythonChild(..., site=folder)   # readable in the sandbox, on sys.path as PAGEDCHECK_SITE
"""

import os
import re
import stat
from pathlib import Path

VARIABLE = "PAGEDCHECK_SITE"  # the child's environment names the folder; oracle/serve.py appends it to sys.path
MAX_ENTRIES = 200_000  # files and folders a site folder may hold (numpy and xxhash: about 2,000)
MAKE_ONE = "pip install --target DIR PACKAGE..."
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def site_folder(path: Path | str) -> Path:
    """The site folder `path`, checked: a folder every sandboxed run may read (each run may have an
    unprivileged uid of its own, so every folder above it must be passable by others and everything in it
    readable by others) and no run may change (nothing in it writable by others). ValueError otherwise."""
    folder = Path(path)
    if not folder.is_dir():
        raise ValueError(f"{path}: no such folder (make one with `{MAKE_ONE}`)")
    folder = folder.resolve()
    for above in folder.parents:
        if not os.stat(above).st_mode & stat.S_IXOTH:
            raise ValueError(f"{path}: {above} is not passable by other users (the sandbox runs each submission as "
                             "a user of its own): put the site folder where others may read it, e.g. under /tmp")
    seen = 0
    for where, folders, files in os.walk(folder):
        for name in [".", *folders, *files]:
            seen += 1
            if seen > MAX_ENTRIES:
                raise ValueError(f"{path}: more than {MAX_ENTRIES} files: give only the packages the submission needs")
            entry = Path(where) / name
            mode = os.lstat(entry).st_mode
            need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
            if not stat.S_ISLNK(mode) and mode & need != need:
                raise ValueError(f"{path}: {entry} is not readable by other users (the sandbox runs each submission "
                                 f"as a user of its own): chmod -R o+rX {path}")
            if not stat.S_ISLNK(mode) and mode & stat.S_IWOTH:
                raise ValueError(f"{path}: {entry} is writable by other users, so a submission could change what "
                                 f"the next one imports: chmod -R o-w {path}")
    return folder


def missing_module_hint(load_error: str, site: Path | None) -> str:
    """What to add to a load error that is a missing module: how to give the submission a package
    (`--site`), or that the site folder given lacks it. "" for any other error."""
    found = _MISSING.search(load_error)
    if not found:
        return ""
    top = found.group(1).split(".")[0]
    if site is None:
        return (f" (a package the submission needs is given to it with --site DIR, a folder made by "
                f"`pip install --target DIR {top}` for the system Python; see oracle/SANDBOX.md)")
    return f" (not in the --site folder {site} either: `pip install --target {site} {top}`)"
