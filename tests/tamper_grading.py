"""Grading a hostile submission in a tamper suite (tests/test_tamper*.py), as every suite does it: the world
(tests/tamper.py's Scene, the `scene` fixture under bubblewrap and without it, the `reaper`), the submission
written, a separate `pagedcheck grade` run on a rubric of the items it concerns (some weighed as a course may), and
what that grading did that the promises do not allow: `grade_in_scene`'s evidence (processes left, files changed,
secrets shown, connections, a traceback) and `check_report`'s (a score other than the honest one, a report not the
grader's own).

The submissions: `c_submission` (the reference with tests/submissions/broken/<base>.patch and an attack's patch on
top), `python_module` (engine/llm_memory.py with what tests/broken/<base>.patch changes and an attack's code on top),
`prefix_submission` (engine/prefix as the package `labsol`, with tests/broken_prefix/<base>.patch, and a
kv_cache.py), `blockspace_submission` (engine/blockspace as a student's folder, with tests/broken_blockspace/<base>.patch
and an attack appended). `graded_problems` and `prefix_problems` grade one and say what its grade got that the honest score
does not allow.
"""

import ast
import json
import secrets
import shutil
from collections.abc import Iterator, Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import PYTHON_ENGINE, REFERENCE_C, SUBMISSIONS, broken_python_source, patched, patched_copy
from tests.tamper import (ROOT, Ran, Reaper, Scene, compile_grader, differences, report_texts, restore, run_pagedcheck,
                          snapshot)

PREFIX_ENGINE = ROOT / "engine" / "prefix"
BROKEN_BLOCKSPACE = ROOT / "tests" / "broken_blockspace"
PREFIX_RUBRIC = ROOT / "oracle" / "prefix" / "rubric.toml"
PLAIN_KV_CACHE = "from labsol import KVCacheManager, Request\n"
# the items a Python submission is not graded on: C's own, and those whose rule shows only in the engine's
# objects, which the grader does not read in the submission's process (oracle/hw3/evidence.py ITEMS)
NOT_GRADED_FOR_PYTHON = frozenset({"compiles", "big_pool", "memory_safety", "alloc_failure",
                                   "tail_insertion", "l1_traversal"})


@pytest.fixture(params=[False, True], ids=["bwrap", "without-bwrap"])
def scene(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Scene]:
    """An attack's world, under bubblewrap and without it (a failing `bwrap` first on PATH: the Landlock fallback)."""
    world = Scene(tmp_path, without_bwrap=request.param)
    yield world
    world.close()


@pytest.fixture(scope="module")
def reaper() -> Iterator[Reaper]:
    """This process as a child subreaper; and the grader's bytecode written beforehand, so that a .pyc the
    grader writes the first time it imports a module is not taken for an attack's."""
    compile_grader()
    with Reaper() as r:
        yield r


def max_points(items: tuple[str, ...], lang: str = "c") -> int:
    """The most `items` can earn a submission in `lang` ("c", "python"): the report's max_score."""
    from oracle.hw3.grade import load

    left_out = NOT_GRADED_FOR_PYTHON if lang == "python" else frozenset()
    return sum(item.points for item in load().items if item.id in items and item.id not in left_out)


@dataclass
class Evidence:
    """What one grading did, gathered once it returned; `problems` lists every way it broke a promise."""

    ran: Ran
    problems: list[str]


