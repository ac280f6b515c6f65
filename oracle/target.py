"""The module or object a `pkg.module[:attr]` spec names, for every family's Python adapters."""

import importlib
from typing import Any


def load_target(spec: str) -> Any:
    """Imports `pkg.module` and returns it, or its attribute `attr`; ValueError with a one-line reason."""
    module_name, _, attr = spec.partition(":")
    try:
        target = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from exc
    if attr:
        try:
            target = getattr(target, attr)
        except AttributeError:
            raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None
    return target
