"""Where a Python submission is, found by looking at files, never by importing it (importing runs its code).

`pkg.module[:attr]` is looked up the way `import` would look it up: the top-level name through the grader's
import path (finding a top-level spec runs nothing), then each further name as a file or folder under the
package's folders. A path ending in .py is that file. The root is the folder the child imports from: it is
bound read-only into the sandbox and put first on the child's sys.path.
"""

import importlib.util
from pathlib import Path

from oracle.hw3.pychild import PythonTarget


def locate(spec: str) -> PythonTarget:
    """The submission `spec` names; ValueError with a one-line reason when there is no such Python file."""
    name, _, attr = spec.partition(":")
    if attr and not attr.isidentifier():
        raise ValueError(f"{attr!r} is not an attribute name")
    if name.endswith(".py"):
        path = Path(name).resolve()
        if not path.is_file():
            raise ValueError(f"{name}: no such file")
        return PythonTarget(spec, path.parent, str(path), attr)
    parts = name.split(".")
    if not all(part.isidentifier() for part in parts):
        raise ValueError(f"{name!r} is not a module name (pkg.module) or a .py file")
    try:
        top = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        top = None
    if top is None or not (top.origin or top.submodule_search_locations):
        raise ValueError(f"cannot find module {parts[0]!r}")
    if top.submodule_search_locations is None:  # a top-level module: nothing can be under it
        if len(parts) > 1:
            raise ValueError(f"cannot find module {name!r}: {parts[0]!r} is not a package")
        return _target(spec, Path(str(top.origin)), Path(str(top.origin)).parent, name, attr)
    for folder in map(Path, top.submodule_search_locations):
        found = _under(folder, parts[1:])
        if found is not None:
            return _target(spec, found, folder.parent, name, attr)
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


def _target(spec: str, file: Path, root: Path, name: str, attr: str) -> PythonTarget:
    if file.suffix != ".py":
        raise ValueError(f"{name!r} is {file.name}, not Python source")
    return PythonTarget(spec, root.resolve(), name, attr)