def grade_in_scene(scene: Scene, reaper: Reaper, args: list[str], memory_guard: int | None = None,
                   limit: float = 180.0) -> Evidence:
    """Runs `pagedcheck ARGS`, then gathers the evidence: leftovers (killed), files changed outside the
    scratch (restored), secrets in any report or in what the grader printed, connections to the port. `limit`: the
    harness's seconds of wall clock, past which the grading is killed and counted a problem (a grader that never
    ends), never a timing target."""
    before = snapshot(scene.outside_scratch())
    ran = run_pagedcheck(args, scene, limit=limit, memory_guard=memory_guard)
    problems = [] if ran.status is not None else ["grading did not end within the harness's limit"]
    left = reaper.leftovers(*scene.markers)
    reaper.kill(left)
    problems += [f"left running: pid {p.pid} ({p.state}) {p.cmdline[:160]}" for p in left[:10]]
    if len(left) > 10:
        problems.append(f"... {len(left)} processes left running in all")
    after = snapshot(scene.outside_scratch())
    changed = differences(before, after)
    restore(before, after)
    problems += changed
    texts = {**report_texts(scene.out), "grader stdout": ran.stdout, "grader stderr": ran.stderr}
    problems += [f"{name} leaks {leak}" for name, text in texts.items() for leak in scene.leaks(text)]
    if connections := scene.connections():
        problems.append(f"{connections} connection(s) reached 127.0.0.1:{scene.port}")
    if "Traceback (most recent call last)" in ran.stderr:
        problems.append("the grader printed a traceback: " + ran.stderr.strip().splitlines()[-1][:200])
    return Evidence(ran, problems)


def check_report(folder: Path, expected: float, max_score: float) -> list[str]:
    """The grader's own reports in `folder` say `expected` of `max_score`, untouched and self-consistent."""
    problems = []
    try:
        report = json.loads((folder / "report.json").read_text())
        results = json.loads((folder / "results.json").read_text())
    except (OSError, ValueError) as exc:
        return [f"no readable report in {folder.name}: {exc}"]
    if "forged" in (folder / "report.json").read_text() + (folder / "results.json").read_text():
        problems.append("a report was forged by the submission (rewritten, or by code it put into the grader)")
    if (report.get("score"), report.get("max_score")) != (expected, max_score):
        failed = [(i["id"], i["status"], i["message"][:150]) for i in report.get("items", []) if i["status"] != "passed"]
        problems.append(f"score {report.get('score')}/{report.get('max_score')}, expected {expected}/{max_score}: {failed}")
    if results.get("score") != report.get("score"):
        problems.append(f"results.json says {results.get('score')}, report.json {report.get('score')}")
    if report.get("exit_status") != (0 if expected == max_score else 1):
        problems.append(f"exit_status {report.get('exit_status')}, grader_error {report.get('grader_error')!r}")
    problems += [f"item {i['id']} is a grader error: {i['message'][:200]}" for i in report.get("items", [])
                 if i["status"] == "error"]
    return problems


def grade_args(sub: Path, scene: Scene, rubric: Path, timeout: float = 2.0, options: tuple[str, ...] = ()) -> list[str]:
    return ["grade", str(sub), "--rubric", str(rubric), "--json", str(scene.out / "report.json"),
            "--gradescope", str(scene.out / "results.json"), "--out", str(scene.out), "--timeout", str(timeout),
            "-q", *options]


def weighted(rubric: Path, item: str, points: int) -> None:
    """`rubric` with `item` weighed `points`, as a course may weigh it."""
    head, *blocks = rubric.read_text().split("[[item]]")
    blocks = [b.replace("\npoints = ", f"\npoints = {points}\n#", 1) if f'id = "{item}"\n' in b else b
              for b in blocks]
    rubric.write_text("[[item]]".join([head, *blocks]))


def python_bug(base: str) -> str:
    """What tests/broken/<base>.patch changes in engine/llm_memory.py, as code that goes on top of the engine: each
    top-level function or assignment it changes, as patched, and a class it changes as a subclass of the engine's
    holding the methods it changes (so the engine's names before them, `base`, keep the engine's own)."""
    engine, broken = PYTHON_ENGINE.read_text(), broken_python_source(base)
    lines = broken.splitlines(keepends=True)
    was = {_defined(node): node for node in ast.parse(engine).body}
    text = lambda node: "".join(lines[node.lineno - 1 - len(node.decorator_list if hasattr(node, "decorator_list") else ()):node.end_lineno])  # noqa: E731
    out = []
    for node in ast.parse(broken).body:
        old = was.get(_defined(node))
        if old is not None and ast.dump(old) == ast.dump(node):
            continue
        if isinstance(node, ast.ClassDef) and isinstance(old, ast.ClassDef):
            before = {_defined(m): ast.dump(m) for m in old.body}
            methods = [text(m) for m in node.body if before.get(_defined(m)) != ast.dump(m)]
            out.append(f"class {node.name}({node.name}):\n    __slots__ = ()\n\n" + "\n".join(methods))
        else:
            out.append(text(node))
    return "\n\n".join(out)


