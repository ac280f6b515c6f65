"""Test-wide setup.

Hypothesis keeps its files in the user's cache, as the CLI does (oracle/hypothesis_home.py). The repo root goes on sys.path, so `tests.refusal_bugs:<variant>` imports by name the way the CLI
(`--impl tests.refusal_bugs:x`) and the printed repro programs import it, whatever directory pytest runs from.
Under mutmut (MUTANT_UNDER_TEST set) Hypothesis runs derandomized, with no deadline and no example
database, so each mutant meets the same programs and a kill is reproducible. It also skips the shrink phase:
a mutant is killed by the first failing program, and shrinking that program (a 4096-append burst, say)
would only spend the mutant's time budget. The budget itself (examples, steps) is the CI profile's.
Every broken fixture is a patch against one of our engines (tests/submissions/*/ against engine/c/llm_memory.c,
tests/broken/ and tests/broken/probes/ against engine/llm_memory.py, tests/broken_prefix/ and tests/broken_blockspace/
against a file of engine/prefix and engine/blockspace), applied at test time into a scratch copy by `patched_copy`:
the `submission` fixture materialises the C ones, `broken_python` the Python ones; tests/fixtures.py says what each
must fail.
"""

import atexit
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, settings

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from oracle.hypothesis_home import keep_hypothesis_files_in_cache  # noqa: E402

keep_hypothesis_files_in_cache()  # as the CLI does: no .hypothesis/ in the folder pytest runs in

if os.environ.get("MUTANT_UNDER_TEST"):
    settings.register_profile(
        "mutmut",
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.differing_executors, HealthCheck.too_slow],
        phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target],  # no shrinking
        report_multiple_bugs=False,
    )
    settings.load_profile("mutmut")


REFERENCE_C = ROOT / "engine" / "c" / "llm_memory.c"
SUBMISSIONS = ROOT / "tests" / "submissions"


