"""Every process of a Python submission is handed a pools' memory file made for it (oracle/hw3/pyremote.py), held
at one descriptor number (pyserve.POOLS_FD): what a process finds there at import, its size and its number, is the
same for a graded run's first process, one after earlier programs' windows, a second opinion's (alone.py's Witness,
the graded run's own child started afresh) and the graded run's replay after it. Real processes: the submission served in the sandbox,
with and without bubblewrap."""

from contextlib import closing
from pathlib import Path

import pytest

from oracle import isolation
from oracle.hw3.alone import Aside
from oracle.hw3.call import Call
from oracle.child import PythonChild
from oracle.hw3.pyremote import served
from oracle.hw3.pyserve import POOLS_FD
from oracle.sandbox import Sandbox
from tests.conftest import seeded_build_cache
from tests.tamper_grading import python_module

# what a process finds at import: each descriptor naming the grader's pools' file, with the file's size
# (a memory file: one that takes seals; a run has no /proc/self/fd to read its name from, proc-mem)
POOLS_FOUND = ("import fcntl as _fcntl, os as _os, sys as _sys\n"
               "def _pools_found():\n"
               "    found = []\n"
               "    for fd in range(1024):\n"
               "        try:\n"
               "            _fcntl.fcntl(fd, _fcntl.F_GET_SEALS)\n"
               "            found.append((fd, _os.fstat(fd).st_size))\n"
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
        aside = Aside(graded, remote)  # the graded run's first process: a fresh one
        engine = graded.llm_init(640)
        seen["graded"] = found(remote.child)
        with closing(aside.fresh()) as witness:  # the graded run's process ended first
            witness.llm_init(BIG_POOL)
            seen["witness"] = found(remote.child)
        aside.resumed(engine, [Call("llm_init", (640,), False, True)])  # the graded run's replay after the witness
        seen["replay"] = found(remote.child)
    assert seen == {name: f"POOLS [({POOLS_FD}, 0)]" for name in ("loaded", "graded", "witness", "replay")}


# A C submission's driver: no code runs before its first call (the build refuses constructors), but at llm_init the
# pools' file it was handed can be found in /proc/self/fd and measured. Each llm_init prints that size.
C_POOLS_SIZE = r'''
static void pools_size(void) {
    long size = -1; /* the memory file's (the one taking seals: no /proc/self/fd to read its name, proc-mem) */
    for (int fd = 3; fd < 1024; fd++) {
        struct stat st;
        if (fcntl(fd, F_GET_SEALS) >= 0 && fstat(fd, &st) == 0) size = (long)st.st_size;
    }
    fprintf(stderr, "POOLS %ld\n", size);
}

LLMEngine *llm_init(void *pool_addr, size_t pool_size) {
    pools_size();
    return reference_llm_init(pool_addr, pool_size);
}
'''
# Once broken: a C submission's adapter (c/adapter.py CAdapter) kept one memory file of pools for every driver it
# started, the graded run's first, its second opinions' (alone.py's Witness) and its replay, clearing the windows
# by punching holes; sealed against shrinking, the file kept the size the graded run's windows gave it (1048704 bytes
# after a 1 MiB pool, measured), so a witness's first llm_init could tell it was no graded run's first driver (768
# bytes for a 640-byte pool). Held by construction: each driver starts with a file of its own at the same
# descriptor number (PoolFile.renew, by oracle/handed.py at each start), as each Python process does.
def test_a_c_witness_driver_finds_a_pools_file_no_earlier_driver_grew(tmp_path: Path) -> None:
    from oracle.hw3.c.adapter import CAdapter
    from oracle.hw3.c.build import build
    from oracle.hw3.pool import GUARD_SIZE
    from tests.conftest import REFERENCE_C

    reference = REFERENCE_C.read_text().replace("LLMEngine *llm_init(void *pool_addr",
                                                "static LLMEngine *reference_llm_init(void *pool_addr")
    includes = "".join(f"#include <{header}>\n" for header in ("fcntl.h", "stdio.h", "stdlib.h", "string.h",
                                                                  "sys/stat.h", "unistd.h"))
    includes = "#define _GNU_SOURCE\n" + includes
    (tmp_path / "llm_memory.c").write_text(includes + reference + C_POOLS_SIZE)
    with Sandbox() as box:
        driver = build(tmp_path, seeded_build_cache(tmp_path / "cache"), box).driver
        assert driver is not None
        graded = CAdapter(driver, sandbox=box)
        try:
            aside = Aside(graded, lambda: CAdapter(driver, sandbox=box))
            graded.llm_init(BIG_POOL)
            first = graded.output
            with closing(aside.fresh()) as witness:
                witness.llm_init(640)
                second = witness.output
        finally:
            graded.close()
    assert first == f"POOLS {BIG_POOL + 2 * GUARD_SIZE}\n"  # a driver's first window, at the start of a new file
    assert second == f"POOLS {640 + 2 * GUARD_SIZE}\n"
