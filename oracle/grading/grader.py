"""The grader proper: a plain loop over the rubric's items, one check each, like CS:APP's mdriver.

A family supplies its checks; each check is a function of (context, options) returning an Outcome, or
raising NotRun (a prerequisite failed: 0 points), NotApplicable (not for this kind of implementation: not
counted) or Incomplete (stopped at a safety limit before deciding: 0 points). Any other exception is the
grader's own fault: the item is an `error` and the report says so.
Past the grade's deadline (a time.monotonic() value) the items not yet started are `not_run`.
"""

import dataclasses
import re
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from oracle.grading.report import ItemResult, plain
from oracle.grading.rubric import OptionRule, Rubric, load_rubric
from oracle.sandbox import DeadlinePassed

OUT_OF_TIME = "the time limit for the whole grade was reached before this item started"
OUT_OF_TIME_DURING = "the time limit for the whole grade was reached while this item ran (its runs were stopped)"


class GraderError(Exception):
    """The grader cannot run (bad path, no gcc, a kind of submission the family cannot grade): exit status 2."""


@dataclass(frozen=True)
class Excuse:
    """An item read past a bug it names as other items' (`owners`; ANY_OTHER: some other item's). A bug must
    cost some item, once: a named owner in the rubric that passed takes `failure` (see _settled); when no owner
    can be named, the item gets `failure` itself. An owner the rubric leaves out is the course's choice not to
    grade that rule: the excuse holds."""

    owners: frozenset[str]
    failure: "Outcome"
    absent_holds: bool = True  # False: what the item saw may well be its own rule's bug (a crash in the very call
    # a probe is about): an owner that passed, or that the rubric leaves out, leaves the bug to the item


ANY_OTHER = "*"  # an excuse owner: any other item but fuzz (which checks every rule at once)


def joined(first: Excuse, then: Excuse | None) -> Excuse:
    """One excuse for the bugs of two (the first one's failure is what the item says when it must)."""
    if then is None:
        return first
    return Excuse(first.owners | then.owners, first.failure, first.absent_holds and then.absent_holds)


class NotRun(Exception):
    """The check cannot run on this submission (e.g. it does not build); the item scores 0. With an `excuse`,
    the reason is another item's bug, and the excuse says what holds if that item does not fail."""

    def __init__(self, reason: object, excuse: "Excuse | None" = None) -> None:
        super().__init__(reason)
        self.excuse = excuse


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
    excuse: Excuse | None = None  # a pass that read past another item's bug (see Excuse)
    student: str = ""  # what a student reads (markdown, standing alone); "" : the message and details, in a student's words
    repro_source: str = ""  # the repro file's source, for a student who sees no file (Gradescope)




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
    results, excuses = [], {}
    for item in rubric.items:
        check = checks[item.id]
        start = time.perf_counter()
        try:
            if deadline is not None and time.monotonic() >= deadline:
                raise NotRun(OUT_OF_TIME)
            outcome = check.run(context, item.options)
            status = "passed" if outcome.passed else "failed"
            if outcome.passed and outcome.excuse is not None:
                excuses[item.id] = outcome.excuse
        except NotRun as reason:
            outcome, status = Outcome(False, f"not run: {reason}"), "not_run"
            if reason.excuse is not None:
                excuses[item.id] = reason.excuse
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
            student=outcome.student,
            repro_source=outcome.repro_source,
        )
        results.append(result)
        if on_item and item.id not in excuses:
            on_item(result)
    results = _settled(results, excuses, {item.id: item.name for item in rubric.items})
    for result in results:
        if on_item and result.id in excuses:  # told once its excuse is settled
            on_item(result)
    return results


def _settled(results: list[ItemResult], excuses: Mapping[str, Excuse], names: Mapping[str, str]) -> list[ItemResult]:
    """Each excused item as it stands once every item has run. A bug must cost some item, once: an excuse
    whose named owners (in the rubric) did not pass holds; a named owner that passed takes the bug itself,
    with what the excused item saw (its own programs did not reach it), so the bug costs the item of its rule
    and no other. An item that names itself, an owner nobody can name (ANY_OTHER) none of which failed, or an
    owner that must be graded here and is not: the excused item fails with what it saw."""
    status = {result.id: result.status for result in results}
    charged: dict[str, tuple[str, Excuse]] = {}  # owner item -> (the item whose excuse names it, that excuse)
    for result in results:
        excuse = excuses.get(result.id)
        if excuse is not None and _named(result.id, excuse, status):
            for owner in sorted(excuse.owners):
                if owner in status and status[owner] == "passed":
                    charged.setdefault(owner, (result.id, excuse))
    for owner in charged:
        status[owner] = "failed"

    def holds(item: str, excuse: Excuse) -> bool:
        owners = [o for o in status if o not in (item, "fuzz")] if ANY_OTHER in excuse.owners else \
            [o for o in excuse.owners if o in status and o != item]
        if item in excuse.owners or (ANY_OTHER in excuse.owners and not owners):
            return False  # it names itself, or there is no other item to pay
        if not excuse.absent_holds and any(o not in status for o in excuse.owners - {ANY_OTHER}):
            return False  # an owner it names is not graded here: the bug is this item's
        if ANY_OTHER in excuse.owners:
            return any(status[o] != "passed" for o in owners)
        return all(status[o] != "passed" for o in owners)  # each bug it read past costs its own item

    settled = []
    for result in results:
        excuse = excuses.get(result.id)
        if result.id in charged:
            reader, by = charged[result.id]
            message = by.failure.message.removesuffix(FOUND_ELSEWHERE) + f" (found by item {reader}'s programs, not this item's)"
            student = by.failure.student and f"{by.failure.student}\n\n(Found by the tests of \"{names.get(reader, reader)}\".)"
            result = dataclasses.replace(result, status="failed", points=0, message=message, details=by.failure.details,
                                         student=student)
        elif excuse is not None and not holds(result.id, excuse):
            failure = excuse.failure
            result = dataclasses.replace(result, status="failed", points=0, message=failure.message,
                                         details=failure.details, student=failure.student)
        elif result.status == "not_run" and excuse is not None:  # another item's bug stopped it: said once, plainly
            owners = [f'"{names[o]}"' for o in sorted(excuse.owners) if o in names and o != result.id]
            whose = f"the bug reported under {' and '.join(owners)}" if owners else "a bug another test reports"
            result = dataclasses.replace(result, student=f"Not graded: every test of this part first ran into {whose}. "
                                                         "Fix that bug, and this part is graded.")
        elif result.status == "not_run" and not result.student:  # its reason, naming items as the student sees them
            reason = re.sub(r"\bthe (\w+) item\b", lambda m: f'"{names[m.group(1)]}"' if m.group(1) in names else m.group(0),
                            result.message.removeprefix("not run: "))
            result = dataclasses.replace(result, student="Not graded: " + plain(reason))
        settled.append(result)
    return settled


FOUND_ELSEWHERE = " (another rule's bug, but no item failed for it here)"


def _named(item: str, excuse: Excuse, status: Mapping[str, str]) -> bool:
    """Whether an excuse names its owners outright, each another item: then an owner that passed can take the
    bug. A strict excuse (absent_holds False) says what the item saw may be its own rule's bug (a crash in the
    very call a probe is about): an owner that passed leaves it to the item."""
    return excuse.absent_holds and ANY_OTHER not in excuse.owners and item not in excuse.owners
