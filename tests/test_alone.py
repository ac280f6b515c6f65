"""oracle/hw3/alone.py through run.py, on real processes (a Python submission served in the sandbox, a C
submission's driver): a graded run starts in a fresh process, its process is ended before each second opinion
starts, and it goes on after one in a fresh process that replays its calls, where its later calls are judged."""

from pathlib import Path

from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from oracle.hw3.c.stray import Watch, named
from oracle.hw3.pyremote import served
from oracle.hw3.resync import TrackedModel
from oracle.hw3.run import run
from oracle.program import Program, Step
from tests.conftest import REFERENCE_C
from tests.test_tamper_review import python_module

# a parent of two blocks forked, the child's append (in place when the fork took no reference: a second opinion on
# the fork), then calls after it
FORKED = (Step("llm_init", (640,)), Step("create_sequence", (1, 20)), Step("append_kv", (1, 7)),
          Step("fork_sequence", (1, 2)), Step("append_kv", (2, 8)), Step("free_sequence", (2,)),
          Step("create_sequence", (3, 16)))


def test_a_python_runs_process_is_ended_for_each_second_opinion_and_its_calls_replayed_after(tmp_path: Path) -> None:
    (tmp_path / "no_incref_alone.py").write_text(python_module("fork_no_incref", ""))
    with served(str(tmp_path / "no_incref_alone.py")) as remote:
        remote().llm_init(640)  # the child serves an earlier adapter: the graded run does not start in it
        started = remote.child.generation
        graded, alive = remote(), []

        def fresh():  # noqa: ANN202
            alive.append(remote.child.running)
            return remote.apart()

        trace = run(Program("forked", FORKED), graded, TrackedModel(), fresh=fresh)
        generations = remote.child.generation - started
    assert alive == [False, False]  # the fork's witness and its control, each with the graded run's process ended
    assert generations == 2  # the graded run's own fresh process, then the one that replayed its calls
    shown = trace.steps[4]
    assert shown.effects is not None and shown.effects.wrong_fork
    # the calls after it made (unjudged: the engine's state unread, and its append not the model's) and returning
    # what they must: the engine handle lives in the process that replayed the run
    assert not trace.cut and [(call.api, call.expected) for call in trace.calls[5:]] == [("free_sequence", 0),
                                                                                          ("create_sequence", True)]


FIRST_FIT_LOOP = "    for (int block = 0; block < engine->total_local_blocks; block++) {\n        if (engine->ref_count[block] == 0) {"
# first fit scans only up to free_local_blocks: the second create finds 19 of the 35 blocks it needs (a second
# opinion on its search), then a free judged on the state it leaves
FULL = (Step("llm_init", (2560,)), Step("create_sequence", (1, 16)), Step("create_sequence", (2, 560)),
        Step("free_sequence", (1,)))


def test_a_c_runs_driver_is_ended_for_each_second_opinion_and_its_calls_replayed_after(tmp_path: Path) -> None:
    text = REFERENCE_C.read_text()
    assert text.count(FIRST_FIT_LOOP) == 1
    (tmp_path / "llm_memory.c").write_text(
        text.replace(FIRST_FIT_LOOP, FIRST_FIT_LOOP.replace("engine->total_local_blocks", "engine->free_local_blocks")))
    driver = build(tmp_path, tmp_path / "cache").driver
    assert driver is not None
    graded, alive = CAdapter(driver, watch=Watch([])), []

    def fresh() -> CAdapter:
        alive.append(graded.pid)
        return CAdapter(driver)

    try:
        trace = run(Program("full", FULL), named(graded, "full"), TrackedModel(), fresh=fresh)
        generations, watched = graded.generation, graded.watch.calls
    finally:
        graded.close()
    assert alive == [None, None, None]  # the three witnesses of fresh_pool.search_failed
    assert generations == 2
    searched = trace.steps[2]
    assert searched.effects is not None and searched.effects.search_failed
    freed = trace.steps[3]
    assert not trace.cut and freed.seen is not None  # the free judged on the state the replayed driver shows
    assert len(watched) == len(FULL)  # a stray's step is numbered as in the program, the replay not counted twice
