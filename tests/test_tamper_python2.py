"""Tamper suite, Python, second round (issue 17): hostile Python submissions against what the grader reads
from the submission's process, what it reads of the submission's files, and what it concludes from the
submission's word. HW3 (`pagedcheck grade pkg.module`) and prefix (`pagedcheck grade --family prefix
lab:pkg`), each on top of a known bug (tests/broken/*.patch, tests/broken_prefix/*.patch), each graded with
bubblewrap and with bubblewrap made unavailable (a failing `bwrap` first on PATH: the fallback isolation).

The promises are those of tests/test_tamper.py: the score the behaviour earns (never above the bug's honest
score), no process left, no file changed outside the scratch, no secret in any report, and a report written
with no traceback from the grader. The classes of issue 17 they try: forged reply lengths and bombs (3), a
submission that hands over a clean copy of its pool (1), a source built to choke a parser in the grader (3),
a submission that claims it cannot run a probe (1).
"""

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import patched
from tests.tamper import ROOT, Reaper, Scene
from tests.test_grade import small_rubric
from tests.tamper_grading import check_report, grade_args, grade_in_scene, max_points, python_bug, reaper  # noqa: F401

MEMORY_GUARD = 1 << 30  # RLIMIT_AS on the grader: a grader that decoded a bomb into objects would pass it

# ---- what the attacks write into the reply pipe (the server's argv[2]) before ending their process ----

SEND_AND_END = """
def _send_and_end(length, body):
    import os, struct, sys
    fd = int(sys.argv[2])  # the server's reply pipe: its command line names it
    data = struct.pack("<I", length) + body
    while data:
        data = data[os.write(fd, data):]
    os._exit(0)
"""
BOMBS = {  # name: (the length the frame claims, the bytes that follow, `_b`), as Python expressions
    "length_4gib": ("0xFFFFFFF0", "b'{\"ret\": 1}'"),
    "dict_bomb": ("60 << 20", "b'[' + b'{},' * ((60 << 20) // 3 - 1) + b'{}]'"),  # 20 M dicts: gigabytes as objects
    "deep_nesting": ("len(_b)", "b'[' * 100_001 + b']' * 100_001"),
    "lone_surrogate": ("len(_b)", "b'{\"failure\": \"\\\\ud800 in llm_init\", \"fatal\": false}'"),
    "invalid_utf8": ("len(_b)", "b'{\"failure\": \"\\xff\\xfe\", \"fatal\": false}'"),
    "huge_int": ("len(_b)", "b'{\"ret\": ' + b'7' * 4000 + b'}'"),
    "nan_handle": ("len(_b)", "b'{\"ret\": NaN}'"),
    "wrong_types": ("len(_b)", "b'{\"ret\": {\"handle\": [1]}, \"state\": \"clean\"}'"),
}


def bomb_in_init(name: str) -> str:
    length, body = BOMBS[name]
    return SEND_AND_END + f"""
_honest_llm_init = llm_init


def llm_init(pool_addr, pool_size):
    _b = {body}
    _send_and_end({length}, _b)
"""


# ---- the clean copy: the pool the grader checks is kept clean of what create wrote into it ----

