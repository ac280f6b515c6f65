"""Tamper suite, the sandbox (issue 17, classes 4, 5 and 7): resources outside the limits, control characters
sent to the TA's terminal and CSV, the reference and the package read where bubblewrap cannot start, and a
build cached under one isolation reused under another.

Each attack sits on a known bug (C: tests/submissions/broken/append_cow.patch; Python: tests/broken/no_cow.patch,
as in tests/test_tamper_python.py) and runs twice: with bubblewrap, and with a `bwrap` that fails first on
PATH (`Scene(without_bwrap=True)`: the fallback isolation). Each must score exactly the bug's honest score,
leave no process, change no file outside the scratch, let no secret into a report, and the grader must write
its report naming the isolation that ran. An attack that tries to read what it must not turns a successful
read into an abort, so a read that works shows as a score below the honest one.
"""

import csv
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REFERENCE_C, SUBMISSIONS, patched
from tests.tamper import ROOT, Reaper, Scene
from tests.test_grade import small_rubric
from tests.tamper_grading import check_report, grade_args, grade_in_scene, max_points, reaper  # noqa: F401
from tests.test_tamper_python import PyAttack, module_source

C_ITEMS, C_HONEST = ("compiles", "null_engine", "append_cow"), 10  # of 18: append_cow fails
PY_ITEMS, PY_HONEST = ("llm_init", "append_cow"), 6  # of 14: append_cow fails
MODES = {"bubblewrap": False, "fallback": True}  # mode -> Scene(without_bwrap=...)
ISOLATION = {"bubblewrap": ("bubblewrap",), "fallback": ("landlock", "uid", "none")}
ESC = "\x1b"
SHOUTING_NAME = f"a-{ESC}[2J{ESC}[H{ESC}]0;owned{ESC}\\total 100"  # clears the screen, retitles the window

# ---- the attacks: C code put in front of the buggy source; Python code appended to the buggy module ----

C_HEAD = """/* Hostile test submission (tamper suite, sandbox): {what} */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
"""
C_ATTACKS = {
    # class 4: every writable place it can find, filled with files just under its file-size limit
    "fill_memory": C_HEAD.format(what="fills /dev/shm, /tmp, / and $TMPDIR") + """
static void tamper_fill(void)
{
    static int done;
    if (done++) {
        return;
    }
    static char chunk[1000 * 1024];
    const char *places[] = {"/dev/shm", "/tmp", "", "/dev", getenv("TMPDIR")};
    memset(chunk, 'x', sizeof chunk);
    for (size_t p = 0; p < sizeof places / sizeof places[0]; p++) {
        for (int n = 0; places[p] != NULL && n < 20; n++) {
            char path[512];
            snprintf(path, sizeof path, "%s/pc-@TOKEN@-%d", places[p], n);
            FILE *f = fopen(path, "w");
            if (f == NULL) {
                break;
            }
            size_t wrote = fwrite(chunk, 1, sizeof chunk, f);
            if (fclose(f) != 0 || wrote != sizeof chunk) {
                break;
            }
        }
    }
}
/* run inside the first API call that allocates (llm_init's calloc): the grader refuses code run outside */
#define calloc(n, size) (tamper_fill(), calloc((n), (size)))
""",
    # class 5: escape sequences on its output, which the grader keeps and may show
    "escape_sequences": C_HEAD.format(what="prints terminal escape sequences") + """
static void tamper_shout(void)
{
    static int done;
    if (done++) {
        return;
    }
    fputs("\\x1b[2J\\x1b[H\\x1b]0;owned\\x07total 100/100\\r\\n", stdout);
    fputs("\\x1b[1A\\x1b[2Kok\\x1b[8m", stderr);
    fflush(stdout);
}
/* run inside the first API call that allocates (llm_init's calloc): the grader refuses code run outside */
#define calloc(n, size) (tamper_shout(), calloc((n), (size)))
""",
    # class 7: our package, the reference, the rubric, other places it must not see
    "read_reference": C_HEAD.format(what="aborts when it can open the reference or any file of ours") + """
static void tamper_peek(void)
{
    static int done;
    if (done++) {
        return;
    }
    const char *ours[] = {"@REFERENCE@", "@ORACLE@/__init__.py", "@RUBRIC_DIR@/secret.txt", "@HOME@/secret.txt",
                          "/etc/passwd", "@ROOT@/engine/llm_memory.py", "@ROOT@/mutation/__init__.py"};
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++) {
        FILE *f = fopen(ours[i], "r");
        if (f != NULL) {
            fprintf(stderr, "read %s\\n", ours[i]);
            abort();
        }
    }
}
/* run inside the first API call that allocates (llm_init's calloc): the grader refuses code run outside */
#define calloc(n, size) (tamper_peek(), calloc((n), (size)))
""",
}

