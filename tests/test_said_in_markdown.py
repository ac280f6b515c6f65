"""What a submission chose, in the Markdown a student reads (oracle/markdown.py `spoken`/`said`, oracle/hw3/feedback.py
student_text and what_went_wrong, oracle/grading/report.py as_text), without a process: a
Finding whose difference holds hostile Markdown (a crash's words, a str a call returned, a list error read from the
submission's process) in, the student's text out, every hostile line inside a fenced code block the words cannot
close; the grader's sentence above it names the call, the rule's fact and the expected value."""

import pytest

from oracle.difference import CRASH, Difference
from oracle.grading.report import ItemResult, as_text
from oracle.hw3.call import Call
from oracle.hw3.difference import LEAK, LIST_BROKEN, RETURN, STATE_CHANGE
from oracle.hw3.feedback import inline, student_text, went_wrong
from oracle.hw3.model import Model
from oracle.hw3.replay import Finding
from oracle.markdown import said, spoken
from tests.test_tamper_review2 import _outside_code

HOSTILE = "done\n\n# MARK: all tests passed, 100/100\n\n![MARK](http://127.0.0.1:9/seen.png)\n\n````\nMARK after"
CALLS = [Call("llm_init", (4096,), False, True), Call("llm_destroy", (), False, 0)]


def _finding(difference: Difference, output: str = "") -> Finding:
    return Finding("destroy_twice", 2, CALLS[1], difference, "Task 6: llm_destroy", calls=CALLS, model=Model(),
                   output=output)


HOSTILE_DIFFERENCES = {
    "crash": Difference(CRASH, "", None, f"raised RuntimeError: {HOSTILE}"),
    "returned str": Difference(RETURN, "return value", "0", HOSTILE),
    "one-line str": Difference(RETURN, "return value", "0", "![MARK](http://127.0.0.1:9/x.png)"),
    "link of numbers": Difference(RETURN, "return value", "0", "[1](2)"),
    "list error": Difference(LIST_BROKEN, "active list", "intact", HOSTILE),
    "list error before a state change": Difference(STATE_CHANGE, "active list", HOSTILE, "intact"),
}


@pytest.mark.parametrize("kind", ["c", "python"])
@pytest.mark.parametrize("name", list(HOSTILE_DIFFERENCES))
def test_every_line_the_submission_chose_is_inside_a_fence(name: str, kind: str) -> None:
    difference = HOSTILE_DIFFERENCES[name]
    text = student_text(_finding(difference, output="```\n# MARK printed"), kind, ("repro.c", "gcc repro.c"))
    assert str(difference.got) in text  # the words are shown whole
    assert not _outside_code(text.replace("[1](2)", "MARK"), "MARK"), text
    assert text.startswith("**Call 2** `llm_destroy(engine)`: ")


def test_the_graders_sentence_names_the_expected_value_and_the_quoted_text_follows() -> None:
    words, quoted = went_wrong(_finding(HOSTILE_DIFFERENCES["returned str"]))
    assert (words, quoted) == ("it returned the value below, expected 0", HOSTILE)
    assert went_wrong(_finding(HOSTILE_DIFFERENCES["crash"])) == ("it did not return normally",
                                                                  f"raised RuntimeError: {HOSTILE}")


def test_the_graders_own_values_stay_inline() -> None:
    text = student_text(_finding(Difference(RETURN, "return value", "0", "-1")), "c")
    assert text.startswith("**Call 2** `llm_destroy(engine)`: it returned -1, expected 0.\n\n")
    assert went_wrong(_finding(Difference("ref_count", "ref_count[3]", 1, 2))) == (
        "right after it, ref_count[3]: expected 1, got 2", "")
    assert went_wrong(_finding(Difference(LEAK, "heap", "every allocation freed", "3 block(s) (120 bytes) still live"))) \
        == ("right after it, heap: expected every allocation freed, got 3 block(s) (120 bytes) still live", "")


@pytest.mark.parametrize("value", ["-1", "0x1f", "[1, 2]", "{3}", "(1, [2])", "NULL", "None", 7, None])
def test_spoken_values(value: object) -> None:
    assert spoken(value)


