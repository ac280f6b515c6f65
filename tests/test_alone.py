"""oracle/hw3/alone.py through run.py, on real processes (a Python submission served in the sandbox, a C
submission's driver): a graded run starts in a fresh process, its process is ended before each second opinion,
which runs in a fresh process of the graded run's own adapter, and it goes on after one in a fresh process that
replays its calls, where its later calls are judged."""

import re
from contextlib import closing
from pathlib import Path

import pytest

from oracle import isolation
from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from oracle.hw3.c.stray import Watch, named
from oracle.hw3.pyremote import served
from oracle.hw3.resync import TrackedModel
from oracle.hw3.run import run
from oracle.program import Program, Step
from oracle.sandbox import Sandbox
from tests.conftest import REFERENCE_C, seeded_build_cache
from tests.test_fresh_pool import FIRST_FIT_LOOP
from tests.tamper_grading import python_module

# a parent of two blocks forked, the child's append (in place when the fork took no reference: the graded run's own
# evidence), then the child freed and a create of more blocks than are free (granted when the fork took no reference:
# the program's own evidence of its references, which the graded run's own process makes ahead, graded_calls.py)
FORKED = (Step("llm_init", (640,)), Step("create_sequence", (1, 20)), Step("append_kv", (1, 7)),
          Step("fork_sequence", (1, 2)), Step("append_kv", (2, 8)), Step("free_sequence", (2,)),
          Step("create_sequence", (3, 144)))
WITNESS_NOT_ALONE = Path(__file__).with_name("hostile_review5") / "witness_not_alone.py"


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_python_runs_fork_is_judged_in_its_own_process_alone(
        without_bwrap: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On fork_no_incref with witness_not_alone's act: a process that finds another of the submission alive (an
    abstract unix name taken, which outside bubblewrap every run shares) forks correctly. The fork is shown wrong
    by the graded run's own process, the one started fresh for it, and no other."""
    if without_bwrap:
        monkeypatch.setattr(isolation, "BWRAP", "bwrap-that-is-not-installed")
        monkeypatch.setattr(isolation, "_probed", {})
    attack = WITNESS_NOT_ALONE.read_text().replace("@PORT@", f"alone-{tmp_path.name}")
    (tmp_path / "no_incref_alone.py").write_text(python_module("fork_no_incref", attack))
    with Sandbox() as box, served(str(tmp_path / "no_incref_alone.py"), sandbox=box) as remote:
        remote().llm_init(640)  # the child serves an earlier adapter: the graded run does not start in it
        started = remote.child.generation
        trace = run(Program("forked", FORKED), remote(), TrackedModel(), fresh=remote)
        generations = remote.child.generation - started
    # the graded run's fresh process alone: the append in place and the later calls are its own (fork_witness.py),
    # made ahead of the judging (graded_calls.py); once a second opinion and the graded run's replay after it
    assert generations == 1
    shown = trace.steps[4]
    assert shown.effects is not None and shown.effects.wrong_fork
    # the calls after it made (unjudged: the engine's state unread, and its append not the model's) and returning
    # what they returned when made ahead: the create granted, as a fork without references grants it
    assert not trace.cut and [(call.api, call.expected) for call in trace.calls[5:]] == [("free_sequence", 0),
                                                                                          ("create_sequence", True)]


# first fit scans only up to free_local_blocks: the second create finds 19 of the 35 blocks it needs (a second
# opinion on its search), then a free judged on the state it leaves
FULL = (Step("llm_init", (2560,)), Step("create_sequence", (1, 16)), Step("create_sequence", (2, 560)),
        Step("free_sequence", (1,)))


def test_a_c_runs_driver_is_ended_for_each_second_opinion_and_its_calls_replayed_after(tmp_path: Path) -> None:
    text = REFERENCE_C.read_text()
    assert text.count(FIRST_FIT_LOOP) == 1
    (tmp_path / "llm_memory.c").write_text(
        text.replace(FIRST_FIT_LOOP, FIRST_FIT_LOOP.replace("engine->total_local_blocks", "engine->free_local_blocks")))
    driver = build(tmp_path, seeded_build_cache(tmp_path / "cache")).driver
    assert driver is not None
    graded = CAdapter(driver, watch=Watch([]))
    try:
        trace = run(Program("full", FULL), named(graded, "full"), TrackedModel(), fresh=lambda: CAdapter(driver))
        generations, watched = graded.generation, graded.watch.calls
    finally:
        graded.close()
    assert generations == 5  # the graded run, the three witnesses of fresh_pool.search_failed, the replay
    searched = trace.steps[2]
    assert searched.effects is not None and searched.effects.search_failed
    freed = trace.steps[3]
    assert not trace.cut and freed.seen is not None  # the free judged on the state the replayed driver shows
    assert len(watched) == len(FULL)  # a stray's step is numbered as in the program, the replay not counted twice


