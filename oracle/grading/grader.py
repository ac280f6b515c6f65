"""The grader proper: a plain loop over the rubric's items, one check each, like CS:APP's mdriver.

A family supplies its checks; each check is a function of (context, options) returning an Outcome, or
raising NotRun (a prerequisite failed: 0 points), NotApplicable (not for this kind of implementation: not
counted) or Incomplete (stopped at a safety limit before deciding: 0 points). Any other exception is the
grader's own fault: the item is an `error` and the report says so.
Once the grade's budget has passed (its time limit: CPU seconds of the grader's process tree, oracle/run_cpu.py)
the items not yet started are `not_run`.
An item that read past another rule's failure says so with an excuse; once every item has run, the settlement
(oracle/grading/settlement.py) decides which item that failure costs.
"""

import dataclasses
import re
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from oracle.grading.report import ItemResult, not_graded, plain
from oracle.grading.rubric import OptionRule, Rubric, load_rubric
from oracle.grading.settlement import (  # noqa: F401 (the checks' words)
    ANY_OTHER, Excuse, Seen, Verdict, joined, settle, strict)
from oracle.one_cpu import on_one_cpu
from oracle.run_cpu import Budget
from oracle.sandbox import DeadlinePassed

OUT_OF_TIME = "the time limit for the whole grade was reached before this item started"
OUT_OF_TIME_DURING = "the time limit for the whole grade was reached while this item ran (its runs were stopped)"


class GraderError(Exception):
    """The grader cannot run (bad path, no gcc, a kind of submission the family cannot grade): exit status 2."""


Excuses = Excuse | tuple[Excuse, ...] | None  # what an item read past, in the order met (grading/settlement.py)


class NotRun(Exception):
    """The check cannot run on this submission (e.g. it does not build); the item scores 0. With an `excuse`,
    the reason is another item's bug, and the excuse says what holds if that item does not fail."""

    def __init__(self, reason: object, excuse: Excuses = None) -> None:
        super().__init__(reason)
        self.excuse = excuse


class NotApplicable(Exception):
    """The check does not apply to this kind of implementation; the item is left out of the score and the
    maximum. `student`: why, in a student's words, when the family words it."""

    def __init__(self, reason: object, student: str = "") -> None:
        super().__init__(reason)
        self.student = student


class Incomplete(Exception):
    """The check stopped at a safety limit (CPU seconds, oracle/run_cpu.py) before it could decide; the item scores
    0 and its message says how far it got. Its budgets are counts, so only a very slow run gets here."""


@dataclass(frozen=True)
class Outcome:
    passed: bool
    message: str = ""  # one line: what failed and where, or a note on a pass (e.g. a partial run)
    details: str = ""  # what a student needs to see it: compiler output, the calls, valgrind's words
    program: str = ""  # the minimal failing program, as Hypothesis prints it
    repro: str | None = None  # the standalone repro file's name, next to the report
    excuse: Excuses = None  # a pass that read past another item's bug (oracle/grading/settlement.py)
    student: str = ""  # what a student reads (markdown, standing alone); "" : the message and details, in a student's words
    repro_source: str = ""  # the repro file's source, for a student who sees no file (Gradescope)


@dataclass(frozen=True)
class Check:
    id: str
    rule: str  # the spec rule the check enforces, as the spec names it
    run: Callable[[Any, Mapping[str, Any]], Outcome]
    options: Mapping[str, Any] = field(default_factory=dict)  # defaults; a rubric may override them
    limits: Mapping[str, OptionRule] = field(default_factory=dict)  # the bounds of options, checked at load
    catch_all: bool = False  # it checks every rule at once (fuzzing): its failure pays for no other item's excuse


def rubric_for(checks: Mapping[str, Check], path: Any) -> Rubric:
    """The rubric at `path` for a family's checks (their ids, default options and option bounds); RubricError."""
    return load_rubric(path, {check.id: check.options for check in checks.values()},
                       {check.id: check.limits for check in checks.values()})


