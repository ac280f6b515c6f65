"""What grading produces: one ItemResult per rubric item, gathered in a GradeReport, and its JSON form.

The JSON schema (`pagedcheck-grade/1`) is documented in the README; `timing_free()` drops the fields that
change from run to run, so two reports of the same submission and seed compare equal.
"""

import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from oracle.markdown import fenced

SCHEMA = "pagedcheck-grade/1"
STATUSES = ("passed", "failed", "not_run", "not_applicable", "incomplete", "error")
EXIT_OK, EXIT_FAILED, EXIT_GRADER = 0, 1, 2


@dataclass(frozen=True)
class ItemResult:
    id: str
    name: str
    rule: str
    status: str  # one of STATUSES
    points: float
    max_points: float  # 0 when not applicable
    visibility: str
    message: str = ""
    details: str = ""
    program: str = ""
    repro: str | None = None
    seconds: float = 0.0
    student: str = ""  # what a student reads (markdown), when the family words it; see for_student
    repro_source: str = ""  # the repro file's source (C), shown where a student gets no file


    @property
    def counts_as_failure(self) -> bool:
        return self.status in ("failed", "not_run", "incomplete")

    def feedback(self, limit: int) -> str:
        """What a student reads about this item: rule, message, details, minimal program, repro file; at
        most `limit` characters, then a truncation mark."""
        parts = [f"Rule: {self.rule}", self.message, self.details]
        if self.program:
            parts.append("Minimal failing program (as Hypothesis prints it):\n" + self.program)
        if self.repro:
            parts.append(f"Standalone repro: {self.repro}")
        text = "\n\n".join(part for part in parts if part)
        return text if len(text) <= limit else text[:limit] + "\n... (truncated)"

    def for_student(self, limit: int, with_repro: bool = True) -> str:
        """What a student reads about this item, in markdown that stands alone: the family's words for a
        student when it gave them, else the message and details less the grader's internals (item ids, notes
        between items, probe and program names, paths), then the repro's source (`with_repro`). Nothing for an
        item that passed, unless the family worded a note for it (a part of it not graded). At most about `limit`
        characters, cut at a line and never inside an open code block."""
        if self.status == "passed" and not self.student:
            return ""
        if self.student:
            text = self.student
            if with_repro and self.repro_source and self.repro:
                text += f"\n\n`{self.repro}`, the program to save:\n\n{fenced(self.repro_source, 'c')}"
        elif self.status == "not_run":  # why, which may quote what the submission raised
            text = not_graded(plain(self.message).strip().removeprefix("not run: "))
        elif self.status == "error":  # the grader's bug: its traceback (details) is the staff's, in report.json
            text = fenced(plain(self.message).strip()) + "\n\nThis is the grader's fault: please tell the course staff."
        else:  # the message quotes what the submission answered, raised or printed: code, as the details are
            said = "\n\n".join(part for part in (plain(self.message).strip(), plain(self.details).strip("\n")) if part)
            text = fenced(said) if said else ""
        if len(text) <= limit:
            return text
        at = text.rfind("\n", 0, limit)
        cut = text[: at if at > limit // 2 else limit]  # at a line, unless that drops half of it
        return _closed(cut) + "\n\n... (cut here: too long to show)"


def not_graded(reason: str) -> str:
    """A student's text of an item not run for `reason` (it may quote the submission's words: code)."""
    return "Not graded:\n\n" + fenced(reason)


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def _closed(markdown: str) -> str:
    """`markdown` with the fenced code block it leaves open, if any, closed (CommonMark: a fence closes with a line of
    its character at least as long)."""
    fence = _open_fence(markdown.splitlines())
    return markdown + (f"\n{fence}" if fence else "")


def _open_fence(lines: list[str]) -> str:
    """The fence of the code block `lines` leave open ("" when none)."""
    fence = ""
    for line in lines:
        fence = _fence_after(fence, line)
    return fence


def _fence_after(fence: str, line: str) -> str:
    """The open fence after `line`, `fence` open before it ("" outside any code block)."""
    mark = _FENCE.match(line)
    if not fence and mark:
        return mark.group(1)
    if fence and mark and line.strip() == mark.group(1) and mark.group(1)[0] == fence[0] \
            and len(mark.group(1)) >= len(fence):
        return ""
    return fence


@dataclass
class GradeReport:
    family: str
    submission: str
    kind: str  # "c" or "python"; "unknown" when the grader could not tell
    rubric_title: str
    rubric_source: str
    seed: int
    items: list[ItemResult] = field(default_factory=list)
    grader_error: str | None = None  # set when the grader itself could not run (exit status 2)
    seconds: float = 0.0
    isolation: str = ""  # how submission code was isolated (oracle/sandbox.py), in one line
    evidence: dict[str, Any] = field(default_factory=dict)  # item id -> the family's record of its failing step (not in JSON)

    @property
    def score(self) -> float:
        return sum(item.points for item in self.items)

    @property
    def max_score(self) -> float:
        return sum(item.max_points for item in self.items)

    @property
    def exit_status(self) -> int:
        """0 every item passed; 1 some item failed or could not run (the submission's fault); 2 the grader
        could not run, or a check broke (ours)."""
        if self.grader_error or any(item.status == "error" for item in self.items):
            return EXIT_GRADER
        return EXIT_FAILED if any(item.counts_as_failure for item in self.items) else EXIT_OK

    def as_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "family": self.family,
            "submission": self.submission,
            "kind": self.kind,
            "rubric": {"title": self.rubric_title, "source": self.rubric_source},
            "seed": self.seed,
            "score": _number(self.score),
            "max_score": _number(self.max_score),
            "exit_status": self.exit_status,
            "grader_error": self.grader_error,
            "isolation": self.isolation,
            "seconds": round(self.seconds, 3),
            "items": [
                {**asdict(item), "points": _number(item.points), "max_points": _number(item.max_points),
                 "seconds": round(item.seconds, 3)}
                for item in self.items
            ],
        }


