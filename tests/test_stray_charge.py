"""hw3/stray_charge.py with c/stray.py's values, without processes: a stray access the grader counted while any
item's check ran fails memory_safety (when it passed), once, naming the program, step and call in C terms; the
item whose run it was keeps its own verdict, and it is never said to be why an item was not run."""

from types import SimpleNamespace
from typing import Any, Callable, Mapping

from oracle.grading.grader import Check, Incomplete, NotRun, Outcome, run_checks
from oracle.grading.report import ItemResult
from oracle.grading.rubric import Rubric, RubricItem
from oracle.hw3.c.stray import Stray, Watch, c_call, named
from oracle.hw3.rules import MEMORY_SAFETY
from oracle.hw3.stray_charge import charging

CAP = Stray("create_sequence_cap", 2, ("llm_init(pool, 19200)", "create_sequence(engine, 1, 4097)"), 1)
SAID = ("create_sequence_cap, step 2, create_sequence(engine, 1, 4097): natively, a read or write outside any live "
        "heap block, or a free of a pointer that is none (1 page(s) of guard or freed memory touched: a heap overflow, "
        "a use after free or a double free) "
        f"[rule: {MEMORY_SAFETY}]")
Run = Callable[[Any, Mapping[str, Any]], Outcome]


def meeting(stray: Stray | None, then: Callable[[], Outcome]) -> Run:
    """A check whose runs met `stray` (the grader counted it), then ended as `then` ends."""
    def run(sub: Any, options: Mapping[str, Any]) -> Outcome:
        if stray is not None:
            sub.strays.append(stray)
        return then()
    return run


def passes() -> Outcome:
    return Outcome(True)


def own_bug() -> Outcome:
    return Outcome(False, "create_sequence_cap: step 2 create_sequence(engine, 1, 4097): return value: expected NULL, "
                          "got a Sequence")


def stopped() -> Outcome:
    raise NotRun("could not check its rule past fork's bug (that is item fork's to judge)")


def cut_short() -> Outcome:
    raise Incomplete("stopped at the time limit")


def grade(checks: dict[str, Run]) -> dict[str, ItemResult]:
    table = {name: Check(name, MEMORY_SAFETY if name == "memory_safety" else f"rule {name}", charging(run))
             for name, run in checks.items()}
    rubric = Rubric("t", tuple(RubricItem(name, name, 5) for name in checks), "code")
    return {result.id: result for result in run_checks(table, rubric, SimpleNamespace(strays=[]))}


def test_a_request_is_named_as_the_c_call_it_makes() -> None:
    assert c_call("I", 19200, 7, 0) == "llm_init(pool, 19200)"
    assert c_call("I", 64, 7, 1) == "llm_init(NULL, 64)"
    assert c_call("C", 0x5000, 1, 4097) == "create_sequence(engine, 1, 4097)"
    assert c_call("F", 0, 1, 2) == "fork_sequence(NULL, 1, 2)"
    assert c_call("A", 0x5000, 3, -1) == "append_kv(engine, 3, -1)"
    assert c_call("R", 0x5000, 3, 0) == "free_sequence(engine, 3)"
    assert c_call("D", 0x5000, 0, 0) == "llm_destroy(engine)"


def test_a_watch_notes_only_a_call_after_which_the_count_grew_numbered_in_its_program() -> None:
    strays: list[Stray] = []
    watch = Watch(strays)
    adapter = SimpleNamespace(watch=watch)
    watch.calling("I", 99, 0, 0)  # calls before the program is named are not its steps
    named(adapter, "create_sequence_cap")
    watch.calling("I", 19200, 7, 0)
    watch.counted(0, 0)
    watch.calling("C", 0x5000, 1, 4097)
    watch.counted(0, 1)
    watch.calling("C", 0x5000, 1, 4096)
    watch.counted(1, 1)
    assert strays == [CAP]
    assert strays[0].where == "create_sequence_cap, step 2, create_sequence(engine, 1, 4097)"