def _defined(node: ast.stmt) -> str:
    """The name a top-level statement defines (its text for any other statement)."""
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return node.name
    if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id
    return ast.dump(node)


def python_module(base: str, attack: str) -> str:
    """engine/llm_memory.py standing alone, python_bug(base) on top (`base`: the engine's names as they were before
    it, so a bug that wraps the engine's call reaches the engine's), then the attack's code."""
    engine = PYTHON_ENGINE.read_text()
    return (f"{engine}\n\nimport types as _types\nbase = _types.SimpleNamespace(**globals())\n\n"
            f"# ---- the known bug: tests/broken/{base}.patch ----\n{python_bug(base)}\n\n{attack}")


def python_submission(scene: Scene, review: str, base: str, attack: Path | None) -> Path:
    """python_module(base, the attack's code at `attack`; None: none), the scene's paths filled in (Scene.fill), in
    the scene's modules under a name drawn afresh (`review`_<attack or control>_<hex>: no other test's submission
    has it); what `grade` is given."""
    module = f"{review}_{attack.stem if attack else 'control'}_{secrets.token_hex(4)}"
    (scene.mods / f"{module}.py").write_text(scene.fill(python_module(base, attack.read_text() if attack else "")))
    return Path(module)


def c_submission(scene: Scene, base: str | None, attack: Path | None, under: tuple[Path, ...] = ()) -> Path:
    """The reference C with tests/submissions/broken/<base>.patch (None: none), the patches `under` in turn, then
    the patch `attack` (None: none), the scene's paths filled in (Scene.fill), as the scene's submission folder."""
    source = REFERENCE_C.read_text()
    if base is not None:
        source = patched(source, SUBMISSIONS / "broken" / f"{base}.patch")
    for patch in under:
        source = patched(source, patch)
    sub = scene.root / "submission"
    sub.mkdir()
    (sub / "llm_memory.c").write_text(scene.fill(source if attack is None else patched(source, attack)))
    return sub


def graded_problems(scene: Scene, reaper: Reaper, sub: Path, items: tuple[str, ...], honest: int, full: int,
                    weights: Mapping[str, int] = {}) -> list[str]:
    """The hw3 submission `sub` graded on `items` (each of `weights` worth its points): what its grading did that
    the promises do not allow, a score other than `honest` of `full` among them."""
    from tests.test_grade import small_rubric

    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
    for item, points in weights.items():
        weighted(rubric, item, points)
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric))
    return evidence.problems + check_report(scene.out, honest, full)


def prefix_rubric(path: Path, items: tuple[str, ...]) -> Path:
    """The prefix family's default rubric restricted to `items`."""
    head, *blocks = PREFIX_RUBRIC.read_text().split("[[item]]")
    path.write_text(head + "".join("[[item]]" + b for b in blocks if any(f'id = "{i}"\n' in b for i in items)))
    return path


