"""Every process of a Python submission is handed a pools' memory file made for it (oracle/hw3/pyremote.py), held
at one descriptor number (pyserve.POOLS_FD): what a process finds there at import, its size and its number, is the
same for a graded run's first process, one after earlier programs' windows, a second opinion's (alone.py's Witness,
RemotePython.apart) and the graded run's replay after it. Real processes: the submission served in the sandbox,
with and without bubblewrap."""

from contextlib import closing
from pathlib import Path

import pytest

from oracle import isolation
from oracle.hw3.alone import Aside
from oracle.hw3.machine import Call
from oracle.child import PythonChild
from oracle.hw3.pyremote import served
from oracle.hw3.pyserve import POOLS_FD
from oracle.sandbox import Sandbox
from tests.test_tamper_review import python_module

# what a process finds at import: each descriptor naming the grader's pools' file, with the file's size
POOLS_FOUND = ("import os as _os, sys as _sys\n"
               "def _pools_found():\n"
               "    found = []\n"
               "    for fd in sorted(_os.listdir('/proc/self/fd'), key=int):\n"
               "        try:\n"
               "            if 'pagedcheck-pools' in _os.readlink(f'/proc/self/fd/{fd}'):\n"
               "                found.append((int(fd), _os.fstat(int(fd)).st_size))\n"
               "        except OSError:\n"
               "            pass\n"
               "    return found\n"
               "print('POOLS', _pools_found(), file=_sys.stderr, flush=True)\n")
BIG_POOL = 1 << 20  # an earlier program's pool, which grew the grading's one file before


def found(child: PythonChild) -> str:
    """The line the process `child` now runs printed at import."""
    lines = [line for line in child.output(0).splitlines() if line.startswith("POOLS")]
    assert len(lines) == 1, child.output(0)
    return lines[0]


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_every_process_finds_an_empty_pools_file_at_one_number(without_bwrap: bool, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if without_bwrap:
        monkeypatch.setattr(isolation, "BWRAP", "bwrap-that-is-not-installed")
        monkeypatch.setattr(isolation, "_probed", {})
    (tmp_path / "pools_found.py").write_text(python_module("fork_no_incref", POOLS_FOUND))
    seen = {}
    with Sandbox() as box, served(str(tmp_path / "pools_found.py"), sandbox=box) as remote:
        earlier = remote()
        earlier.llm_init(BIG_POOL)  # an earlier program's window, in the process the grading loaded
        seen["loaded"] = found(remote.child)
        graded = remote()
        aside = Aside(graded, remote.apart)  # the graded run's first process: a fresh one
        engine = graded.llm_init(640)
        seen["graded"] = found(remote.child)
        with closing(aside.fresh()) as witness:  # the graded run's process ended first
            witness.llm_init(BIG_POOL)
            seen["witness"] = found(remote.child)
        aside.resumed(engine, [Call("llm_init", (640,), False, True)])  # the graded run's replay after the witness
        seen["replay"] = found(remote.child)
        with closing(remote.apart()) as apart:  # a second child's process
            apart.llm_init(640)
            seen["apart"] = found(apart.child)
    assert seen == {name: f"POOLS [({POOLS_FD}, 0)]" for name in ("loaded", "graded", "witness", "replay", "apart")}
