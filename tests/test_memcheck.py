"""memcheck: the reference is clean on the whole battery; leaks, invalid accesses, invalid frees, crashes and
hangs are each named in one line, with the scenario and llm_memory.c's line."""

import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.hw3.memcheck import memcheck
from oracle.hw3.model import Model
from oracle.hw3.repro import repro_c
from oracle.hw3.scenarios import BATTERY, scenario_calls

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "engine" / "c"


def test_the_battery_reaches_every_event_the_model_names() -> None:
    source = (ROOT / "oracle" / "hw3" / "model.py").read_text()
    named = set(re.findall(r'"([a-z0-9_]+)"', source.split("# -- the six calls")[1]))
    reached: set[str] = set()
    for steps in BATTERY.values():
        model = Model()
        for api, args, null in steps:
            outcome = model.llm_init(args[0], null) if api == "llm_init" else getattr(model, api)(null, *args)
            reached.update(outcome.events)
    assert named - reached == set()


def test_reference_is_clean_on_the_whole_battery_and_an_extra_program(tmp_path: Path) -> None:
    extra = repro_c(*scenario_calls("fork_and_cow"), "none")
    start = time.monotonic()
    results = memcheck(REFERENCE, tmp_path, programs={"minimal repro": extra})
    assert time.monotonic() - start < 30
    assert [r.name for r in results] == [*BATTERY, "minimal repro"]
    for result in results:
        assert result.clean and result.summary == "no memory errors, no leaks", (result.name, result.summary, result.log)


@pytest.mark.parametrize(
    "name, scenario, summary",
    [
        ("leak_l2", "fork_and_cow", r"^definitely lost 256 bytes in 4 blocks, allocated at llm_memory\.c:\d+$"),
        ("use_after_free", "create_free_first_fit", r"^Invalid (read|write) of size 8 at llm_memory\.c:\d+"),
        ("destroy_frees_pool", "init_destroy_empty", r"^Invalid free\(\) at llm_memory\.c:\d+$"),
        ("deref_null_l1", "create_free_first_fit", r"crashed: SIGSEGV at llm_memory\.c:\d+"),
    ],
)
def test_a_memory_bug_is_named_with_its_scenario_and_line(
    name: str, scenario: str, summary: str, tmp_path: Path, submission: Callable[..., Path]
) -> None:
    (result,) = memcheck(submission("broken", name), tmp_path, scenarios=[scenario])
    assert result.name == scenario and not result.clean
    assert re.search(summary, result.summary), result.summary
    assert "ERROR SUMMARY" in result.log


def test_a_hang_is_stopped_and_the_time_is_shared_among_the_scenarios(
    tmp_path: Path, submission: Callable[..., Path]
) -> None:
    hang_in_free = submission("broken", "hang_in_free")
    start = time.monotonic()
    scenarios = ["init_destroy_empty", "create_free_first_fit", "fork_and_cow"]
    results = memcheck(hang_in_free, tmp_path, scenarios=scenarios, timeout=3)
    assert [(r.clean, r.summary) for r in results] == [
        (True, "no memory errors, no leaks"),
        (False, "timed out after 1 s"),
        (False, "timed out after 1 s"),
    ]
    assert time.monotonic() - start < 15


def test_an_extra_program_such_as_a_repro_is_checked_alone(tmp_path: Path, submission: Callable[..., Path]) -> None:
    """The machine reports a leak as a heap divergence, which a repro cannot see; valgrind on it can."""
    repro = repro_c(*scenario_calls("reinit"), "heap: expected every allocation freed", name="repro")
    (result,) = memcheck(submission("broken", "leak_l2"), tmp_path, programs={"repro.c": repro}, scenarios=[])
    assert result.name == "repro.c" and not result.clean
    assert re.fullmatch(r"definitely lost 192 bytes in 3 blocks, allocated at llm_memory\.c:\d+", result.summary)
    assert "OK: no divergence" in result.log


def test_a_logic_bug_that_stops_a_scenario_early_is_not_a_memory_error(
    tmp_path: Path, submission: Callable[..., Path]
) -> None:
    """A scenario that diverges exits at once; what the harness itself holds then must not count as a leak
    (the fork bug costs the fork items, not the memory-safety item)."""
    results = memcheck(submission("broken", "fork"), tmp_path)
    stopped = [r for r in results if "stopped at" in r.summary]
    assert stopped, [r.summary for r in results]
    assert all(r.clean for r in results), [r.summary for r in results if not r.clean]