PY_ATTACKS = {
    "fill_memory": """
import os as _os

for _place in ("/dev/shm", "/tmp", "", "/dev", _os.environ.get("TMPDIR")):
    for _n in range(20 if _place is not None else 0):
        try:
            with open(f"{_place}/pc-@TOKEN@-{_n}", "wb") as _f:
                _f.write(b"x" * (1000 * 1024))
        except OSError:
            break
""",
    "escape_sequences": """
_plain_append_kv = append_kv


def append_kv(engine, seq_id, token_id):
    print("\\x1b[2J\\x1b[H\\x1b]0;owned\\x07total 100/100", flush=True)
    raise RuntimeError("\\x1b[2J\\x1b[Hall items passed\\x1b[8m")
""",
    "read_reference": """
for _ours in ("@REFERENCE@", "@ORACLE@/__init__.py", "@RUBRIC_DIR@/secret.txt", "@HOME@/secret.txt", "/etc/passwd",
              "@ROOT@/engine/llm_memory.py", "@ROOT@/mutation/__init__.py"):
    try:
        open(_ours).close()
    except OSError:
        continue
    raise SystemExit(f"read {_ours}")
""",
}
# the Python escape attack raises in every append: llm_init passes (6), append_cow fails, as the bug does
EXPECTED = {("c", name): C_HONEST for name in C_ATTACKS} | {("python", name): PY_HONEST for name in PY_ATTACKS}


@pytest.fixture(params=list(MODES))
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def scene(tmp_path: Path, mode: str) -> Iterator[Scene]:
    world = Scene(tmp_path, without_bwrap=MODES[mode])
    yield world
    world.close()


def c_source(name: str, scene: Scene) -> str:
    base = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "append_cow.patch")
    return scene.fill(C_ATTACKS[name], TOKEN=scene.token, ROOT=str(ROOT)) + base


def py_source(name: str, scene: Scene) -> str:
    return scene.fill(module_source(PyAttack(name, PY_HONEST, "", PY_ATTACKS[name]), scene), TOKEN=scene.token,
                      ROOT=str(ROOT))


def sandbox_problems(scene: Scene, mode: str, report_folder: Path) -> list[str]:
    """What the sandbox must have left as it found it, and the isolation the report names."""
    problems = []
    for place in (Path("/dev/shm"), Path("/tmp"), Path("/"), Path("/dev"), scene.tmp):
        problems += [f"left {path}" for path in place.glob(f"pc-{scene.token}-*")]
    problems += [f"left {path}" for path in scene.tmp.rglob(f"pc-{scene.token}-*")]
    problems += [f"the sandbox left {path}" for path in scene.tmp.glob("pagedcheck-sandbox-*")]
    try:
        report = json.loads((report_folder / "report.json").read_text())
        results = json.loads((report_folder / "results.json").read_text())
    except (OSError, ValueError) as exc:
        return problems + [f"no report: {exc}"]
    isolation = report.get("isolation", "")
    if not isolation.startswith(ISOLATION[mode]):
        problems.append(f"report.json names the isolation {isolation!r}, expected one of {ISOLATION[mode]}")
    if results.get("extra_data", {}).get("isolation") != isolation:
        problems.append(f"results.json names the isolation {results.get('extra_data')!r}, report.json {isolation!r}")
    return problems


def shown_problems(texts: dict[str, str]) -> list[str]:
    return [f"{name} holds a raw control character: {text[max(text.find(ESC) - 40, 0):text.find(ESC) + 40]!r}"
            for name, text in texts.items() if ESC in text or "\x07" in text or "\x9b" in text]


@pytest.mark.parametrize("name", sorted(C_ATTACKS))
def test_c_attack_on_the_sandbox_gets_its_honest_score(name: str, mode: str, scene: Scene, reaper: Reaper) -> None:
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(C_ITEMS))
    sub = scene.root / "submission"
    sub.mkdir()
    (sub / "llm_memory.c").write_text(c_source(name, scene))
    evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric))
    problems = evidence.problems + check_report(scene.out, C_HONEST, max_points(C_ITEMS))
    problems += sandbox_problems(scene, mode, scene.out)
    problems += shown_problems({"grader stdout": evidence.ran.stdout, "grader stderr": evidence.ran.stderr})
    if evidence.ran.status != 1:
        problems.append(f"pagedcheck grade exited {evidence.ran.status}, expected 1: {evidence.ran.stderr[-300:]}")
    assert not problems, "\n".join([f"{name} ({mode}):", *problems])