# what a process of the submission can read of what the grader handed it: its folder, its command line (the
# server's path, its descriptors' numbers), its descriptors (each open number and its kind: no /proc/self/fd to list,
# proc-mem), its environment
FINGERPRINT = ("import os as _os, stat as _stat, sys as _sys\n"
               "def _fds():\n"
               "    found = []\n"
               "    for fd in range(1024):\n"
               "        try:\n"
               "            found.append((fd, _stat.S_IFMT(_os.fstat(fd).st_mode)))\n"
               "        except OSError:\n"
               "            pass\n"
               "    return found\n"
               "print('FINGERPRINT', _os.getcwd(), __file__, _sys.argv, _fds(),\n"
               "      sorted(_os.environ.items()), file=_sys.stderr, flush=True)\n")


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_witness_is_handed_what_the_graded_runs_first_process_was(without_bwrap: bool, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle.hw3.alone import Aside

    if without_bwrap:
        monkeypatch.setattr(isolation, "BWRAP", "bwrap-that-is-not-installed")
        monkeypatch.setattr(isolation, "_probed", {})
    (tmp_path / "fingerprinted.py").write_text(python_module("fork_no_incref", FINGERPRINT))
    with Sandbox() as box, served(str(tmp_path / "fingerprinted.py"), sandbox=box) as remote:
        graded = remote()
        aside = Aside(graded, remote)
        graded.llm_init(640)
        first = remote.child.output(0)  # what it printed since it started, at import first
        with closing(aside.fresh()) as witness:
            witness.llm_init(640)
            second = witness.child.output(0)
    assert first.count("FINGERPRINT") == 1 and first == second


C_FINGERPRINT = r'''
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>

static void fingerprint(void) {
    /* no /proc/self/cmdline or /proc/self/fd to read (proc-mem): each open descriptor's number, kind and access */
    fprintf(stderr, "FINGERPRINT TMPDIR=%s fds=", getenv("TMPDIR") ? getenv("TMPDIR") : "");
    for (int fd = 0; fd < 1024; fd++) {
        struct stat st;
        if (fstat(fd, &st) == 0)
            fprintf(stderr, "%d:%o:%d,", fd, (unsigned)(st.st_mode >> 12), fcntl(fd, F_GETFL) & O_ACCMODE);
    }
    fprintf(stderr, "\n");
}

LLMEngine *llm_init(void *pool_addr, size_t pool_size) {
    fingerprint();
    return reference_llm_init(pool_addr, pool_size);
}
'''


@pytest.mark.parametrize("without_bwrap", [False, True], ids=["bubblewrap", "fallback"])
def test_a_c_witness_is_handed_what_the_graded_runs_first_driver_was(without_bwrap: bool, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from oracle.hw3.alone import Aside

    if without_bwrap:
        monkeypatch.setattr(isolation, "BWRAP", "bwrap-that-is-not-installed")
        monkeypatch.setattr(isolation, "_probed", {})
    reference = REFERENCE_C.read_text().replace("LLMEngine *llm_init(void *pool_addr",
                                                "static LLMEngine *reference_llm_init(void *pool_addr")
    (tmp_path / "llm_memory.c").write_text(reference + C_FINGERPRINT)
    with Sandbox() as box:
        driver = build(tmp_path, seeded_build_cache(tmp_path / "cache"), box).driver
        assert driver is not None
        graded = CAdapter(driver, sandbox=box)
        try:
            aside = Aside(graded, lambda: CAdapter(driver, sandbox=box))
            graded.llm_init(640)
            first = graded.output
            with closing(aside.fresh()) as witness:
                witness.llm_init(640)
                second = witness.output
        finally:
            graded.close()
    # without bwrap each run's $TMPDIR is its own, named at random (no count of runs in it)
    first, second = (re.sub(r"/tmp[^/ ]*-tmp ", "/<random>-tmp ", text) for text in (first, second))
    assert first.count("FINGERPRINT") == 1 and first == second
