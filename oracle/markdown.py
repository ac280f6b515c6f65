"""Text in the Markdown a student reads (results.json, report.md): what the submission chose (a status's name, an
exception's text, what it printed) goes there only as code, in a block nothing in it can close."""

import re


def fenced(text: str, language: str = "") -> str:
    """`text` as a fenced code block that nothing in it can close: a backtick fence longer than any run of
    backticks in the text (CommonMark closes a fence only with one at least as long)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"
