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
- refused after calls that moved it: the call's own task's only where the call's own item's programs, run as
  graded (`refused_alone`), show THAT call (the same records: `same_call`) refused before any call moved the
  count, the model granting it: then the engine refuses that call whatever came before, and its item fails for
  it there (an item that read past it here is settled as any item that read past another rule's failure,
  grading/settlement.py);
- else the free count's: where the item's programs show only other calls of its kind refused alone, either rule
  may have made this refusal, and both items are charged, each once (the call's item by its own programs, the
  free count's by this refusal). A cheap failure planted where those programs look (one create refused alone)
  so pays for no dearer bug: it excuses only refusals of the very call it refused, and the free count's bug
  refuses whatever calls its count decides, not the ones the submission chose (review 10, `refusal_planted`).

An append is never refused alone (every sequence took a block when created, so the count moved before any
append can be made): its refusal after calls that moved the count is always the free count's.

Those programs run whether or not the rubric grades the call's item, exactly as that item runs them: the same
programs, pools and calls, each in a fresh process of the graded run's own adapter, judged the same way up to
the first difference that ends what the item can see. So nothing tells them from graded runs, and whatever the
submission answers there, it answers in a graded run too."""

from contextlib import closing
from typing import Any, Callable, Sequence

from oracle.hw3.call import Call
from oracle.hw3.difference import RETURN
from oracle.hw3.resync import TrackedModel
from oracle.hw3.rules import rule_of
from oracle.hw3.run import Ran, run
from oracle.program import Program

Shown = frozenset[tuple[int, ...]]  # the calls of one kind refused alone: each one's arguments past its sequence id


def refused_alone(fresh: Callable[[], Any], op: str, programs: Sequence[Program], rule: str,
                  modulo: frozenset[str]) -> Shown:
    """The calls of `op` that `programs` (the item of `rule`, `op`'s own task, as that item runs them, leniently on
    `modulo`), each run in an implementation `fresh` opens, show refused where the model had the blocks it takes,
    before any call since llm_init moved the free count: each by its arguments past the sequence id. A program
    shows at most one (the item stops it at that refusal)."""
    shown: set[tuple[int, ...]] = set()
    for program in programs:
        with closing(fresh()) as adapter:
            trace = run(program, adapter, TrackedModel(), modulo, fresh, _as_graded(rule))
        last = trace.steps[-1] if trace.steps else None
        if last is not None and last.refused and not last.counted and last.call.api == op:
            shown.add(last.call.args[1:])
    return frozenset(shown)


def same_call(call: Call, shown: Shown) -> bool:
    """Whether a refusal of `call` after calls that moved the free count is the call's own: its item's programs
    showed a call of the same kind with the same arguments but the sequence id (a create of as many records)
    refused before any call moved the count. Any other refusal alone of its kind says the call's own bug may
    have made this one too, not that it did: the free count's rule is charged then (each item once)."""
    return call.args[1:] in shown


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
