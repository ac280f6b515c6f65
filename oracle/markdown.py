"""Text in the Markdown a student reads (results.json, report.md): what the submission chose (a status's name, an
exception's text, a value it returned, what it printed) goes there only as code, in a block nothing in it can
close; the grader's sentences hold only its own words and values in a tiny language of its own (`spoken`)."""

import re
from collections.abc import Collection

from oracle.printable import printable

# the values a grader's sentence may hold inline: numbers (decimal, hex), structures of numbers, and the grader's
# own words for nothing and for a pointer; any other text (a crash's words, a str a call returned, a message read
# from the submission's process) is said in a block of its own (`said`). A family adds its own fixed words.
_NUMBERS = re.compile(r"-?\d+|0x[0-9a-f]+|[-\d, ()\[\]{}]+")
_WORDS = frozenset({"NULL", "None", "True", "False", "none"})


def fenced(text: str, language: str = "") -> str:
    """`text` as a fenced code block that nothing in it can close: a backtick fence longer than any run of
    backticks in the text (CommonMark closes a fence only with one at least as long), its control and reordering
    characters spelled as escapes (oracle/printable.py), so nothing in it lays out the grader's words around it."""
    text = printable(text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def spoken(value: object, words: Collection[str] = (), *, forms: re.Pattern[str] | None = None) -> bool:
    """Whether `value`'s text may stand inline in the grader's sentence: a number, numbers in brackets (never `](`,
    a link's middle), one of the grader's fixed `words`, or of a family's `forms` (numbers in its fixed words).
    Its type says nothing: a value read from the submission's process arrives as text. Whoever chose a spoken
    value, it says only what the grader could."""
    text = str(value)
    if text in _WORDS or text in words:
        return True
    return len(text) <= 200 and "](" not in text and (_NUMBERS.fullmatch(text) is not None
                                                       or forms is not None and forms.fullmatch(text) is not None)

def said(words: str, text: str) -> str:
    """The grader's `words` (a sentence that ends in a colon) and the submission's `text` in a block below them."""
    return f"{words}:\n\n{fenced(text)}"
