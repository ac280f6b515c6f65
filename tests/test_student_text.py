"""What a student reads stands alone and speaks C: a Gradescope run in the simulated /autograder tree on a
one-bug submission puts the failing call as C, expected beside actual and the repro's source in results.json,
with none of the grader's internals; one numbering of calls holds in the message, the call list, the repro and
the HTML page; a leak's repro, built and run, fails naming where each leaked block was allocated."""

import json
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from oracle.cli import main
from oracle.grading.report import GradeReport, ItemResult
from oracle.grading.table import render
from oracle.hw3.c.build import OFFICIAL_FLAGS
from oracle.hw3.grade import grade, load
from tests.test_grade import REFERENCE, small_rubric

ITEMS = ["compiles", "fork", "append_cow", "free_count", "tail_insertion", "fuzz"]
# What a student must never read: our packages and machine steps, notes between items, item ids, paths.
FORBIDDEN = ["from oracle", "oracle.hw3", "load_adapter", "HW3Machine", "state = ", "blind_call",
             "create_filling_pool", "branch(", "teardown", "not checked past", "read past", "to judge", "White-box probe",
             "/autograder", "[rule:", "item append_cow", "append_cow's", "Hypothesis", "/tmp/"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory, submission: Callable[..., Path]) -> Iterator[dict[str, Any]]:
    """broken/append_cow graded by a Gradescope bundle in a simulated /autograder tree."""
    home = tmp_path_factory.mktemp("student-text")
    rubric = small_rubric(home / "rubric.toml", ITEMS)
    rubric.write_text(rubric.read_text().replace("examples = 30", "examples = 120"))  # enough to find the bug
    zipped = home / "autograder.zip"
    assert main(["gradescope-bundle", str(zipped), "--rubric", str(rubric), "--time-limit", "300"]) == 0
    root = home / "autograder"
    assert main(["gradescope-run", str(zipped), str(submission("broken", "append_cow")), "--root", str(root)]) == 0
    results = root / "results"
    yield {"results": json.loads((results / "results.json").read_text()), "root": root,
           "report": json.loads((results / "report.json").read_text()),
           "html": next(results.rglob("report.html")).read_text()}


def _test(results: dict[str, Any], name_part: str) -> dict[str, Any]:
    return next(t for t in results["tests"] if name_part in t["name"])


def test_results_json_holds_the_c_calls_expected_beside_actual_and_the_repro_source(graded) -> None:
    append_cow = _test(graded["results"], "Task 4")
    text = append_cow["output"]
    assert append_cow["output_format"] == "md" and append_cow["score"] == 0
    assert "**Call 7** `append_kv(engine, 2, 10)`" in text
    assert "pool block 2 slot 2 (byte 136): expected -1640133006, got -2118833790" in text
    assert "/*   2 */ create_sequence(engine, 1, 14);" in text and "/*   6 */ fork_sequence(engine, 1, 2);" in text
    source = text[text.index("```c\n/* pagedcheck repro"):]
    assert '#include "llm_memory.c"' in source and "int main(void)" in source and source.rstrip().endswith("```")
    assert "repro-append_cow.c -o repro-append_cow && ./repro-append_cow" in text


def test_nothing_a_student_reads_names_the_graders_internals(graded) -> None:
    results = graded["results"]
    texts = [results["output"], *(t["output"] for t in results["tests"])]
    found = [(word, text[:80]) for text in texts for word in FORBIDDEN if word in text]
    assert found == []
    assert str(graded["root"]) not in json.dumps(results)
    # the items that read past the bug say nothing to a student: the bug is reported once, by its own item
    assert [t["name"] for t in results["tests"] if t["output"]] == [
        t["name"] for t in results["tests"] if t["status"] == "failed"]
    # the staff's report keeps the detail
    staff = {item["id"]: item for item in graded["report"]["items"]}
    assert "read past" in staff["fork"]["message"] and "state = " in staff["fuzz"]["program"]


