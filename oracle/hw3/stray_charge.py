"""A memory error the grader observed in any graded C run costs memory_safety, once, and no other item by itself.

Natively the driver lets a stray read or write go on (c/stray.py): the run carries on as it would on an ordinary
heap, and the item whose program it was is judged on its own facts. Every check is wrapped (`charging`): the
strays the grader counted while it ran (Submission.strays, noted by each adapter's Watch whatever made the
adapter: the item's programs, a second opinion's, the fuzz's, allocation failure's) leave the item an Excuse that
names memory_safety and is `aside` (it stopped nothing of the item's). Settling (oracle/grading/settlement.py)
then fails memory_safety with the first of them when it passed, whichever item's runs met it; the item itself
keeps its verdict.
"""

from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence

from oracle.grading.grader import (
    ANY_OTHER, Excuse, Incomplete, NotApplicable, NotRun, Outcome, Seen, excuses_in,
)
from oracle.hw3.c.stray import Stray
from oracle.hw3.feedback import CALLS_SHOWN
from oracle.hw3.rules import MEMORY_SAFETY
from oracle.markdown import fenced
from oracle.hw3.rules import item_of
from oracle.sandbox import DeadlinePassed

Run = Callable[[Any, Mapping[str, Any]], Outcome]


def charge(strays: Sequence[Stray]) -> Excuse:
    """The Excuse the first of `strays` leaves: memory_safety's to take."""
    first = strays[0]
    message = f"{first.where}: {first.problem()} [rule: {MEMORY_SAFETY}]"
    details = f"The calls{f' ({first.program})' if first.program else ''}:\n" + "\n".join(
        f"{number:>3}  {call}{'   <-- here' if number == first.step else ''}" for number, call in enumerate(first.calls, 1))
    return Excuse(frozenset({item_of(MEMORY_SAFETY) or ANY_OTHER}), Seen(message, details, elsewhere=False, student=_student(first)), aside=True)


def _student(stray: Stray) -> str:
    calls = list(enumerate(stray.calls, 1))
    if len(calls) > CALLS_SHOWN:
        keep = CALLS_SHOWN // 2
        calls = calls[:keep] + [(0, f"/* ... {len(calls) - 2 * keep} more calls ... */")] + calls[-keep:]
    lines = [f"{call};{'  /* <-- here */' if number == stray.step else ''}" if number else call for number, call in calls]
    return (f"**Call {stray.step}** `{stray.call}`: your code read, wrote or freed memory outside every heap block it "
            "had allocated and not yet freed (a heap overflow, a use after free or a double free). The program went on past it, as it "
            "would on an ordinary heap; valgrind, run on these calls, shows where it was made. The calls, in order "
            "(`pool`: a fresh buffer of the size given to llm_init):\n\n" + fenced("\n".join(lines), "c"))


def charging(run: Run) -> Run:
    """The check `run`, with the strays the grader counted while it ran left to memory_safety (an Excuse added
    to its outcome, or to why it stopped)."""

    def check(sub: Any, options: Mapping[str, Any]) -> Outcome:
        before = len(sub.strays)
        try:
            outcome = run(sub, options)
        except (NotRun, NotApplicable, Incomplete, DeadlinePassed) as stop:
            if len(sub.strays) > before:
                stop.excuse = (*excuses_in(getattr(stop, "excuse", None)), charge(sub.strays[before:]))  # type: ignore[union-attr]
            raise
        if len(sub.strays) == before:
            return outcome
        return replace(outcome, excuse=(*excuses_in(outcome.excuse), charge(sub.strays[before:])))

    return check
