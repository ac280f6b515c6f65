"""Whose rule a refusal is where the grader does not read the free count (a Python submission's, unread.py).

A create or append the engine refuses where the model had every block it needs free says that the engine
believed fewer blocks free than it needed, and what it believes the grader cannot read. Two rules can make that
refusal: the call's own (it counts what it needs wrongly, or refuses on an account of its own) and the free
count's (Constraint 5: an earlier call, a free that did not count what it gave back, or a create, fork or append
that counted more than it took, left the count wrong). A second opinion run where the submission can tell it from
a graded run (a pool no program uses, calls no program makes) would let it choose which of the two its refusal
costs, so none is asked. Graded runs decide (run.py):

- refused before any call since the last llm_init moved the free count (in the model): no call can have
  miscounted it, so it is the call's own task's;
- refused after calls that moved it: the free count's, unless the call's own item's programs, run as graded
  (`refuses_alone`), show a call of the same kind refused before any call moved the count: then the call refuses
  of its own accord, and that is its own task's (its item fails for it there, and an item that read past it
  here is settled as any item that read past another rule's failure, grading/settlement.py).

Those programs run whether or not the rubric grades the call's item, exactly as that item runs them: the same
programs, pools and calls, each in a fresh process of the graded run's own adapter, judged the same way up to
the first difference that ends what the item can see. So nothing tells them from graded runs, and whatever the
submission answers there, it answers in a graded run too."""

from contextlib import closing
from typing import Any, Callable, Sequence

from oracle.hw3.difference import RETURN
from oracle.hw3.resync import TrackedModel
from oracle.hw3.rules import rule_of
from oracle.hw3.run import Ran, run
from oracle.program import Program


def refuses_alone(fresh: Callable[[], Any], op: str, programs: Sequence[Program], rule: str,
                  modulo: frozenset[str]) -> bool:
    """Whether one of `programs` (the item of `rule`, `op`'s own task, as that item runs them, leniently on
    `modulo`), each run in an implementation `fresh` opens, shows a call of `op` refused where the model had the
    blocks it takes, before any call since llm_init moved the free count."""
    for program in programs:
        with closing(fresh()) as adapter:
            trace = run(program, adapter, TrackedModel(), modulo, fresh, _as_graded(rule))
        last = trace.steps[-1] if trace.steps else None
        if last is not None and last.refused and not last.counted and last.call.api == op:
            return True
    return False


def _as_graded(rule: str) -> Callable[[Ran], bool]:
    """Where the item of `rule` stops a program (replay.py: at its rule's first difference), or where nothing
    further can be judged of an engine whose objects are not read (a return value that differs: run.py follows
    that program no further)."""

    def judge(ran: Ran) -> bool:
        if any(d.aspect == RETURN for d in ran.found):
            return True
        effects = None if ran.return_only else ran.effects
        return any(rule_of(d, ran.call, effects) == rule for d in ran.found)

    return judge