@pytest.mark.parametrize("value", ["[1](2)", "done", "# heading", "1\n2", "`0`", "<img>", "0" * 201, "www.x.com",
                                   "an engine"])
def test_unspoken_values(value: object) -> None:
    assert not spoken(value)


@pytest.mark.parametrize("value", ["an engine", "a Sequence", "intact", "an L2 table", "2 and 0",
                                   "3 block(s) (120 bytes) still live"])
def test_the_hw3_familys_own_words(value: str) -> None:
    assert inline(value) and not inline(value + "\n# MARK") and not inline(f"{value} # MARK")


def test_said_puts_words_a_fence_cannot_hold_in_a_longer_fence() -> None:
    assert said("it did not return normally", "a ``` b") == "it did not return normally:\n\n````\na ``` b\n````"


def test_the_students_item_text_keeps_the_block_and_the_terminal_shows_its_lines_whole() -> None:
    student = student_text(_finding(HOSTILE_DIFFERENCES["crash"]), "python")
    item = ItemResult("llm_destroy", "Task 6", "Task 6: llm_destroy", "failed", 0, 6, "visible", message="m",
                      student=student)
    markdown = item.for_student(40_000)
    assert not _outside_code(markdown, "MARK")
    plain = as_text(markdown)
    assert "Call 2 llm_destroy(engine): it did not return normally:" in plain.splitlines()
    assert "    ![MARK](http://127.0.0.1:9/seen.png)" in plain.splitlines() and "    ````" in plain.splitlines()
    assert all(line.startswith("    ") for line in plain.splitlines() if "MARK" in line)  # never a line of ours

def test_valgrinds_summary_and_report_are_blocks() -> None:
    from oracle.hw3.memcheck import MemcheckResult
    from oracle.hw3.memory_safety import _valgrind_words

    result = MemcheckResult("destroy_twice", False, f"crashed: {HOSTILE}", f"==1== Invalid read\n--- program output ---\n{HOSTILE}")
    text = _valgrind_words(result, CALLS)
    assert text.startswith("Valgrind:\n\n") and HOSTILE in text and not _outside_code(text, "MARK"), text


def test_a_crash_met_by_the_battery_is_quoted_and_valgrinds_sites_follow_it() -> None:
    from oracle.grading.grader import Outcome
    from oracle.hw3.memcheck import MemcheckResult
    from oracle.hw3.memory_safety import Crashed, _student_of, _with_sites

    crashed = Crashed(f"destroy_twice: step 2 llm_destroy(engine): raised RuntimeError: {HOSTILE}")
    crashed.said = f"raised RuntimeError: {HOSTILE}"
    student = _student_of(crashed, CALLS)
    assert student.startswith("Call 2 llm_destroy(engine): it did not return normally:\n\n")
    assert not _outside_code(student, "MARK") and "<-- went wrong here" in student
    sited = _with_sites(Outcome(False, crashed, "", student=student),
                        [MemcheckResult("destroy_twice", False, "definitely lost 40 bytes in 1 blocks, allocated at "
                                                                "llm_memory.c:83", "")])
    assert sited.student.endswith("\n\nThe lost blocks were allocated at llm_memory.c:83 (valgrind's leak report).")
    assert not _outside_code(sited.student, "MARK")
    left = "destroy_twice: step 2 llm_destroy(engine): 1 heap block(s) (4096 bytes) still allocated with no engine"
    assert _student_of(left, CALLS).startswith(
        "Call 2 llm_destroy(engine): 1 heap block(s) (4096 bytes) still allocated with no engine.\n\n")


def test_the_fuzz_lines_put_a_crashs_text_on_lines_of_its_own() -> None:
    from oracle.hw3.fuzz_text import failure_in_calls
    from oracle.hw3.machine import Divergence

    failure = Divergence("crash", CALLS, Model(), difference=HOSTILE_DIFFERENCES["crash"])
    lines = failure_in_calls(failure, "engine/llm_memory.c")
    said_at = lines.index("Call 2 `llm_destroy(engine)`: it did not return normally (rule: Task 5: Engine Destruction):")
    assert lines[said_at + 1:] == [f"    {line}" for line in f"raised RuntimeError: {HOSTILE}".splitlines()]