CLEAN_COPY = """
import base64 as _b64
import sys as _sys

_CLEAN = None  # the pool as a correct engine would leave it: initial bytes, then only what the appends wrote
_GUARD = 64


def _forge_observations():
    # the grader reads the pool from the server's reply (when it does): swap in the clean copy
    server = getattr(_sys.modules.get("__main__"), "Server", None)
    real = getattr(server, "_observation", None)
    if real is None:
        return

    def forged(self, engine):
        out = real(self, engine)
        if "region" in out and _CLEAN is not None and len(_CLEAN) == len(_b64.b64decode(out["region"])):
            out["region"] = _b64.b64encode(bytes(_CLEAN)).decode()
        return out

    server._observation = forged


_forge_observations()
_buggy_llm_init, _buggy_append_kv = llm_init, append_kv


def llm_init(pool_addr, pool_size):
    global _CLEAN
    _CLEAN = None if pool_addr is None else bytearray(pool_addr.obj)  # guard + pool + guard, as given
    return _buggy_llm_init(pool_addr, pool_size)


def append_kv(engine, seq_id, kv_data):
    seq = None if engine is None else engine.find(seq_id)
    before = _block_at(seq)
    result = _buggy_append_kv(engine, seq_id, kv_data)
    if result == 0 and _CLEAN is not None:
        after = _block_at(seq, -1)
        real = engine.pool_base_ptr.obj
        if before not in (None, -1, after):  # a copy-on-write: the copy of the clean block
            _CLEAN[_GUARD + after * 64 : _GUARD + after * 64 + 64] = _CLEAN[_GUARD + before * 64 : _GUARD + before * 64 + 64]
        at = _GUARD + after * 64 + (seq.kv_count - 1) % 16 * 4
        _CLEAN[at : at + 4] = real[at : at + 4]  # the record the append wrote
    return result


def _block_at(seq, back=0):
    if seq is None:
        return None
    logical = (seq.kv_count + back) // 16
    l2 = seq.block_table[logical // 16] if logical // 16 < len(seq.block_table) else None
    return -1 if l2 is None else l2[logical % 16]
"""

# ---- the claim: "I cannot run this probe here" ----

NO_ROOM_FOR_PROBES = """
_honest_llm_init = llm_init


def llm_init(pool_addr, pool_size):
    if pool_size >= 1 << 26:  # the probes' largest pool (init_untouched): claim there is no room for it
        raise MemoryError("Cannot allocate memory: no address space for the pool")
    return _honest_llm_init(pool_addr, pool_size)
"""

PARSE_BOMB = "x = " + "not " * 100_000 + "1\n"  # never imported: only a parser in the grader would read it


@dataclass(frozen=True)
class Hw3Attack:
    name: str
    bug: str  # tests/broken/<bug>.patch
    items: tuple[str, ...]
    expected: int  # the score its behaviour earns
    honest: int  # the bug's honest score on those items
    why: str
    code: str  # appended to the module after the bug
    junk: str = ""  # when set, the submission is a package with this module beside it (never imported)


NO_COW = ("no_cow", ("llm_init", "append_cow"), 6)  # 6 + 8 points: the bug fails append_cow
DOES_NOT_ANSWER = "every llm_init fails with 'a reply the grader cannot read' (or a length over the bound)"
HW3_ATTACKS = [
    *(Hw3Attack(f"reply_{name}", *NO_COW[:2], 0, NO_COW[2], DOES_NOT_ANSWER, bomb_in_init(name)) for name in BOMBS),
    Hw3Attack("clean_pool", "zero_on_create", ("llm_init", "no_premature_writes"), 6, 6,
              "the grader reads the pool from its own memory file: create's zeroing shows", CLEAN_COPY),
    Hw3Attack("parse_bomb", *NO_COW, NO_COW[2], "the grader reads no source with a parser: the module it imports is graded",
              "", junk=PARSE_BOMB),
    # was 0 (init_untouched's 64 MiB pool failed llm_init); that probe reads the engine's counts, which a Python
    # submission's grade no longer rests on (oracle/hw3/evidence.py), so no 64 MiB pool is asked for and the
    # refusal goes unseen: the base bug's score, never "this machine cannot run it"
    Hw3Attack("no_room_for_probes", *NO_COW, NO_COW[2],
              "a MemoryError in llm_init is never a probe the machine cannot run: no probe is left out for it",
              NO_ROOM_FOR_PROBES),
]
HW3_BY_NAME = {attack.name: attack for attack in HW3_ATTACKS}


def inlined_engine() -> str:
    """engine/llm_memory.py standing alone (the spec's numbers inlined: it needs nothing of ours)."""
    engine = (ROOT / "engine" / "llm_memory.py").read_text()
    spec = (ROOT / "oracle" / "hw3" / "spec.py").read_text().split('"""', 2)[2]
    return re.sub(r"from oracle\.hw3\.spec import \([^)]*\)\n", lambda _: spec, engine, count=1)


