"""The module or object a `pkg.module[:attr]` spec names, for every family's Python adapters."""

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any


def load_target(spec: str) -> Any:
    """Imports `pkg.module` (or the file `path/name.py`) and returns it, or its attribute `attr`; ValueError
    with a one-line reason."""
    module_name, _, attr = spec.partition(":")
    try:
        target = _from_file(Path(module_name)) if module_name.endswith(".py") else importlib.import_module(module_name)
    except ImportError as exc:
        unfound = exc.name if isinstance(exc, ModuleNotFoundError) and exc.name else ""
        if unfound.split(".")[0] == module_name.split(".")[0]:
            hint = in_current_folder(module_name)
        else:  # a package the implementation imports
            hint = (f" (a package it needs is given with --site DIR, a folder made by `pip install --target DIR "
                    f"{unfound.split('.')[0]}`)") if unfound else ""
        raise ValueError(f"cannot import {module_name!r}: {exc}{hint}") from exc
    if attr:
        try:
            target = getattr(target, attr)
        except AttributeError:
            raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None
    return target


def _from_file(path: Path) -> Any:
    """The module in a .py file, its folder first on sys.path (for the modules beside it it imports)."""
    if not path.is_file():
        raise ImportError(f"no such file {str(path)!r}")
    sys.path.insert(0, str(path.resolve().parent))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def in_current_folder(module_name: str) -> str:
    """A hint for a module that was not found while its top-level package or module is in the current folder,
    which a console script does not put on the import path; "" otherwise."""
    top = module_name.split(".")[0]
    if not top.isidentifier() or not (Path(top).is_dir() or Path(f"{top}.py").is_file()):
        return ""
    return (f" ({top!r} is in the current folder, which is not on pagedcheck's import path: run with PYTHONPATH=. "
            "in front of the command)")
