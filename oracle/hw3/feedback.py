"""What a student reads about a failed HW3 item (Gradescope's results.json, PrairieLearn, the terminal), in
markdown that stands alone: the failing call in the student's language (C or Python), expected beside actual
as text, every call numbered as the repro numbers its steps, and the repro's source to build.

It names no grader internals (no package, machine step, item id or path): those stay in the staff's outputs
(report.json's message and details, the HTML page)."""

import re

from oracle.difference import CRASH
from oracle.hw3.difference import LEAK, STATE_CHANGE
from oracle.hw3.exact import WILD_WORDS
from oracle.hw3.call import POINTER_CALLS, Call
from oracle.hw3.replay import Finding
from oracle.hw3.rules import fails
from oracle.markdown import fenced, said, spoken

CALLS_SHOWN = 60  # calls listed at most; a longer program shows its first and last ones
OUTPUT_SHOWN = 2000  # characters of what the submission printed


def printed(output: str) -> str:
    """What the submission printed, as shown: its first OUTPUT_SHOWN characters, and how many more there were."""
    more = f"\n... ({len(output) - OUTPUT_SHOWN} more characters)" if len(output) > OUTPUT_SHOWN else ""
    return output[:OUTPUT_SHOWN] + more


def student_text(finding: Finding, kind: str, repro: tuple[str, str] | None = None) -> str:
    """Markdown for a student: what went wrong at which call, the calls, what the code printed, and how to build
    and run the repro (`repro`: its file name and the command; its source is shown after this text)."""
    call, number = finding.call, finding.step
    assert isinstance(call, Call)
    parts = [f"**Call {number}** `{written(call, kind).rstrip(';')}`: {what_went_wrong(finding)}",
             f"The calls{', numbered as the repro numbers its steps' if repro else ', in order'} (`pool`: a fresh "
             f"buffer of the size given to llm_init):",
             fenced(listing(finding.calls, number, kind), kind)]
    if finding.output:
        parts += ["Your code printed:", fenced(printed(finding.output), "")]
    if repro is not None:
        name, command = repro
        parts.append(f"**Reproduce it:** save the C program `{name}` in the folder "
                     f"holding `llm_memory.h` and your `llm_memory.c`, then run\n\n    {command}\n\nIt makes the "
                     f"same {len(finding.calls)} call{'s' if len(finding.calls) > 1 else ''} (step N is call N; in gdb, `break step_{number}`) and prints "
                     "the first difference."
                     + (" For a leak it lists each block still allocated and the line of your llm_memory.c that "
                        "allocated it." if finding.difference.aspect == LEAK else ""))
    return "\n\n".join(part for part in parts if part)


def what_went_wrong(finding: Finding) -> str:
    """What went wrong, expected beside actual, as Markdown: the grader's words, and what the implementation said
    (a crash's words, a value that is not a number) in a code block below them."""
    words, quoted = went_wrong(finding)
    return said(words, quoted) if quoted else f"{words}."


# the hw3 family's own words and forms a value it shows may take (markdown.spoken): pointers, an engine, a table, a
# list, and the counts of a leak
SPOKEN_WORDS = frozenset({*POINTER_CALLS.values(), "a live engine", "live", "intact", "an L2 table", WILD_WORDS})
SPOKEN_FORMS = re.compile(r"\d+ block\(s\) \(\d+ bytes\) still live|-?\d+ and -?\d+")


def inline(value: object) -> bool:
    """Whether a value may stand in the hw3 family's sentence for a student (markdown.spoken, with its words)."""
    return spoken(value, SPOKEN_WORDS, forms=SPOKEN_FORMS)


def went_wrong(finding: Finding) -> tuple[str, str]:
    """What went wrong, apart: the grader's words, and the text the implementation chose that they refer to ("" when
    every value in the words is one the grader may say inline: markdown.spoken). A crash's text is always the
    implementation's: what it raised, printed or exited with."""
    difference = finding.difference
    if difference.aspect == CRASH:
        return "it did not return normally", str(difference.got)
    if difference.location == "return value":
        if inline(difference.got):
            return f"it returned {difference.got}, expected {difference.expected}", ""
        return f"it returned the value below, expected {difference.expected}", str(difference.got)
    # the implementation's values: what it holds after the call, and (a state change) what it held before
    theirs = (difference.expected, difference.got) if difference.aspect == STATE_CHANGE else (difference.got,)
    if all(inline(value) for value in theirs):
        return f"right after it, {difference}", ""
    return "right after it, this differs", str(difference)

def written(call: Call, kind: str) -> str:
    """A call as the student writes it: C (`create_sequence(engine, 3, 17)`) or Python (None for NULL)."""
    text = str(call)
    if kind == "python":
        text = text.replace("(NULL", "(None")
    if call.api == "llm_init":
        text = f"engine = {text}"
    return text + (";" if kind == "c" else "")


def listing(calls: list[Call], failed_at: int, kind: str) -> str:
    """The calls, numbered from 1, each with what it must return; the failing one marked."""
    numbered = list(enumerate(calls, 1))
    if len(numbered) > CALLS_SHOWN:
        keep = CALLS_SHOWN // 2
        numbered = numbered[:keep] + [(0, None)] + numbered[-keep:]
    width = max((len(written(call, kind)) for _, call in numbered if call is not None), default=0)
    lines = []
    for number, call in numbered:
        if call is None:
            skipped = f"... {len(calls) - 2 * (CALLS_SHOWN // 2)} more calls ..."
            lines.append(f"/* {skipped} */" if kind == "c" else f"# {skipped}")
            continue
        said = f"must return {_returned(call, kind)}" if call.judged else f"returned {_returned(call, kind)} (not judged)"
        said += "  <-- went wrong here" if number == failed_at else ""
        text = written(call, kind)
        lines.append(f"/* {number:>3} */ {text:<{width}}  /* {said} */" if kind == "c"
                     else f"{number:>3}: {text:<{width}}  # {said}")
    return "\n".join(lines)


def _returned(call: Call, kind: str) -> str:
    if call.api in POINTER_CALLS:
        return POINTER_CALLS[call.api] if call.expected else ("None" if kind == "python" else "NULL")
    return f"{call.expected} (a failure)" if fails(call.api, call.expected) else str(call.expected)

