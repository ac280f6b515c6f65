"""memcheck: the reference is clean on the whole battery; leaks, invalid accesses, invalid frees, crashes and
hangs are each named in one line, with the scenario and llm_memory.c's line."""

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.hw3.c.build import build
from oracle.hw3.memcheck import AT_EXIT, battery_programs, memcheck
from oracle.hw3.model import Model
from oracle.hw3.programs import BATTERY, battery_program
from oracle.hw3.step import expected_calls
from tests.conftest import REFERENCE_C

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "engine" / "c"


def test_the_battery_reaches_every_event_the_model_names() -> None:
    source = (ROOT / "oracle" / "hw3" / "model.py").read_text()
    named = set(re.findall(r'"([a-z0-9_]+)"', source.split("# -- the six calls")[1]))
    reached: set[str] = set()
    for name in BATTERY:
        model = Model()
        for step in battery_program(name).steps:
            if step.op == "llm_init":
                outcome = model.llm_init(step.args[0], step.null)
            else:
                outcome = getattr(model, step.op)(step.null, *step.args)
            reached.update(outcome.events)
    assert named - reached == set()


def _driver(path: Path) -> Path:
    result = build(path)
    assert result.driver is not None, result.log
    return result.driver


def test_reference_is_clean_on_the_whole_battery_and_an_extra_program() -> None:
    programs = {**battery_programs(), "minimal repro": expected_calls(battery_program("fork_and_cow"))}
    results = memcheck(_driver(REFERENCE), programs)
    assert [r.name for r in results] == [*BATTERY, "minimal repro"]
    for result in results:
        assert result.clean and result.summary == "no memory errors, no leaks", (result.name, result.summary, result.log)


@pytest.mark.parametrize(
    "name, scenario, summary",
    [
        ("use_after_free", "create_free_first_fit", r"^Invalid (read|write) of size 8 at llm_memory\.c:\d+"),
        ("destroy_frees_pool", "init_destroy_empty", r"^Invalid free\(\) at llm_memory\.c:\d+"),  # valgrind's free saw it
        ("deref_null_l1", "create_free_first_fit", r"crashed: SIGSEGV at llm_memory\.c:\d+"),
    ],
)
def test_a_memory_bug_is_named_with_its_program_and_line(
    name: str, scenario: str, summary: str, submission: Callable[..., Path]
) -> None:
    results = memcheck(_driver(submission("broken", name)), battery_programs([scenario]))
    assert results[0].name == scenario and not results[0].clean, results
    assert re.search(summary, results[0].summary), results[0].summary


def test_a_leak_is_reported_in_the_program_that_leaked_with_where_it_was_allocated(submission: Callable[..., Path]) -> None:
    """After each program, its engine destroyed, valgrind checks the heap (the driver's 'L' request): a leak
    is that program's, and valgrind says where the lost blocks were allocated."""
    results = memcheck(_driver(submission("broken", "leak_l2")), battery_programs(["init_destroy_empty", "fork_and_cow", "reinit"]))
    assert [r.name for r in results][:3] == ["init_destroy_empty", "fork_and_cow", "reinit"]
    assert results[0].clean, results[0]
    assert re.fullmatch(r"definitely lost \d+ bytes in \d+ blocks, allocated at llm_memory\.c:\d+", results[1].summary)


def test_a_block_still_reachable_with_no_engine_is_a_leak(tmp_path: Path) -> None:
    """A block the submission keeps a pointer to (a global) is no loss to valgrind's leak kinds, but with no
    engine live nothing may stay allocated: valgrind's leak check counts it."""
    source = REFERENCE_C.read_text().replace("LLMEngine *llm_init(void *pool_addr, size_t pool_size)\n{",
                                             "void *kept_forever;\nLLMEngine *llm_init(void *pool_addr, size_t pool_size)\n{\n"
                                             "    kept_forever = malloc(24);", 1)
    assert "kept_forever = malloc" in source
    (tmp_path / "llm_memory.c").write_text(source)
    results = memcheck(_driver(tmp_path / "llm_memory.c"), battery_programs(["init_destroy_empty"]))
    assert not results[0].clean and "still allocated (reachable) with no engine live" in results[0].summary, results[0]


def test_a_hang_is_stopped_and_the_next_program_runs_in_a_fresh_process(submission: Callable[..., Path]) -> None:
    """A call that never returns is no memory error (its own item judges it): that program stops there,
    unjudged past it, with the call it stopped at; the next program runs in a fresh process, and after a
    second hang the programs after it are not run (each would wait as long)."""
    programs = battery_programs(["init_destroy_empty", "create_free_first_fit", "reinit", "fork_and_cow", "null_engine"])
    results = memcheck(_driver(submission("broken", "hang_in_free")), programs, timeout=1)
    stopped = "step 5 free_sequence(engine, 1): hung"
    assert [(r.name, r.clean, r.summary, r.stopped) for r in results][:2] == [
        ("init_destroy_empty", True, "no memory errors, no leaks", None),
        ("create_free_first_fit", True, f"no memory errors, no leaks (the program stopped at {stopped})", stopped),
    ]
    assert str(results[1].stopped_at) == "free_sequence(engine, 1)"
    assert results[2].name == "reinit" and results[2].clean and results[2].stopped is None, results[2]
    assert results[3].name == "fork_and_cow" and (results[3].stopped or "").endswith("hung"), results[3]
    assert "null_engine" not in [r.name for r in results]


def test_what_the_submission_prints_decides_nothing(submission: Callable[..., Path]) -> None:
    """A submission printing valgrind-like lines on stdout cannot fake or hide a verdict: valgrind's log goes
    to a descriptor of ours."""
    results = memcheck(_driver(submission("broken", "use_after_free")), battery_programs(["create_free_first_fit"]))
    assert not results[0].clean


def test_a_logic_bug_that_stops_a_program_early_is_not_a_memory_error(submission: Callable[..., Path]) -> None:
    """A program that diverges stops at once; the fork bug costs the fork items, not the memory-safety item."""
    results = memcheck(_driver(submission("broken", "fork")), battery_programs())
    stopped = [r for r in results if "stopped at" in r.summary]
    assert stopped, [r.summary for r in results]
    assert all(r.clean for r in results), [r.summary for r in results if not r.clean]
