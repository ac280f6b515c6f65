"""The grader proper: a plain loop over the rubric's items, one check each, like CS:APP's mdriver.

A family supplies its checks; each check is a function of (context, options) returning an Outcome, or
raising NotRun (a prerequisite failed: 0 points), NotApplicable (not for this kind of implementation: not
counted) or Incomplete (stopped at a safety limit before deciding: 0 points). Any other exception is the
grader's own fault: the item is an `error` and the report says so.
Past the grade's deadline (a time.monotonic() value) the items not yet started are `not_run`.
"""

import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from oracle.grading.report import ItemResult
from oracle.grading.rubric import OptionRule, Rubric, load_rubric
from oracle.sandbox import DeadlinePassed

OUT_OF_TIME = "the time limit for the whole grade was reached before this item started"
OUT_OF_TIME_DURING = "the time limit for the whole grade was reached while this item ran (its runs were stopped)"


class GraderError(Exception):
    """The grader cannot run (bad path, no gcc, a kind of submission the family cannot grade): exit status 2."""


class NotRun(Exception):
    """The check cannot run on this submission (e.g. it does not build); the item scores 0."""


class NotApplicable(Exception):
    """The check does not apply to this kind of implementation; the item is left out of the score."""


class Incomplete(Exception):
    """The check stopped at a safety limit (wall clock) before it could decide; the item scores 0 and its
    message says how far it got. Its budgets are counts, so only a very slow run gets here."""


@dataclass(frozen=True)
class Outcome:
    passed: bool
    message: str = ""  # one line: what failed and where, or a note on a pass (e.g. a partial run)
    details: str = ""  # what a student needs to see it: compiler output, the calls, valgrind's words
    program: str = ""  # the minimal failing program, as Hypothesis prints it
    repro: str | None = None  # the standalone repro file's name, next to the report


@dataclass(frozen=True)
class Check:
    id: str
    rule: str  # the spec rule the check enforces, as the spec names it
    run: Callable[[Any, Mapping[str, Any]], Outcome]
    options: Mapping[str, Any] = field(default_factory=dict)  # defaults; a rubric may override them
    limits: Mapping[str, OptionRule] = field(default_factory=dict)  # the bounds of options, checked at load


def rubric_for(checks: Mapping[str, Check], path: Any) -> Rubric:
    """The rubric at `path` for a family's checks (their ids, default options and option bounds); RubricError."""
    return load_rubric(path, {check.id: check.options for check in checks.values()},
                       {check.id: check.limits for check in checks.values()})


def run_checks(
    checks: Mapping[str, Check],
    rubric: Rubric,
    context: Any,
    on_item: Callable[[ItemResult], None] | None = None,
    deadline: float | None = None,
) -> list[ItemResult]:
    """Runs each rubric item's check in rubric order; never raises for a check's failure or error. An item
    that would start at or past `deadline` is not run."""
    results = []
    for item in rubric.items:
        check = checks[item.id]
        start = time.perf_counter()
        try:
            if deadline is not None and time.monotonic() >= deadline:
                raise NotRun(OUT_OF_TIME)
            outcome = check.run(context, item.options)
            status = "passed" if outcome.passed else "failed"
        except NotRun as reason:
            outcome, status = Outcome(False, f"not run: {reason}"), "not_run"
        except DeadlinePassed:
            outcome, status = Outcome(False, f"not run: {OUT_OF_TIME_DURING}"), "not_run"
        except NotApplicable as reason:
            outcome, status = Outcome(False, f"not applicable: {reason}"), "not_applicable"
        except Incomplete as reason:
            outcome, status = Outcome(False, f"incomplete: {reason}"), "incomplete"
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
        )
        results.append(result)
        if on_item:
            on_item(result)
    return results