def hw3_source(bug: str, code: str, scene: Scene) -> str:
    """The engine, what the known bug tests/broken/<bug>.patch changes on top (tamper_grading.python_bug; `base`: the
    engine's names before it), then the attack."""
    return scene.fill(f"{inlined_engine()}\n\nimport types as _types\nbase = _types.SimpleNamespace(**globals())\n\n"
                      f"# ---- the known bug: tests/broken/{bug}.patch ----\n{python_bug(bug)}\n# ---- the attack ----\n{code}")


def graded(scene: Scene, reaper: Reaper, args: list[str], expected: int, honest: int, maximum: int) -> list[str]:  # noqa: F811
    evidence = grade_in_scene(scene, reaper, args, MEMORY_GUARD)
    problems = evidence.problems + check_report(scene.out, expected, maximum)
    if expected > honest:
        problems.append(f"the expected score {expected} is above the bug's honest {honest}: the test is wrong")
    if evidence.ran.status != 1:
        problems.append(f"pagedcheck grade exited {evidence.ran.status}, expected 1: {evidence.ran.stderr[-300:]}")
    return problems


@pytest.fixture(params=["bwrap", "fallback"])
def scene(request: pytest.FixtureRequest, tmp_path: Path):
    world = Scene(tmp_path, without_bwrap=request.param == "fallback")
    yield world
    world.close()


# every attack here is held by the grader whatever the isolation (replies bounded and checked, the pool read from its
# own memory file, no parser, no probe left out): CI grades each without bubblewrap, the long profile with it too
# (bwrap_repeat, tests/conftest.py); the base bugs and the "none" baseline are graded in both
@pytest.mark.bwrap_repeat
@pytest.mark.parametrize("name", sorted(HW3_BY_NAME))
def test_hw3_python_attack_gets_no_more_than_its_honest_score(name: str, scene: Scene, reaper: Reaper) -> None:  # noqa: F811
    attack = HW3_BY_NAME[name]
    module = f"tamper2_{name}"
    if attack.junk:
        (scene.mods / module).mkdir()
        (scene.mods / module / "__init__.py").write_text(hw3_source(attack.bug, attack.code, scene))
        (scene.mods / module / "junk.py").write_text(attack.junk)
    else:
        (scene.mods / f"{module}.py").write_text(hw3_source(attack.bug, attack.code, scene))
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(attack.items))
    problems = graded(scene, reaper, grade_args(Path(module), scene, rubric), attack.expected, attack.honest,
                      max_points(attack.items))
    assert not problems, "\n".join([f"{name} (expected {attack.expected}: {attack.why}):", *problems])


@pytest.mark.parametrize("bug, items, honest", [NO_COW, ("zero_on_create", ("llm_init", "no_premature_writes"), 6)])
def test_hw3_base_bug_scores_its_honest_score(bug: str, items: tuple[str, ...], honest: int, scene: Scene,
                                              reaper: Reaper) -> None:  # noqa: F811
    (scene.mods / f"tamper2_{bug}.py").write_text(hw3_source(bug, "", scene))
    rubric = small_rubric(scene.rubric_dir / "rubric.toml", list(items))
    problems = graded(scene, reaper, grade_args(Path(f"tamper2_{bug}"), scene, rubric), honest, honest, max_points(items))
    assert not problems, "\n".join(problems)


# ---- the prefix family ----

PREFIX_ITEMS = ("null_block", "hit_cap")  # 8 + 8 points: no_hit_cap fails hit_cap
PREFIX_HONEST = 8

