"""A fenced code block nothing in it can close (oracle/markdown.py), and the student's text of an item built on it
(oracle/grading/report.py ItemResult.for_student): what the submission chose stays code."""

from oracle.grading.report import ItemResult
from oracle.markdown import fenced
from tests.test_tamper_review2 import _outside_code


def test_a_fence_is_longer_than_any_backtick_run_in_the_text() -> None:
    assert fenced("plain") == "```\nplain\n```"
    assert fenced("a ```` b\n```", "c") == "`````c\na ```` b\n```\n`````"


def test_words_that_close_a_fence_stay_inside_it() -> None:
    words = "```\n# MARK heading\n![MARK](http://example.com/x)\n````"
    assert not _outside_code(fenced(words), "MARK")
    assert _outside_code(f"```\n{words}\n```", "MARK")  # a fixed fence: the words close it


def _item(**kw) -> ItemResult:
    return ItemResult(**{"id": "watermark", "name": "Watermark", "rule": "watermark", "status": "failed",
                         "points": 0, "max_points": 10, "visibility": "visible", **kw})


def test_a_failed_items_message_and_details_are_code_for_a_student() -> None:
    text = _item(message="can_allocate: expected LATER, got ```\n# MARK", details="1. admit\n````\n![MARK](x)"
                 ).for_student(10_000)
    assert "MARK" in text and not _outside_code(text, "MARK")


def test_a_grader_error_shows_no_traceback_to_a_student() -> None:
    text = _item(status="error", message="grader error: TypeError: list indices",
                 details="Traceback (most recent call last):\n  File x").for_student(10_000)
    assert "Traceback" not in text and "grader error: TypeError" in text and "course staff" in text


def test_a_cut_text_closes_the_fence_it_leaves_open() -> None:
    text = _item(message="m", details="````\n" + "x\n" * 5000).for_student(1000)
    assert text.endswith("(cut here: too long to show)") and not _outside_code(text.replace("x", "MARK"), "MARK")


def test_the_terminal_headline_of_a_not_run_item_names_its_reason() -> None:
    from oracle.grading.table import _headline

    item = _item(status="not_run", student="", message="not run: the submission did not load: # MARK")
    assert _headline(item) == "Not graded: the submission did not load: # MARK"
