"""c/stray.py's Watch on a real driver: natively a call during which the submission's code read or wrote outside
any live heap block is noted, as its program's step and the call in C terms, from the grader's own count; the
reference's calls note none."""

from pathlib import Path

import pytest

from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from oracle.hw3.c.stray import Stray, Watch, named
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stray")


def _driver(workdir: Path, fixture: str | None) -> Path:
    source = REFERENCE_C.read_text()
    if fixture is not None:  # fork_l2_malloc_bytes: fork mallocs 16 bytes for an L2 table of 16 ints
        source = patched(source, SUBMISSIONS / "broken" / f"{fixture}.patch")
    folder = workdir / (fixture or "reference")
    folder.mkdir(exist_ok=True)
    (folder / "llm_memory.c").write_text(source)
    result = build(folder / "llm_memory.c", workdir / f"{folder.name}-build")
    assert result.ok and result.driver is not None, result.message
    return result.driver


def _program(adapter: CAdapter) -> None:
    engine = adapter.llm_init(4096)
    adapter.create_sequence(engine, 1, 1)
    adapter.fork_sequence(engine, 1, 2)
    adapter.free_sequence(engine, 2)
    adapter.llm_destroy(engine)


def test_an_overflow_is_noted_at_its_call_and_only_there(workdir: Path) -> None:
    strays: list[Stray] = []
    adapter = named(CAdapter(_driver(workdir, "fork_l2_malloc_bytes"), watch=Watch(strays)), "fork_overflow")
    try:
        _program(adapter)
    finally:
        adapter.close()
    assert strays == [Stray("fork_overflow", 3, ("llm_init(pool, 4096)", "create_sequence(engine, 1, 1)",
                                                 "fork_sequence(engine, 1, 2)"), 1)]


def test_the_reference_leaves_no_stray(workdir: Path) -> None:
    strays: list[Stray] = []
    adapter = CAdapter(_driver(workdir, None), watch=Watch(strays))
    try:
        _program(adapter)
    finally:
        adapter.close()
    assert strays == []