BOMB_IN_FREE = SEND_AND_END + """
from .kv_cache import KVCacheManager as _Manager


def _bomb(self, *args, **kwargs):
    _b = {body}
    _send_and_end({length}, _b)


_Manager.allocate_slots = _bomb
"""
# the shape's adapter runs in this process too: its class is found among the live objects (the server takes
# its own modules out of sys.modules before the submission loads, oracle/serve.py's unstage)
FIND_LAB = """
import gc as _gc

_lab = next((o for o in _gc.get_objects() if isinstance(o, type) and o.__name__ == "LabAdapter"), None)
"""
WRONG_SHAPE = FIND_LAB + """
if _lab is not None:
    _lab.admit = lambda self, rid, tokens: (True, 1, 2)  # three values where two are expected
"""
WRONG_OBSERVATION = FIND_LAB + """
if _lab is not None:
    _observe = _lab.observe

    def _forged(self):
        seen = _observe(self)
        return type(seen)(tables={(1, 2): [[0]]}, free=iter(()), ref_counts={"a": "b"}, hashes=None, indexed=None)

    _lab.observe = _forged
"""


@dataclass(frozen=True)
class PrefixAttack:
    name: str
    expected: int
    why: str
    code: str  # appended to the package's __init__.py


PREFIX_ATTACKS = [
    PrefixAttack("reply_dict_bomb", 0, "every allocation fails: a length over the bound",
                 BOMB_IN_FREE.format(length=BOMBS["dict_bomb"][0], body=BOMBS["dict_bomb"][1])),
    PrefixAttack("reply_lone_surrogate", 0, "every allocation fails: a reply the grader cannot read",
                 BOMB_IN_FREE.format(length=BOMBS["lone_surrogate"][0], body=BOMBS["lone_surrogate"][1])),
    PrefixAttack("wrong_shape", 0, "every admit fails: a reply the grader cannot read", WRONG_SHAPE),
    PrefixAttack("wrong_observation", 0, "every observation fails: a reply the grader cannot read", WRONG_OBSERVATION),
]
PREFIX_BY_NAME = {attack.name: attack for attack in PREFIX_ATTACKS}


def prefix_package(folder: Path, variant: str, code: str) -> None:
    """engine/prefix as the package `folder`, tests/broken_prefix/<variant>.patch applied, `code` appended to
    its __init__.py."""
    engine = ROOT / "engine" / "prefix"
    shutil.copytree(engine, folder, ignore=shutil.ignore_patterns("__pycache__"))
    patch = ROOT / "tests" / "broken_prefix" / f"{variant}.patch"
    target = re.search(r"^\+\+\+ b/engine/prefix/(\S+)", patch.read_text(), re.M)[1]
    (folder / target).write_text(patched((engine / target).read_text(), patch))
    with (folder / "__init__.py").open("a") as init:
        init.write(f"\n# ---- the attack ----\n{code}")


def prefix_rubric(path: Path) -> Path:
    text = (ROOT / "oracle" / "prefix" / "rubric.toml").read_text()
    head, *blocks = text.split("[[item]]")
    path.write_text(head + "".join("[[item]]" + b for b in blocks if any(f'id = "{i}"\n' in b for i in PREFIX_ITEMS)))
    return path


def prefix_args(package: str, scene: Scene) -> list[str]:
    return ["grade", "--family", "prefix", f"lab:{package}", "--rubric", str(prefix_rubric(scene.rubric_dir / "rubric.toml")),
            "--json", str(scene.out / "report.json"), "--gradescope", str(scene.out / "results.json"),
            "--out", str(scene.out), "-q"]


@pytest.mark.parametrize("name", [*(pytest.param(name, marks=pytest.mark.bwrap_repeat) for name in sorted(PREFIX_BY_NAME)),
                                  "none"])
def test_prefix_attack_gets_no_more_than_its_honest_score(name: str, scene: Scene, reaper: Reaper) -> None:  # noqa: F811
    """"none" is the baseline: the known bug with no attack."""
    attack = PREFIX_BY_NAME.get(name, PrefixAttack("none", PREFIX_HONEST, "the bug's honest score", ""))
    package = f"tamper2_prefix_{name}"
    prefix_package(scene.mods / package, "no_hit_cap", scene.fill(attack.code))
    problems = graded(scene, reaper, prefix_args(package, scene), attack.expected, PREFIX_HONEST, 16)
    assert not problems, "\n".join([f"{name} (expected {attack.expected}: {attack.why}):", *problems])