@on_one_cpu()  # the grader and the submission take turns: on one CPU, no wake-up crosses CPUs
def run_checks(
    checks: Mapping[str, Check],
    rubric: Rubric,
    context: Any,
    on_item: Callable[[ItemResult], None] | None = None,
    budget: Budget | None = None,
) -> list[ItemResult]:
    """Runs each rubric item's check in rubric order; never raises for a check's failure or error. An item
    that would start once `budget` (the grade's time limit) has passed is not run."""
    results: list[ItemResult] = []
    excuses: dict[str, tuple[Excuse, ...]] = {}
    for item in rubric.items:
        check = checks[item.id]
        start = time.perf_counter()
        try:
            if budget is not None and budget.passed():
                raise NotRun(OUT_OF_TIME)
            outcome = check.run(context, item.options)
            status = "passed" if outcome.passed else "failed"
            if outcome.excuse:  # a pass read past another item's failure; a failure names its rule's items
                excuses[item.id] = excuses_in(outcome.excuse)
        except NotRun as reason:
            outcome, status = Outcome(False, f"not run: {reason}"), "not_run"
            if reason.excuse:
                excuses[item.id] = excuses_in(reason.excuse)
        except DeadlinePassed as reason:
            outcome, status = Outcome(False, f"not run: {OUT_OF_TIME_DURING}"), "not_run"
            excuses.update(_met(item.id, reason))
        except NotApplicable as reason:
            outcome, status = Outcome(False, f"not applicable: {reason}", student=reason.student), "not_applicable"
            excuses.update(_met(item.id, reason))
        except Incomplete as reason:
            outcome, status = Outcome(False, f"incomplete: {reason}"), "incomplete"
            excuses.update(_met(item.id, reason))
        except Exception as exc:  # a bug in the grader, not in the submission
            outcome = Outcome(False, f"grader error: {type(exc).__name__}: {exc}", traceback.format_exc())
            status = "error"
        result = ItemResult(
            id=item.id,
            name=item.name,
            rule=check.rule,
            status=status,
            points=item.points if status == "passed" else 0,
            max_points=0 if status == "not_applicable" else item.points,
            visibility=item.visibility,
            message=outcome.message,
            details=outcome.details,
            program=outcome.program,
            repro=outcome.repro,
            seconds=time.perf_counter() - start,
            student=outcome.student,
            repro_source=outcome.repro_source,
        )
        results.append(result)
        if on_item and item.id not in excuses:
            on_item(result)
    verdicts = settle({result.id: result.status for result in results}, excuses,
                      [item.id for item in rubric.items if checks[item.id].catch_all],
                      {item.id: item.points for item in rubric.items})
    names = {item.id: item.name for item in rubric.items}
    shown = {item.id: item.visibility for item in rubric.items}
    results = [_settled(result, verdicts.get(result.id), excuses.get(result.id, ()), names, shown)
               for result in results]
    for result in results:
        if on_item and result.id in excuses:  # told once its excuse is settled
            on_item(result)
    return results


def excuses_in(excuse: Excuse | tuple[Excuse, ...] | None) -> tuple[Excuse, ...]:
    """An outcome's or a stop's `excuse` (none, one, or several) as a tuple."""
    return () if excuse is None else excuse if isinstance(excuse, tuple) else (excuse,)


def _met(item: str, stop: BaseException) -> dict[str, tuple[Excuse, ...]]:
    """What a check that stopped otherwise than NotRun (out of time, incomplete, not applicable) met on its way
    and leaves to other items (an `excuse` the family set on it: a memory error met on the way), by item."""
    excuse = getattr(stop, "excuse", None)
    return {item: excuses_in(excuse)} if excuse else {}


# Gradescope's visibilities, from the least shown: a student sees an item's output no earlier than its own
_SHOWN = {"hidden": 0, "after_due_date": 1, "after_published": 2, "visible": 3}
UNSHOWN_READER = ("Failed: a test whose results are not shown to you (yet) met a failure of this part's rule in "
                  "its own programs. Its calls are not shown here; check your code against this part's rule.")


def _settled(result: ItemResult, verdict: Verdict | None, excuses: tuple[Excuse, ...],
             names: Mapping[str, str], shown: Mapping[str, str] | None = None) -> ItemResult:
    """The item as settling left it, with what a student reads of it: failed, with what the item that found
    the failure saw (what a reader shown later than this item saw stays in the staff's report.json: the
    student's text says only that a test not shown found it); not run because another item's bug stopped it,
    said once in a student's words."""
    if verdict is not None:
        student = verdict.failure.student
        reader, seen = verdict.reader, shown or {}
        if reader is not None and _SHOWN.get(seen.get(reader, ""), 3) < _SHOWN.get(result.visibility, 3):
            student = UNSHOWN_READER  # a course's hidden programs: never in a more visible item's output
        elif student and reader is not None:
            student += f"\n\n(Found by the tests of \"{names.get(reader, reader)}\".)"
        return dataclasses.replace(result, status="failed", points=0, message=verdict.message,
                                   details=verdict.failure.details, student=student)
    excuses = tuple(excuse for excuse in excuses if not excuse.aside)  # met on the way: never why it did not run
    if result.status == "not_run" and excuses:  # another item's bug stopped it: said once, plainly
        owners = sorted({o for excuse in excuses for o in excuse.owners if o in names and o != result.id})
        whose = f"the bug reported under {' and '.join(repr_name(names[o]) for o in owners)}" if owners \
            else "a bug another test reports"
        return dataclasses.replace(result, student=f"Not graded: every test of this part first ran into {whose}. "
                                                   "Fix that bug, and this part is graded.")
    if result.status == "not_run" and not result.student:  # its reason, naming items as the student sees them
        reason = re.sub(r"\bthe (\w+) item\b", lambda m: repr_name(names[m.group(1)]) if m.group(1) in names
                        else m.group(0), result.message.removeprefix("not run: "))
        return dataclasses.replace(result, student=not_graded(plain(reason)))
    return result


def repr_name(name: str) -> str:
    """An item's name as a student reads it in a sentence."""
    return f'"{name}"'
