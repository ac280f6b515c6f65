"""Text a person sees (a terminal, grader.log, the CSV), with every control character made visible.

A submission's output, labels and names reach our messages; an ESC sequence in them must not redraw the
TA's terminal, move the cursor, retitle the window or hide a line. `printable` spells each control character
as an escape (ESC as \\x1b, a bidi override as \\u202e); `Printable` does so for everything written to a
stream, sparing the newlines and tabs of our own layout and a carriage return that opens a write (the
progress line that rewrites itself on a terminal).
"""

import re
from typing import TextIO

# C0 and C1 controls, DEL, the Unicode format characters that reorder or hide text, and lone surrogates (a
# file name that is not UTF-8 decodes to them, and no encoder writes them)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ud800-\udfff\ufeff]")
_LAYOUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ud800-\udfff\ufeff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8, as os.fsdecode keeps it: spelled as that byte
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def printable(text: str, *, lines: bool = True) -> str:
    """`text` with its control characters escaped; newlines and tabs kept when `lines` (one CSV field or one
    progress line: lines=False)."""
    return (_LAYOUT if lines else _CONTROL).sub(_escape, text)


class Printable:
    """A text stream that escapes what is written to it (see the module docstring); the rest is the
    wrapped stream's."""

    def __init__(self, stream: TextIO):
        self.stream = stream

    def write(self, text: str) -> int:
        rewrite = text.startswith("\r")
        self.stream.write("\r" * rewrite + printable(text[rewrite:]))
        return len(text)

    def __getattr__(self, name: str):  # flush, isatty, fileno, encoding, ...
        return getattr(self.stream, name)
