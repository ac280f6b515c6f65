"""Which file of an upload is the submission: the file itself, or the one file of the family's name in a folder,
as Gradescope's run_autograder finds it; what is refused before any build (Refused), in words a student can act
on."""

import os
from pathlib import Path

_HIDDEN = ("__MACOSX",)  # folders an upload carries that are not the student's (hidden ones are skipped too)
_WALK_LIMIT = 10_000  # entries looked at when searching an upload for its source file


class Refused(ValueError):
    """The submission is refused before it is built (no source file of the family's name, a symbolic link, a file
    outside it): its own fault, graded 0 with the reason."""


def submission_source(path: Path | str, source_name: str) -> Path:
    """The source file (`source_name`, the family's: llm_memory.c) a path names: the file itself, or the one inside
    a directory: at its top, else the only one of that name in its folders (an upload of a folder), as
    Gradescope's run_autograder finds it. A directory without one (an empty upload, a name in another case,
    several copies) is refused (Refused) naming what was expected and what was uploaded; so is a source that is a
    symbolic link or lies outside the directory. A path that does not exist, or a file that is not .c, is the
    caller's mistake (ValueError)."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise ValueError(f"submission {path} does not exist")
    if not path.is_dir() and path.suffix != ".c":
        raise ValueError(f"submission {path} is neither a .c file nor a directory")
    source = path / source_name if path.is_dir() else path
    if path.is_dir() and not source.exists() and not source.is_symlink():
        source = only_file_below(path, source_name)
    if source.is_symlink():
        raise Refused(f"{source_name} is a symbolic link (to {os.readlink(source)}): submit the file itself")
    if path.is_dir() and not source.resolve().is_relative_to(path.resolve()):
        raise Refused(f"{source_name} resolves outside the submission directory")
    if not source.is_file():
        raise Refused(f"{source_name} is not a regular file")
    return source


def only_file_below(folder: Path, wanted: str) -> Path:
    """The one file named `wanted` (llm_memory.c, llm_memory.py, ...) in the folders of an upload (hidden ones and
    links to folders not entered); Refused, naming what the upload holds, when there is none or more than one."""
    found, uploaded, seen, hidden = [], [], 0, 0
    for top, dirs, files in os.walk(folder):
        kept = sorted(d for d in dirs if not d.startswith(".") and d not in _HIDDEN)
        hidden += len(dirs) - len(kept)
        dirs[:] = kept
        for name in sorted(files):
            relative = _shown(str((Path(top) / name).relative_to(folder)))
            if name == wanted:
                found.append(relative)
            elif not name.startswith("."):  # .DS_Store and the like: not what the student meant to upload
                uploaded.append(relative)
            else:
                hidden += 1
        seen += len(files) + len(dirs)
        if seen > _WALK_LIMIT:
            break
    if len(found) == 1:
        return folder / found[0]
    expected = f"expected a file named {wanted} (that name exactly)"
    if found:
        raise Refused(f"the upload holds {len(found)} files named {wanted} ({', '.join(found[:5])}): "
                      f"{expected}, once")
    if not uploaded:
        what = "holds only hidden files and folders" if hidden else "is empty"
        raise Refused(f"no {wanted} was uploaded: {expected}; the upload {what}")
    near = [name for name in uploaded if Path(name).name.lower() == wanted and Path(name).name != wanted]
    listed = ", ".join(uploaded[:8]) + (f" and {len(uploaded) - 8} more" if len(uploaded) > 8 else "")
    hint = f" ({near[0]} differs in case: rename it {wanted})" if near else ""
    raise Refused(f"no {wanted} was uploaded: {expected}; the upload holds {listed}{hint}")


def _shown(name: str) -> str:
    """A file name as a message shows it: quoted when it holds characters a terminal would act on."""
    return name if name.isprintable() else repr(name)