@pytest.fixture(scope="session")
def submission(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`submission(kind, name)`: a directory holding llm_memory.c = engine/c/llm_memory.c patched with
    tests/submissions/<kind>/<name>.patch; `submission(kind)`: the directory holding one such directory per
    patch of that kind (a grade-all batch). RuntimeError when a patch does not apply.

    A C fixture is stored as its diff against the reference: the reference has one obvious place, and a
    fixture shows only its bug. Each directory is made once a session and shared: the grader and the build
    copy a submission and never write into it (a test that would must copy it first)."""
    root = tmp_path_factory.mktemp("submissions")

    def materialise(kind: str, name: str | None = None) -> Path:
        if name is None:
            for patch in sorted((SUBMISSIONS / kind).glob("*.patch")):
                materialise(kind, patch.stem)
            return root / kind
        directory = root / kind / name
        patched_copy(SUBMISSIONS / kind / f"{name}.patch", REFERENCE_C, directory / "llm_memory.c")
        return directory

    return materialise


def patched_copy(patch: Path, source: Path, copy: Path) -> Path:
    """`copy`: a copy of `source` (a file, or a package folder) with the unified diff `patch` applied to the file its
    `+++` line names (from the repository's root, `b/` first; for a file, `source` itself). Made once: an existing
    `copy` is left as it is. RuntimeError when the patch does not apply. The one way every family's broken fixtures
    are made."""
    if copy.exists():
        return copy
    if source.is_dir():
        target = re.search(r"^\+\+\+ (?:b/)?(\S+)", patch.read_text(), re.M)
        if target is None or not (ROOT / target[1]).is_relative_to(source):
            raise RuntimeError(f"{patch}: its +++ line names no file of {source}")
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
        changed = copy / (ROOT / target[1]).relative_to(source)
        changed.write_text(patched(changed.read_text(), patch))
    else:
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(patched(source.read_text(), patch))
    return copy


_DRIVER_OBJECT: list[Path] = []


def seeded_build_cache(folder: Path) -> Path:
    """`folder` as a C build cache (oracle/native/build_cache.py private_cache: made 0700) holding HW3's driver object,
    as the first build into it would leave it: a test whose subject is not that compile skips its 0.7 CPU s (a tamper
    scene's grade, a probe's fresh cache). The object is compiled once a process by the grader's own code
    (oracle/native/build.py `_driver_object`: our driver's source alone, no submission's) and copied, so its name
    is the digest the grader looks for and a build of this version finds it."""
    from oracle.hw3.c.build import FACTS
    from oracle.native.build import _driver_object
    from oracle.native.build_cache import private_cache

    if not _DRIVER_OBJECT:
        compiled = Path(tempfile.mkdtemp(prefix="pagedcheck-driver-"))
        atexit.register(shutil.rmtree, compiled, ignore_errors=True)
        _DRIVER_OBJECT.append(_driver_object(compiled, FACTS))
    cache = private_cache(folder)
    shutil.copyfile(_DRIVER_OBJECT[0], cache / _DRIVER_OBJECT[0].name)
    return cache


PYTHON_ENGINE = ROOT / "engine" / "llm_memory.py"
BROKEN_PYTHON = ROOT / "tests" / "broken"
BROKEN_PROBES = BROKEN_PYTHON / "probes"  # one white-box probe's bug each (tests/test_pyprobes.py)
_broken_root: list[Path] = []


def broken_python_folder() -> Path:
    """The scratch folder holding the package `hw3_broken` (made once a process, put on sys.path, removed at exit):
    what a process of ours started apart needs on its PYTHONPATH to import broken_python's modules."""
    if not _broken_root:
        root = Path(tempfile.mkdtemp(prefix="broken-python-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        (root / "hw3_broken").mkdir()
        (root / "hw3_broken" / "__init__.py").write_text('"""engine/llm_memory.py, one bug each: tests/broken/."""\n')
        sys.path.insert(0, str(root))
        _broken_root.append(root)
    return _broken_root[0]


def broken_python_patch(name: str) -> Path:
    """tests/broken/<name>.patch, or tests/broken/probes/<name>.patch (a name is one fixture's, in either folder);
    ValueError for neither."""
    found = [folder / f"{name}.patch" for folder in (BROKEN_PYTHON, BROKEN_PROBES) if (folder / f"{name}.patch").is_file()]
    if len(found) != 1:
        raise ValueError(f"{name}: {len(found)} patches of that name in tests/broken/ and tests/broken/probes/, expected 1")
    return found[0]


def broken_python(name: str) -> str:
    """The module name (`hw3_broken.<name>`) of engine/llm_memory.py with broken_python_patch(name) applied, written
    once a process into broken_python_folder(): what `grade`, `fuzz --impl`, load_python and load_target are given
    for a broken Python engine. Its child process sees that package and nothing of ours."""
    patched_copy(broken_python_patch(name), PYTHON_ENGINE, broken_python_folder() / "hw3_broken" / f"{name}.py")
    return f"hw3_broken.{name}"


def broken_python_source(name: str) -> str:
    """engine/llm_memory.py with broken_python_patch(name) applied, as text."""
    return patched(PYTHON_ENGINE.read_text(), broken_python_patch(name))


def patched(text: str, patch: Path) -> str:
    """`text` with the unified diff `patch` applied exactly: every hunk at its stated line, in order, its
    context and removed lines as they stand (what `patch --fuzz=0` does, without needing the tool)."""
    lines, out, at = text.splitlines(keepends=True), [], 0
    hunks = re.split(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@.*\n", patch.read_text(), flags=re.M)[1:]
    for start, count, body in zip(hunks[::3], hunks[1::3], hunks[2::3]):
        start = int(start) - (count != "0")  # "-N,0": insert after line N
        if start < at:
            raise RuntimeError(f"{patch} does not apply: a hunk at line {start + 1} overlaps the one before")
        out += lines[at:start]
        at = start
        for line in body.splitlines(keepends=True):
            mark, rest = line[0], line[1:]
            if mark == "\\":
                raise RuntimeError(f"{patch}: a file without a final newline is not supported")
            if mark in " -":
                if at >= len(lines) or lines[at] != rest:
                    raise RuntimeError(f"{patch} does not apply: line {at + 1} is {lines[at:at + 1]}, expected {rest!r}")
                at += 1
            if mark in " +":
                out.append(rest)
    return "".join(out + lines[at:])


LONG_PROFILE = os.environ.get("PAGEDCHECK_PROFILE") == "long"
# A grade run in the test's own process under --cov traces every line of the grader's Python: about 4 times the
# CPU of the same grade unmeasured (tests/test_fixture_verdicts.py[create_free]: 7.6 s user unmeasured, 31.9 s under
# --cov). Tests marked `unmeasured` run, and assert, in every profile, but --cov measures them only with
# PAGEDCHECK_MEASURE=all: those that repeat the grader's paths on many submissions for their verdicts, and those whose
# every measured arc other tests measure too (tests/bench/unmeasured.py reads that off a run with a context per test).
MEASURE_ALL = os.environ.get("PAGEDCHECK_MEASURE") == "all"
# Tests whose every measured arc other tests measure too, by node id, one a line (`# ...` a comment): written by
# tests/bench/unmeasured.py from a run with a context per test; each is marked `unmeasured` as it is collected.
UNMEASURED_LIST = Path(__file__).with_name("unmeasured.txt")


def listed_unmeasured() -> set[str]:
    """The node ids tests/unmeasured.txt lists (none when it is missing)."""
    try:
        text = UNMEASURED_LIST.read_text()
    except FileNotFoundError:
        return set()
    return {line.split("#", 1)[0].strip() for line in text.splitlines()} - {""}


def sampled(cases: list, default: set[str]) -> list:
    """`cases` (names, or pytest.param of one name) as pytest params, those whose name is outside `default`
    marked `slow`: the default suite grades a sample (a case of each kind the test tells apart), the long
    profile every case. RuntimeError when `default` names no case (a renamed fixture must not silently leave
    the sample)."""
    names = [case if isinstance(case, str) else case.values[0] for case in cases]
    if default - set(names):
        raise RuntimeError(f"sampled: not among the cases: {sorted(default - set(names))}")
    out = []
    for name, case in zip(names, cases):
        if name in default:
            out.append(case)
        elif isinstance(case, str):
            out.append(pytest.param(case, marks=pytest.mark.slow))
        else:
            out.append(pytest.param(*case.values, marks=[*case.marks, pytest.mark.slow], id=case.id))
    return out


# A tamper test's isolation parameter (tests/tamper.py's Scene): its name and the values that grade with bubblewrap
# and without it (a failing `bwrap` first on PATH: the fallback isolation).
ISOLATION_PARAMS = ("scene", "without_bwrap", "mode")
WITH_BUBBLEWRAP, WITHOUT_BUBBLEWRAP = (False, "bwrap", "bubblewrap"), (True, "fallback")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "bwrap_repeat: a tamper test whose defence does not depend on the isolation "
                                       "(a refusal at build, the grader's own reading of the evidence, a bounded "
                                       "reply, its own text): its bubblewrap case repeats the fallback's and is slow")
    config.addinivalue_line("markers", "unmeasured: a test that runs and asserts but is not measured by --cov unless "
                                       "PAGEDCHECK_MEASURE=all: its measured arcs other tests measure too "
                                       "(tests/bench/unmeasured.py), or it repeats whole grades (README, Test strength)")


def with_bubblewrap(item: pytest.Item) -> bool | None:
    """Whether a parametrized tamper test's case grades with bubblewrap; None when no parameter names the isolation."""
    params = getattr(item, "callspec", None)
    for name in ISOLATION_PARAMS:
        value = params.params.get(name, None) if params else None
        if value in WITH_BUBBLEWRAP or value in WITHOUT_BUBBLEWRAP:
            return value in WITH_BUBBLEWRAP
    return None


@pytest.fixture(autouse=True)
def _unmeasured(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """An `unmeasured` test unmeasured, its own processes (grade-all's grades, a `pagedcheck` it starts) too: coverage
    measures a child Python when COVERAGE_PROCESS_CONFIG is in its environment (pyproject's patch = subprocess).
    pytest-cov's `no_cover` alone is not enough under xdist: a worker runs more than one Coverage (one pytest-cov
    starts before it knows it is a worker, one the start-up hook of `patch = subprocess` starts), and stopping the
    top one resumes the one beneath, so the test was traced all the same (measured, `-n 1 --cov`:
    test_fixture_verdicts[l1_traversal] 48 s and 33.9 s of user CPU; without --cov 17 s and 8.4 s). So every running
    Coverage stops for the test and starts again after it, in the same order (coverage keeps them as a stack)."""
    if not request.node.get_closest_marker("unmeasured") or MEASURE_ALL:
        yield
        return
    monkeypatch.delenv("COVERAGE_PROCESS_CONFIG", raising=False)
    try:
        from coverage import Coverage
    except ImportError:  # an install without the dev extras: nothing measures
        yield
        return
    running = list(Coverage._instances)  # bottom to top (coverage.control: a stack of the started instances)
    for cov in reversed(running):
        cov.stop()
    try:
        yield
    finally:
        for cov in reversed(list(Coverage._instances)):  # pytest-cov's own, started again after its no_cover pause
            cov.stop()
        for cov in running:
            cov.start()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `slow` are the long profile's (README, Development): skipped, with the command that runs
    them, unless PAGEDCHECK_PROFILE=long. So is the bubblewrap case of a test marked `bwrap_repeat` (issue 17 asks
    for the run without bubblewrap; where the defence is the same in both, CI runs that one). UsageError for a
    `bwrap_repeat` test with no isolation parameter: its one run must not leave CI. A test tests/unmeasured.txt
    lists is marked `unmeasured`."""
    listed = listed_unmeasured()
    for item in items:
        if item.nodeid in listed:
            item.add_marker(pytest.mark.unmeasured)
        if item.get_closest_marker("unmeasured") and not MEASURE_ALL:
            item.add_marker(pytest.mark.no_cover)
        if item.get_closest_marker("bwrap_repeat"):
            isolation = with_bubblewrap(item)
            if isolation is None:
                raise pytest.UsageError(f"{item.nodeid}: marked bwrap_repeat, but no parameter names its isolation")
            if isolation:
                item.add_marker(pytest.mark.slow)
    if LONG_PROFILE:
        return
    skip = pytest.mark.skip(reason="a long profile: PAGEDCHECK_PROFILE=long python -m pytest -m slow runs it")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