_INTERNAL = (
    (re.compile(r" ?\[rule: [^\]]*\]"), ""),  # the rule is said apart
    (re.compile(r" ?\(that is (?:item \w+|rule [^)]*|the other items)'s to judge\)"), ""),  # a note between items
    (re.compile(r" ?\(see the \w+ item\)"), ""),
    (re.compile(r" ?\(found by item \w+'s programs, not this item's\)"), ""),
    (re.compile(r"^White-box probe '?\w+'?(?: failed)?\.$", re.M), ""),
    (re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)+: ", re.M), ""),  # a probe's or a program's name, leading a line
    (re.compile(r"\bprogram [a-z0-9]+(?:_[a-z0-9]+)+\b"), "a test program"),
    (re.compile(r"(?<![\w.])/(?:[\w.+-]+/)+([\w.+-]+)"), r"\1"),  # an absolute path: the file's name
)


def as_text(markdown: str) -> str:
    """for_student's markdown as plain text (a terminal, PrairieLearn's <pre>): code fences and emphasis dropped,
    code kept as it stands: a code block's lines whole, whatever they hold, indented by four spaces, so what the
    submission said (a block of its own) never reads as a line of the grader's."""
    lines, fence = [], ""
    for line in markdown.splitlines():
        after = _fence_after(fence, line)
        if after != fence:  # a fence opened or closed: not shown
            fence = after
        elif fence:
            lines.append(f"    {line}" if line else "")
        elif line.startswith(("/*", " ")):
            lines.append(line)
        else:
            lines.append(line.replace("**", "").replace("*Rule:", "Rule:").replace("`", ""))
    return "\n".join(lines)


def plain(text: str) -> str:
    """Text of the grader's in a student's words: no item ids, notes between items, names of our programs or
    probes, or absolute paths."""
    for pattern, replacement in _INTERNAL:
        text = pattern.sub(replacement, text)
    return text.rstrip()


def timing_free(report: dict[str, Any]) -> dict[str, Any]:
    """A report dict without its timings, for comparing two runs."""
    return {
        **{k: v for k, v in report.items() if k != "seconds"},
        "items": [{k: v for k, v in item.items() if k != "seconds"} for item in report["items"]],
    }


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 3)


def write_atomic(path: Path | str, text: str) -> None:
    """Writes `text` to `path` through a temporary file beside it, so no reader sees half a file."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
