"""Tamper suite, Python: hostile Python submissions graded by `pagedcheck grade pkg.module` (issue 7).

Each submission is a module the test writes: the built-in engine (engine/llm_memory.py, with the spec's
numbers inlined, so it needs nothing of ours), the known bug tests/broken/no_cow.patch on top, then the attack.
The promises are those of tests/test_tamper.py: exactly the score the behaviour earns, no process left, no
file changed outside the scratch, no secret in any report, no traceback from the grader.
"""

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tamper import ROOT, Reaper, Scene
from tests.test_grade import small_rubric
from tests.tamper_grading import check_report, grade_args, grade_in_scene, max_points, python_bug, reaper  # noqa: F401
from tests.test_tamper import scene  # noqa: F401

ITEMS = ("llm_init", "append_cow")  # 6 + 8 points: the bug fails append_cow
HONEST = 6

WRAP_INIT = """
_honest_llm_init = llm_init


def llm_init(pool_addr, pool_size):
{body}
    return _honest_llm_init(pool_addr, pool_size)
"""


@dataclass(frozen=True)
class PyAttack:
    name: str
    expected: int
    why: str
    code: str  # appended to the module; WRAP_INIT puts code at the start of llm_init
    timeout: float = 2.0
    items: tuple[str, ...] = ITEMS  # the rubric items it is graded on


def in_init(body: str) -> str:
    return WRAP_INIT.format(body="\n".join("    " + line for line in body.strip("\n").splitlines()))


FORGE_REPORT = '{"forged": true, "score": 16, "max_score": 16, "exit_status": 0, "items": [], "tests": []}'
ATTACKS_PY = [
    PyAttack("replace_run_checks", HONEST, "the grader's modules are not the submission's to replace", """
import dataclasses
import sys


def _forge(real):
    def forged(*args, **kwargs):
        return [dataclasses.replace(r, status="passed", points=r.max_points) for r in real(*args, **kwargs)]
    return forged


for _name in ("oracle.grading.grader", "oracle.hw3.grade"):
    _module = sys.modules.get(_name)
    if _module is not None and hasattr(_module, "run_checks"):
        _module.run_checks = _forge(_module.run_checks)
"""),
    PyAttack("patch_grade_report", HONEST, "the grader's classes are not the submission's to patch", """
import sys

_report = sys.modules.get("oracle.grading.report")
if _report is not None:
    _report.GradeReport.score = property(lambda self: self.max_score)
    _report.GradeReport.exit_status = property(lambda self: 0)
    _report.GradeReport.passed = property(lambda self: True)
"""),
    PyAttack("atexit_rewrite", HONEST, "the reports are out of the submission's reach", f"""
import atexit


def _rewrite():
    for path in ("@REPORT@", "@RESULTS@"):
        try:
            with open(path, "w") as f:
                f.write('{FORGE_REPORT}')
        except OSError:
            pass


atexit.register(_rewrite)
"""),
    PyAttack("sys_exit", 0, "every llm_init call fails with a label", in_init("import sys\nsys.exit(0)")),
    PyAttack("os_exit", 0, "every llm_init call fails with a label", in_init("import os\nos._exit(0)")),
    PyAttack("base_exception", 0, "every llm_init call fails with a label", """
class Escape(BaseException):
    pass
""" + in_init("raise Escape('not an Exception')")),
    PyAttack("fork", 0, "a fork in llm_init fails each call with a label", """
_forked = False
""" + in_init("""
import os
global _forked
if not _forked:  # once: the two processes then each go on grading (not a fork bomb)
    _forked = True
    os.fork()
""")),
    PyAttack("infinite_loop", 14, "the loop is fork_sequence's own bug: fork fails, and append_cow, whose "
             "copy-on-write it cannot reach past the loop, earns what it checked of its rule (the other appends)", """
_honest_fork = fork_sequence


def fork_sequence(engine, parent_seq_id, new_seq_id):
    while True:
        pass
""", timeout=1.0, items=(*ITEMS, "fork")),
    PyAttack("syntax_error", 0, "a module that does not import is the submission's fault", "\ndef broken(:\n    pass\n"),
    PyAttack("read_secrets", HONEST, "the secrets cannot be read; had they been, the exception would carry them",
             in_init("""
import os
found = []
for path in ("/etc/shadow", "@HOME@/secret.txt", "@RUBRIC_DIR@/secret.txt", f"/proc/{os.getppid()}/environ"):
    try:
        with open(path, "rb") as f:
            found.append(f.read().decode(errors="replace"))
    except OSError:
        pass
found.append(os.environ.get("PAGEDCHECK_TAMPER_SECRET", ""))
found = [text for text in found if "secret" in text.lower() or text.startswith("root:")]  # worth stealing
if found:
    print(*found)
    raise RuntimeError(" ".join(found))
""")),
    PyAttack("write_files", HONEST, "nothing outside its scratch is writable", in_init("""
for path, mode in (("@HOME@/pwned", "w"), ("@TARGET@", "a"), ("@RUBRIC_DIR@/pwned", "w"),
                   ("@ORACLE@/hw3/memcheck.py", "a"), ("@PTH@", "a")):
    try:
        with open(path, mode) as f:
            f.write("\\n# written by a submission\\n")
    except OSError:
        pass
""")),
    PyAttack("socket", HONEST, "there is no network", in_init("""
import socket
try:
    with socket.create_connection(("127.0.0.1", @PORT@), timeout=1) as s:
        s.sendall(b"from a submission\\n")
except OSError:
    pass
""")),
]
BY_NAME = {attack.name: attack for attack in ATTACKS_PY}


def module_source(attack: PyAttack, scene: Scene) -> str:
    """engine/llm_memory.py standing alone, tests/broken/no_cow.patch's append_kv on top, then the attack."""
    engine = (ROOT / "engine" / "llm_memory.py").read_text()  # it imports nothing of pagedcheck
    return scene.fill(f"{engine}\n\n# ---- the known bug: tests/broken/no_cow.patch ----\n{python_bug('no_cow')}\n"
                      f"# ---- the attack: {attack.name} ----\n{attack.code}")


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_python_attack_gets_its_score_and_nothing_else(name: str, scene: Scene, reaper: Reaper) -> None:  # noqa: F811
    attack = BY_NAME[name]
    module = f"tamper_{name}"
    (scene.mods / f"{module}.py").write_text(module_source(attack, scene))
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(attack.items))
    evidence = grade_in_scene(scene, reaper, grade_args(Path(module), scene, rubric, attack.timeout))
    problems = evidence.problems + check_report(scene.out, attack.expected, max_points(attack.items))
    if evidence.ran.status != 1:
        problems.append(f"pagedcheck grade exited {evidence.ran.status}, expected 1: {evidence.ran.stderr[-300:]}")
    assert not problems, "\n".join([f"{name} (expected {attack.expected}: {attack.why}):", *problems])


def test_the_python_base_bug_scores_its_honest_score(scene: Scene, reaper: Reaper) -> None:  # noqa: F811
    """The baseline: the module with the bug and no attack."""
    (scene.mods / "tamper_none.py").write_text(module_source(PyAttack("none", HONEST, "", ""), scene))
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(ITEMS))
    evidence = grade_in_scene(scene, reaper, grade_args(Path("tamper_none"), scene, rubric))
    problems = evidence.problems + check_report(scene.out, HONEST, max_points(ITEMS))
    assert not problems, "\n".join(problems)
