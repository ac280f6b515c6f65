"""One seed, one run (oracle/determinism.py): a prefix campaign draws the same programs whatever modules are
loaded, although Hypothesis by itself draws constants out of every "local" module imported so far."""

import importlib
import sys

from oracle.family import families
from oracle.prefix import load_adapter
from oracle.runner import fuzz


def campaign() -> tuple[int, dict]:
    report = fuzz(families()["prefix"], "engine", load_adapter("engine"), examples=60, steps=30, seed=1)
    return report.stats.steps, dict(report.stats.events)


def test_a_local_module_full_of_constants_changes_no_program(tmp_path, monkeypatch):
    before = campaign()
    (tmp_path / "lots_of_constants.py").write_text(
        "VALUES = [" + ", ".join(str(i) for i in range(-50, 300, 7)) + "]\n"
        "NAMES = [" + ", ".join(repr(f"w{i}") for i in range(40)) + "]\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("lots_of_constants")
    try:
        assert campaign() == before
    finally:
        sys.modules.pop("lots_of_constants", None)