def test_a_watch_notes_the_first_stray_of_each_program_only() -> None:
    strays: list[Stray] = []
    adapter = SimpleNamespace(watch=Watch(strays))
    for program in ("one", "two"):
        named(adapter, program)
        for pages in range(3):
            adapter.watch.calling("D", 0x5000, 0, 0)
            adapter.watch.counted(pages, pages + 1)
    assert [(stray.program, stray.step) for stray in strays] == [("one", 1), ("two", 1)]


def test_an_adapter_without_a_watch_is_left_as_it_is() -> None:
    adapter = object()
    assert named(adapter, "p") is adapter


def test_a_stray_in_an_item_that_failed_of_its_own_fails_memory_safety_too_and_costs_that_item_nothing_more() -> None:
    results = grade({"create_free": meeting(CAP, own_bug), "memory_safety": meeting(None, passes)})
    assert (results["create_free"].status, results["create_free"].message) == ("failed", own_bug().message)
    assert (results["memory_safety"].status, results["memory_safety"].points) == ("failed", 0)
    assert results["memory_safety"].message == SAID + " (found by item create_free's programs, not this item's)"
    assert "  2  create_sequence(engine, 1, 4097)   <-- here" in results["memory_safety"].details
    assert "create_sequence(engine, 1, 4097);  /* <-- here */" in results["memory_safety"].student


def test_a_stray_in_an_item_that_passed_leaves_it_passed() -> None:
    results = grade({"fork": meeting(CAP, passes), "memory_safety": meeting(None, passes)})
    assert (results["fork"].status, results["fork"].points) == ("passed", 5)
    assert results["memory_safety"].status == "failed"


def test_memory_safety_is_charged_once_whichever_item_met_it_first_in_rubric_order() -> None:
    later = Stray("fuzz", 7, ("llm_init(pool, 64)",) * 7, 2)
    results = grade({"fork": meeting(CAP, passes), "fuzz": meeting(later, passes), "memory_safety": meeting(None, passes)})
    assert [results[i].status for i in ("fork", "fuzz", "memory_safety")] == ["passed", "passed", "failed"]
    assert results["memory_safety"].message.startswith("create_sequence_cap, step 2")


def test_memory_safety_run_before_the_item_that_met_the_stray_is_charged_all_the_same() -> None:
    results = grade({"memory_safety": meeting(None, passes), "alloc_failure": meeting(CAP, passes)})
    assert results["memory_safety"].status == "failed"
    assert results["alloc_failure"].status == "passed"


def test_memory_safety_failed_of_its_own_keeps_its_own_failure() -> None:
    results = grade({"create_free": meeting(CAP, passes),
                     "memory_safety": meeting(None, lambda: Outcome(False, "valgrind: 1 error"))})
    assert results["memory_safety"].message == "valgrind: 1 error"
    assert results["create_free"].status == "passed"


def test_without_memory_safety_in_the_rubric_the_stray_costs_no_item() -> None:
    assert grade({"create_free": meeting(CAP, passes), "fork": meeting(None, passes)})["create_free"].status == "passed"


def test_a_stray_met_by_an_item_not_run_is_charged_but_never_named_as_why_it_did_not_run() -> None:
    results = grade({"l1_traversal": meeting(CAP, stopped), "memory_safety": meeting(None, passes)})
    assert results["memory_safety"].status == "failed"
    assert results["l1_traversal"].status == "not_run"
    assert '"memory_safety"' not in results["l1_traversal"].student


def test_a_stray_met_by_an_item_cut_short_is_charged() -> None:
    results = grade({"fuzz": meeting(CAP, cut_short), "memory_safety": meeting(None, passes)})
    assert (results["fuzz"].status, results["memory_safety"].status) == ("incomplete", "failed")


def test_memory_safety_that_met_a_stray_in_its_own_runs_and_stopped_fails() -> None:
    assert grade({"memory_safety": meeting(CAP, stopped)})["memory_safety"].status == "failed"


def test_a_check_whose_runs_met_no_stray_is_returned_as_it_ran() -> None:
    ran = Outcome(True, "a note")
    assert charging(lambda sub, options: ran)(SimpleNamespace(strays=[CAP]), {}) is ran