@pytest.mark.parametrize("name_part", ["Task 4", "fuzzing"])
def test_one_numbering_of_calls_in_message_list_repro_and_page(graded, name_part: str) -> None:
    test = _test(graded["results"], name_part)
    text = test["output"]
    number = int(re.search(r"\*\*Call (\d+)\*\*", text).group(1))
    marked = [int(m) for m in re.findall(r"/\* +(\d+) \*/ .*<-- went wrong here", text)]
    assert marked == [number]
    assert f"`break step_{number}`" in text and f"check_state({number}, &expected);" in text
    assert f"static void step_{number}(void)" in text or re.search(rf"steps_\d+_to_{number}\b", text)
    item = next(i for i in graded["report"]["items"] if i["name"] == test["name"])
    assert f": step {number} " in item["message"]
    section = graded["html"][graded["html"].index(f"<h2>{test['name']}</h2>"):]
    assert re.search(rf'<li value="{number}" class="failing">', section)
    assert f"Right after call {number}:" in section


def test_a_leaks_repro_fails_naming_where_each_block_was_allocated(tmp_path: Path, submission) -> None:
    broken = submission("broken", "llm_destroy")
    rubric = small_rubric(tmp_path / "rubric.toml", ["llm_destroy"])
    report = grade(str(broken), load(rubric), tmp_path / "out")
    (item,) = report.items
    assert item.status == "failed" and "heap: expected every allocation freed, got 3 block(s)" in item.message
    source = (tmp_path / "out" / "llm_memory.c")
    shutil.copyfile(broken / "llm_memory.c", tmp_path / "out" / "llm_memory.c")
    shutil.copyfile(REFERENCE / "llm_memory.h", tmp_path / "out" / "llm_memory.h")
    lines = source.read_text().splitlines()
    site = next(n for n, line in enumerate(lines, 1) if "Sequence *seq = malloc(sizeof *seq);" in line)
    built = subprocess.run(["gcc", *OFFICIAL_FLAGS, "repro-llm_destroy.c", "-o", "repro"], cwd=tmp_path / "out",
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run(["./repro"], cwd=tmp_path / "out", capture_output=True, text=True, timeout=30)
    assert ran.returncode == 1
    assert ran.stdout.startswith("after step 9: heap: expected every allocation freed, got 3 block(s) (120 bytes) still live")
    assert re.findall(r"40 bytes allocated at (llm_memory\.c:\d+)", ran.stdout) == [f"llm_memory.c:{site}"] * 3
    assert "OK: no divergence" not in ran.stdout
    assert "repro-llm_destroy.c" in item.student and "the line of your llm_memory.c that allocated it" in item.student


def test_the_reference_repro_counting_the_heap_passes(tmp_path: Path) -> None:
    from oracle.hw3.repro import build_repro, repro_c
    from oracle.hw3.programs import battery_program
    from oracle.hw3.step import expected_calls

    calls, model = expected_calls(battery_program("destroy_with_shared_blocks"))
    binary, output = build_repro(repro_c(calls, model, "none"), REFERENCE, tmp_path)
    assert binary is not None, output
    ran = subprocess.run([str(binary)], capture_output=True, text=True, timeout=30)
    assert (ran.returncode, ran.stdout) == (0, "OK: no divergence\n")


def test_memory_safety_names_where_the_leaked_blocks_were_allocated(tmp_path: Path, submission) -> None:
    broken = submission("broken", "llm_destroy")
    report = grade(str(broken), load(small_rubric(tmp_path / "rubric.toml", ["memory_safety"])), tmp_path / "out")
    (item,) = report.items
    assert item.status == "failed"
    assert re.search(r"still allocated with no engine, allocated at llm_memory\.c:\d+", item.message)
    assert re.search(r"allocated at llm_memory\.c:\d+", item.for_student(10_000))


def test_the_terminal_table_wraps_a_long_note_at_spaces_and_never_cuts_a_word() -> None:
    message = "free_count: step 12 free_sequence(engine, 1): " + " ".join(f"word{n}" for n in range(60))
    item = ItemResult("free_count", "Constraint 5: free block consistency", "Constraint 5", "failed", 0, 5, "visible",
                      message=message)
    text = render(GradeReport("hw3", "alice", "c", "r", "r.toml", 1, [item]), width=100)
    row = text.splitlines().index(next(line for line in text.splitlines() if line.startswith("  Constraint 5")))
    wrapped = []
    for line in text.splitlines()[row + 1:]:
        if not line.startswith("      "):
            break
        assert len(line) <= 100
        wrapped.append(line.strip())
    assert " ".join(wrapped) == message.removeprefix("free_count: ")  # every word whole, in order, none dropped


def _two_items(first: Callable[..., Any], second: Callable[..., Any]) -> list[ItemResult]:
    from oracle.grading.grader import Check, run_checks
    from oracle.grading.rubric import Rubric, RubricItem

    checks = {"alpha": Check("alpha", "Rule A", first), "beta": Check("beta", "Rule B", second)}
    rubric = Rubric("t", (RubricItem("alpha", "Part A: appending", 5), RubricItem("beta", "Part B: freeing", 5)), "t.toml")
    return run_checks(checks, rubric, None)


def test_an_item_stopped_by_another_items_bug_says_so_once_naming_that_part() -> None:
    from oracle.grading.grader import Excuse, NotRun, Outcome, Seen

    def stopped(context: Any, options: Any) -> Outcome:
        raise NotRun("could not check its rule past program_x step 3 ...: boom (that is item alpha's to judge)",
                     Excuse(frozenset({"alpha"}), Seen("program_x: step 3 ...: boom")))

    alpha, beta = _two_items(lambda context, options: Outcome(False, "alpha's own bug"), stopped)
    assert beta.status == "not_run" and "item alpha" in beta.message  # the staff's words keep the detail
    assert beta.for_student(10_000) == ('Not graded: every test of this part first ran into the bug reported under '
                                        '"Part A: appending". Fix that bug, and this part is graded.')


def test_a_bug_charged_to_the_item_that_missed_it_says_whose_tests_found_it() -> None:
    from oracle.grading.grader import Excuse, Outcome, Seen

    def read_past(context: Any, options: Any) -> Outcome:
        return Outcome(True, "not checked past ... (that is item alpha's to judge)",
                       excuse=Excuse(frozenset({"alpha"}), Seen("seen", student="**Call 3** went wrong.")))

    alpha, beta = _two_items(lambda context, options: Outcome(True), read_past)
    assert (alpha.status, beta.status) == ("failed", "passed") and "found by item beta's programs" in alpha.message
    assert alpha.for_student(10_000) == '**Call 3** went wrong.\n\n(Found by the tests of "Part B: freeing".)'
    assert beta.for_student(10_000) == ""


def test_prairielearn_output_is_the_students_text_as_plain_text(tmp_path: Path, submission) -> None:
    rubric = small_rubric(tmp_path / "rubric.toml", ["fork", "append_cow"])
    results = tmp_path / "results.json"
    assert main(["grade", str(submission("broken", "append_cow")), "--rubric", str(rubric), "-q",
                 "--prairielearn", str(results)]) == 1
    tests = {t["name"]: t for t in json.loads(results.read_text())["tests"]}
    append_cow = tests["Task 4: append_kv with copy-on-write"]
    assert append_cow["message"].startswith("Call 7 append_kv(engine, 2, 10): right after it, pool block 2 slot 2")
    assert "/*   7 */ append_kv(engine, 2, 10);" in append_cow["output"] and "```" not in append_cow["output"]
    assert tests["Task 3: fork_sequence"]["output"] == ""  # it read past the bug: that is for the staff
    text = json.dumps(tests)
    assert [word for word in FORBIDDEN if word in text] == []


def test_a_submission_whose_names_clash_with_the_harness_gets_the_two_file_repro(tmp_path: Path, submission) -> None:
    (tmp_path / "sub").mkdir()
    text = (submission("broken", "append_cow") / "llm_memory.c").read_text()
    (tmp_path / "sub" / "llm_memory.c").write_text("int pool_size = 0; /* the repro's harness has one too */\n" + text)
    report = grade(str(tmp_path / "sub"), load(small_rubric(tmp_path / "rubric.toml", ["append_cow"])), tmp_path / "out")
    (item,) = report.items
    command = "-ggdb llm_memory.c repro-append_cow.c -o repro-append_cow && ./repro-append_cow"
    assert item.status == "failed" and command in item.student and "without heap counting" in item.details
    assert '#include "llm_memory.c"' not in item.repro_source and "int main(void)" in item.repro_source