@pytest.mark.parametrize("name", sorted(PY_ATTACKS))
def test_python_attack_on_the_sandbox_gets_its_honest_score(name: str, mode: str, scene: Scene, reaper: Reaper) -> None:
    module = f"tamper_sandbox_{name}"
    (scene.mods / f"{module}.py").write_text(py_source(name, scene))
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(PY_ITEMS))
    evidence = grade_in_scene(scene, reaper, grade_args(Path(module), scene, rubric))
    problems = evidence.problems + check_report(scene.out, PY_HONEST, max_points(PY_ITEMS))
    problems += sandbox_problems(scene, mode, scene.out)
    problems += shown_problems({"grader stdout": evidence.ran.stdout, "grader stderr": evidence.ran.stderr})
    if evidence.ran.status != 1:
        problems.append(f"pagedcheck grade exited {evidence.ran.status}, expected 1: {evidence.ran.stderr[-300:]}")
    assert not problems, "\n".join([f"{name} ({mode}):", *problems])


def test_grade_all_shows_no_control_character_of_a_submission(mode: str, scene: Scene, reaper: Reaper) -> None:
    """A folder whose name clears the screen, holding a submission that prints escape sequences: the
    progress lines, each grader.log and scores.csv show them escaped; the classmate graded after it gets
    full marks; every row names the isolation."""
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(C_ITEMS))
    batch, classmate = scene.root / "batch", "z-classmate"
    for folder in (SHOUTING_NAME, classmate):
        (batch / folder).mkdir(parents=True)
    (batch / SHOUTING_NAME / "llm_memory.c").write_text(c_source("escape_sequences", scene))
    (batch / classmate / "llm_memory.c").write_text(REFERENCE_C.read_text())
    args = ["grade-all", str(batch), "--out", str(scene.out), "--rubric", str(rubric), "--jobs", "1", "--timeout", "2"]
    evidence = grade_in_scene(scene, reaper, args)
    full = max_points(C_ITEMS)
    problems = evidence.problems + check_report(scene.out / SHOUTING_NAME, C_HONEST, full)
    problems += check_report(scene.out / classmate, full, full)
    for folder in (SHOUTING_NAME, classmate):
        problems += sandbox_problems(scene, mode, scene.out / folder)
    texts = {"grade-all stdout": evidence.ran.stdout, "grade-all stderr": evidence.ran.stderr,
             "scores.csv": (scene.out / "scores.csv").read_text(errors="replace")}
    texts |= {f"{p.parent.name!r}/grader.log": p.read_text(errors="replace") for p in scene.out.glob("*/grader.log")}
    problems += shown_problems(texts)
    rows = list(csv.DictReader((scene.out / "scores.csv").open()))
    problems += [f"scores.csv row {row['submission']!r} names the isolation {row.get('isolation')!r}"
                 for row in rows if row.get("isolation") not in ISOLATION[mode]]
    if f"in {rows[0].get('isolation')};" not in evidence.ran.stderr:
        problems.append(f"the progress lines do not name the isolation: {evidence.ran.stderr[-300:]!r}")
    assert not problems, "\n".join([f"grade-all ({mode}):", *problems])


@pytest.fixture
def shared_cache_scenes(tmp_path: Path) -> Iterator[tuple[Scene, Scene]]:
    with_bwrap, without = Scene(tmp_path / "with"), Scene(tmp_path / "without", without_bwrap=True)
    shutil.rmtree(without.cache)  # (it holds the driver object every scene's cache starts with)
    without.cache.symlink_to(with_bwrap.cache)  # one grader's cache, graded in both isolations
    yield with_bwrap, without
    with_bwrap.close()
    without.close()


def test_a_build_cached_under_one_isolation_is_not_reused_under_another(
    shared_cache_scenes: tuple[Scene, Scene], reaper: Reaper
) -> None:
    """The same submission graded with bubblewrap, then in the fallback, with one build cache: each isolation
    builds its own, and each report names its own isolation."""
    problems, builds = [], []
    for scene, mode in zip(shared_cache_scenes, MODES):
        rubric = small_rubric(scene.rubric_dir / "rubric.toml", ["compiles", "null_engine"])
        sub = scene.root / "submission"
        sub.mkdir()
        (sub / "llm_memory.c").write_text(REFERENCE_C.read_text())
        evidence = grade_in_scene(scene, reaper, grade_args(sub, scene, rubric))
        problems += [f"{mode}: {p}" for p in evidence.problems + check_report(scene.out, 10, 10)]
        problems += [f"{mode}: {p}" for p in sandbox_problems(scene, mode, scene.out)]
        builds.append(sorted(p.name for p in (scene.cache / "pagedcheck" / "build").glob("build-*")))
    if len(builds[1]) != len(builds[0]) + 1:
        problems.append(f"the fallback reused the bubblewrap build: {builds}")
    assert not problems, "\n".join(problems)
