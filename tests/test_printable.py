"""oracle.printable: control characters a submission sends become visible escapes, never terminal commands."""

import io

from oracle.printable import Printable, printable


def test_escape_sequences_and_other_controls_are_spelled_out() -> None:
    shout = "\x1b[2J\x1b[H\x1b]0;owned\x07done\x9b31m\x7f\x00"
    assert printable(shout) == "\\x1b[2J\\x1b[H\\x1b]0;owned\\x07done\\x9b31m\\x7f\\x00"


def test_text_that_reorders_or_hides_itself_is_spelled_out() -> None:
    assert printable("score \u202e001/0\u202c\u200b") == "score \\u202e001/0\\u202c\\u200b"


def test_lines_keep_their_newlines_and_tabs_unless_one_line_is_asked_for() -> None:
    text = "a\tb\nc\rd"
    assert printable(text) == "a\tb\nc\\x0dd"
    assert printable(text, lines=False) == "a\\x09b\\x0ac\\x0dd"


def test_plain_text_and_unicode_letters_are_unchanged() -> None:
    text = "Grüße, 成绩 100/100 — ok ✓"
    assert printable(text) == text and printable(text, lines=False) == text


def test_a_stream_escapes_what_is_written_but_a_progress_line_may_rewrite_itself() -> None:
    out = io.StringIO()
    stream = Printable(out)
    stream.write("\rfuzz: 3/30 examples")
    stream.write("name \x1b[2J\r\n")
    assert out.getvalue() == "\rfuzz: 3/30 examples" + "name \\x1b[2J\\x0d\n"


def test_a_name_that_is_not_utf8_is_spelled_byte_by_byte_and_encodes() -> None:
    import os

    name = os.fsdecode(b"a-\xff\xfe\x1b")
    shown = printable(name, lines=False)
    assert shown == "a-\\xff\\xfe\\x1b"
    shown.encode("utf-8")  # no lone surrogate left for an encoder to choke on