def prefix_submission(folder: Path, base: str | None, kv_cache: str) -> Path:
    """`folder` holding engine/prefix as `labsol`, with tests/broken_prefix/<base>.patch applied (None: correct),
    and `kv_cache` as kv_cache.py."""
    package = folder / "labsol"
    if base is None:
        shutil.copytree(PREFIX_ENGINE, package, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        patched_copy(ROOT / "tests" / "broken_prefix" / f"{base}.patch", PREFIX_ENGINE, package)
    (folder / "kv_cache.py").write_text(kv_cache)
    return folder


def prefix_grade_args(sub: Path, scene: Scene, rubric_path: Path) -> list[str]:
    return ["grade", "--family", "prefix", str(sub), "--rubric", str(rubric_path),
            "--json", str(scene.out / "report.json"), "--gradescope", str(scene.out / "results.json"),
            "--out", str(scene.out), "-q"]


def prefix_problems(tmp_path: Path, reaper: Reaper, base: str | None, kv_cache: Path | None, items: tuple[str, ...],
                    honest: int, full: int, weights: Mapping[str, int] = {}, without_bwrap: bool = False) -> list[str]:
    """A prefix pool, prefix_submission(base, the file `kv_cache`; None: the plain one), graded in a world of its
    own on `items` (each of `weights` worth its points): what its grading did that the promises do not allow, a
    score other than `honest` of `full` among them."""
    with closing(Scene(tmp_path, without_bwrap=without_bwrap)) as scene:
        sub = prefix_submission(scene.mods / "student", base, kv_cache.read_text() if kv_cache else PLAIN_KV_CACHE)
        rubric = prefix_rubric(scene.rubric_dir / "rubric.toml", items)
        for item, points in weights.items():
            weighted(rubric, item, points)
        evidence = grade_in_scene(scene, reaper, prefix_grade_args(sub, scene, rubric))
        return evidence.problems + check_report(scene.out, honest, full)


def blockspace_submission(scene: Scene, base: str | None, attack: Path) -> Path:
    """A student's folder: our engine's block manager (with tests/broken_blockspace/<base>.patch; None: correct), and
    the Python file `attack` appended to its block_manager.py."""
    from tests.test_blockspace_grade import student_copy

    folder = student_copy(scene.root / "submission", str(BROKEN_BLOCKSPACE / f"{base}.patch") if base else None)
    manager = folder / "block_manager.py"
    manager.write_text(manager.read_text() + "\n\n" + scene.fill(attack.read_text()))
    return folder


def c_in_both_isolations(tmp_path: Path, reaper: Reaper, base: str | None, attack: Path, items: tuple[str, ...],
                         honest: int, full: int) -> list[str]:
    """The reference C (with tests/submissions/broken/<base>.patch; None: none) and the patch `attack` graded on
    `items` under bubblewrap and without it (the Landlock fallback), each in a world of its own: what either grading
    did that the promises do not allow, a score other than `honest` of `full` in each among them (so the same grade in
    both)."""
    problems = []
    for without_bwrap in (False, True):
        with closing(Scene(tmp_path / ("without-bwrap" if without_bwrap else "bwrap"), without_bwrap=without_bwrap)) \
                as world:
            sub = c_submission(world, base, attack)
            found = graded_problems(world, reaper, sub, items, honest, full)
            problems += [f"{'without bubblewrap' if without_bwrap else 'bubblewrap'}: {p}" for p in found]
    return problems


def blockspace_in_both_isolations(tmp_path: Path, reaper: Reaper, attack: Path, points: dict[str, int],
                                  honest: int | None = None) -> list[str]:
    """A correct blockspace submission (our engine and `attack`) graded under bubblewrap and without it (the Landlock
    fallback), each in a world of its own: what either grading did that the promises do not allow, a score other than
    `honest` (default: full marks) in each among them (so the same grade in both)."""
    from tests.test_tamper_review3a import graded

    problems = []
    for without_bwrap in (False, True):
        with closing(Scene(tmp_path / ("without-bwrap" if without_bwrap else "bwrap"), without_bwrap=without_bwrap)) \
                as world:
            sub = blockspace_submission(world, None, attack)
            found = graded(world, reaper, sub, points, sum(points.values()) if honest is None else honest)
            problems += [f"{'without bubblewrap' if without_bwrap else 'bubblewrap'}: {p}" for p in found]
    return problems
