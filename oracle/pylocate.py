"""Where a Python submission is, found by looking at files, never by importing it (importing runs its code).

`pkg.module[:attr]` is looked up the way `import` would look it up: the top-level name through the grader's
import path (finding a top-level spec runs nothing), then each further name as a file or folder under the
package's folders. A path ending in .py is that file; a folder's path, the package it holds. The root is the folder import found
it in (for a path, the folder above it as given: links are not followed out of it). A module file given by its path
that is a symbolic link, or resolves outside its folder, is refused (a link to a classmate's file is not an upload). Nothing here puts a submission's folder on the grader's import path.

The child process sees a copy of the .py files it needs and nothing else of the root: the submission's
top-level package (or module), and each top-level package or module of the same root that one of the copied
files names in an import statement, and so on. Which names those are is read from the lines of the source,
bounded in size, by a regular expression: the grader never parses, compiles or imports the submission's
source (a parser fed a hostile file can be made to take its memory or its stack). The reading may find
more names than Python would import (an `import` in a string): each only copies one more folder of the same
root into the child. Files that resolve outside the root are left out.
"""

import importlib.util
import os
import re
from pathlib import Path

from oracle.child import PythonTarget
from oracle.target import in_current_folder

MAX_FILES = 2000
MAX_BYTES = 32 << 20
# `import a.b as c, d` or `from a.b import c` at the start of a line or after `;` or `:`; level-0 names only
_IMPORT = re.compile(rb"(?:^|[;:])[ \t]*(?:from[ \t]+([A-Za-z_]\w*)|import[ \t]+([A-Za-z_][\w \t.,]*))", re.MULTILINE)
_NAME = re.compile(rb"(?:^|,)[ \t]*([A-Za-z_]\w*)")


def locate(spec: str) -> PythonTarget:
    """The submission `spec` names; ValueError with a one-line reason when there is no such Python file."""
    name, _, attr = spec.partition(":")
    if attr and not attr.isidentifier():
        raise ValueError(f"{attr!r} is not an attribute name")
    if Path(name).is_dir():  # a package folder, by its path: its parent is the root, nothing goes on sys.path
        folder = Path(os.path.abspath(name))
        if (folder / "__init__.py").is_symlink():
            raise ValueError(f"{name}: its __init__.py is a symbolic link, not a file of the folder")
        if not (folder / "__init__.py").is_file() or not folder.name.isidentifier():
            raise ValueError(f"{name}: not a package folder (with __init__.py)")
        return _target(spec, folder / "__init__.py", folder.parent, folder.name, attr, folder.name)
    if name.endswith(".py"):
        given = Path(os.path.abspath(name))  # its folder as given: a link is not followed to another folder
        if given.is_symlink() or given.is_file() and not given.resolve().is_relative_to(given.parent.resolve()):
            raise ValueError(f"{name}: a symbolic link, not a file of the folder (upload the file itself)")
        if not given.is_file() or not given.stem.isidentifier():
            raise ValueError(f"{name}: no such file" if not given.is_file() else f"{name}: not a module name")
        return _target(spec, given, given.parent, given.name, attr, given.stem)
    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        raise ValueError(f"{name!r} is not a module name (pkg.module) or a .py file")
    try:
        top = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        top = None
    if top is None or not (top.origin or top.submodule_search_locations):
        raise ValueError(f"cannot find module {parts[0]!r}{in_current_folder(name)}")
    if top.submodule_search_locations is None:  # a top-level module: nothing can be under it
        if len(parts) > 1:
            raise ValueError(f"cannot find module {name!r}: {parts[0]!r} is not a package")
        origin = Path(str(top.origin))
        return _target(spec, origin, origin.parent, name, attr, parts[0])
    for folder in map(Path, top.submodule_search_locations):
        found = _under(folder, parts[1:])
        if found is not None:
            return _target(spec, found, folder.parent, name, attr, parts[0])
    raise ValueError(f"cannot find module {name!r}")


def _under(folder: Path, parts: list[str]) -> Path | None:
    """The file of the module `parts` under a package folder: name.py, or name/__init__.py for a package."""
    for i, part in enumerate(parts):
        if i == len(parts) - 1 and (folder / f"{part}.py").is_file():
            return folder / f"{part}.py"
        folder = folder / part
        if not folder.is_dir():
            return None
    init = folder / "__init__.py"
    return init if init.is_file() else None


def _target(spec: str, file: Path, root: Path, module: str, attr: str, top: str) -> PythonTarget:
    if file.suffix != ".py":
        raise ValueError(f"{module!r} is {file.name}, not Python source")
    root = root.resolve()
    return PythonTarget(spec, root, module, attr, needed_files(root, top))


def needed_files(root: Path, top: str) -> tuple[str, ...]:
    """The .py files under root (relative paths) that the top-level package or module `top` needs."""
    files: list[str] = []
    seen: set[str] = set()
    todo, size = [top], 0
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        unit = root / name
        paths = sorted(unit.rglob("*.py")) if unit.is_dir() else [root / f"{name}.py"]
        for path in paths:
            if "__pycache__" in path.parts or not path.is_file() or not path.resolve().is_relative_to(root):
                continue
            files.append(str(path.relative_to(root)))
            size += path.stat().st_size
            if len(files) > MAX_FILES or size > MAX_BYTES:
                raise ValueError(f"{top} needs more than {MAX_FILES} files or {MAX_BYTES >> 20} MiB of Python")
            todo += [imported for imported in _imports(path)
                     if imported not in seen and ((root / imported).is_dir() or (root / f"{imported}.py").is_file())]
    return tuple(files)


def _imports(path: Path) -> set[str]:
    """The top-level names a file's import statements name absolutely (anywhere in it), read as text."""
    with path.open("rb") as source:
        data = source.read(MAX_BYTES)
    names = set()
    for found in _IMPORT.finditer(data):
        if found[1]:
            names.add(found[1].decode())
        else:
            names.update(name.decode() for name in _NAME.findall(found[2]))
    return names
