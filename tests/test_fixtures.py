"""The C fixtures are patches of the reference, the Python ones of engine/llm_memory.py: each applies exactly and
changes it (a Python one into a module that compiles), and a patch that no longer matches the reference fails
loudly instead of building some other program."""

from pathlib import Path

import pytest

from tests.conftest import BROKEN_PROBES, BROKEN_PYTHON, PYTHON_ENGINE, REFERENCE_C, SUBMISSIONS, patched

PATCHES = sorted(SUBMISSIONS.glob("*/*.patch"))


@pytest.mark.parametrize("patch", PATCHES, ids=[f"{p.parent.name}/{p.stem}" for p in PATCHES])
def test_each_patch_applies_and_changes_the_reference(patch: Path) -> None:
    reference = REFERENCE_C.read_text()
    assert patched(reference, patch) != reference


PYTHON_PATCHES = sorted([*BROKEN_PYTHON.glob("*.patch"), *BROKEN_PROBES.glob("*.patch")])


@pytest.mark.parametrize("patch", PYTHON_PATCHES, ids=[p.relative_to(BROKEN_PYTHON).as_posix() for p in PYTHON_PATCHES])
def test_each_python_patch_applies_and_changes_the_engine(patch: Path) -> None:
    engine = PYTHON_ENGINE.read_text()
    broken = patched(engine, patch)
    assert broken != engine and "# BUG" in broken
    compile(broken, str(patch), "exec")


def test_a_patch_that_no_longer_matches_is_an_error() -> None:
    reference = REFERENCE_C.read_text().replace("static int alloc_block(", "static int take_block(")
    with pytest.raises(RuntimeError, match=r"first_fit\.patch does not apply: line \d+ is"):
        patched(reference, SUBMISSIONS / "broken" / "first_fit.patch")


def test_hunks_insert_after_their_line_and_must_come_in_order(tmp_path: Path) -> None:
    insert = tmp_path / "insert.patch"
    insert.write_text("--- f\n+++ f\n@@ -3,0 +4 @@\n+inserted\n")
    assert patched("a\nb\nc\nd\n", insert) == "a\nb\nc\ninserted\nd\n"
    backwards = tmp_path / "backwards.patch"
    backwards.write_text("--- f\n+++ f\n@@ -3 +3 @@\n-c\n+C\n@@ -1 +1 @@\n-a\n+A\n")
    with pytest.raises(RuntimeError, match="overlaps the one before"):
        patched("a\nb\nc\nd\n", backwards)
