"""Whether a fork shown wrong gets the difference that follows it, for an engine whose objects the grader does not
read (a Python submission's, unread.py): did the fork give the child its parent's blocks without a reference each?

Such a fork returns what it must and writes nothing, so at the fork nothing the grader observes differs. Its
bug shows later, in another call: a write to a block the two sequences share lands in place (the append finds
it unshared), or a free hands out a block the other sequence still holds (a later create is granted one it
must be refused, an append writes its record there). RULES would charge that call's rule (append_cow's,
first fit's, create_free's). So where an append writes its record into a block the model holds or another than
the model's (rules.Effects held, elsewhere), or a create or append the model refuses for want of blocks
succeeds, each fork the engine made since its llm_init is asked, earliest first. A fork is shown wrong when
both hold:

- in place, seen in the graded run itself: after the fork, an append of the graded program wrote its record in
  place (as the grader read the pool: effects.wrote_in_place) into a block the model says the fork's parent and
  child still share, where the model copies the block first (or refuses the append, no block being free for the
  copy). A fork that took its references leaves the block shared, so a copy-on-write append copies it; one that
  took none leaves it unshared, and the append writes in place. Nothing is asked of the submission for this: the
  evidence is a call the graded program made, in the history every graded run has;
- the references, a second opinion in a fresh process: the program replayed up to and including the fork, then
  the fork's parent freed, the pool filled with new sequences up to the model's last free block, and one more
  one-block create, which must be refused (the child still holds every block it shares); and the control: the
  program replayed up to the fork, without it, and the same checks, all agreeing with the model.

Each asks what the others cannot: a free that drops every reference of a shared block at once fails the references'
checks and passes the control (nothing is shared without a fork), but the fork before it took its references,
and an append to a block its parent and child share copies it (so the fork is not blamed: the free's difference
keeps its own rule); an append that never copies writes in place after a correct fork, but the references hold;
a free, create or free-count bug that shows without the fork fails the control. A block shared by the parent and
child is in place evidence only while both hold it: once a free of one of them (or of a third sharer) came
between, a free that drops every reference writes the same bytes as a fork that took none. Not told apart: an
append that never copies together with a free that drops every reference (two bugs that, by the pool and the
returns, do what a fork without references does).

The references' ids and sizes follow the program (ids past the largest it names, the pool it chose), so they look
like any other replay of it.

A witness can only add the fork's rule to a difference (rules.py AFTER_WRONG_FORK), never excuse one: when it
shows nothing, the difference keeps the rule it had; when it shows the fork wrong, the item reading past it
names the fork's item, which then fails or takes the difference (grading/settlement.py). Either way the
difference costs an item, once."""

from contextlib import closing
from typing import Callable, Sequence

from oracle.hw3.adapters import Adapter
from oracle.hw3.call import POINTER_CALLS
from oracle.hw3.model import Model
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.spec import KV_PER_BLOCK, MAX_LOGICAL_BLOCKS
from oracle.hw3.step import call_on, predict
from oracle.program import Step

MOST_FILLING = 16  # the most creates a fill may take (16 x 256 blocks): a larger pool gets no second opinion
INT_MAX = 2**31 - 1


def fork_shown_wrong(fresh: Callable[[], Adapter], steps: Sequence[Step],
                     in_place: Sequence[tuple[int, frozenset[int]]], known: dict[int, bool] | None = None) -> bool:
    """Whether one of the forks the model made among `steps` since their last llm_init is shown wrong, as above.
    `in_place`: the graded run's appends that wrote in place into a shared block, each as its index in the program
    and the sequences that share the block by the model (effects.wrote_in_place). `known` keeps each fork's
    references' verdict (by its index in `steps`) across calls of one program."""
    known = {} if known is None else known
    for at in _forks(steps):
        parent, child = steps[at].args
        if not any(index > at and {parent, child} <= sharers for index, sharers in in_place):
            continue  # no append of the graded run found the block the two share unshared
        if at not in known:
            known[at] = _references_missed(fresh, steps[: at + 1], steps[:at], parent, _ids(steps))
        if known[at]:
            return True
    return False


def _forks(steps: Sequence[Step]) -> list[int]:
    """The indices of the forks the model made (non-NULL engine, a child made) since the last llm_init."""
    model, live, forks = Model(), False, []
    for at, step in enumerate(steps):
        call, outcome = predict(model, step, live)
        live = _live(step, call.null, outcome.returned, live)
        forks = [] if step.op == "llm_init" else forks + ([at] if step.op == "fork_sequence" and outcome.returned else [])
    return forks


def _references_missed(fresh: Callable[[], Adapter], forked: Sequence[Step], control: Sequence[Step], parent: int,
                       ids: list[int]) -> bool:
    """Whether the checks after `forked` (ending with the fork) disagree with the model, `forked` itself agreeing,
    while the same checks after `control` (the same without the fork) agree."""
    witness, checks = _with_checks(forked, parent, ids)
    if checks == 0 or _agreeing(fresh, witness) not in range(len(forked), len(witness)):
        return False
    against, checks = _with_checks(control, parent, ids)
    return checks > 0 and _agreeing(fresh, against) == len(against)


def _with_checks(prefix: Sequence[Step], parent: int, ids: list[int]) -> tuple[list[Step], int]:
    """`prefix`, then the checks of the references: the parent freed, the pool filled to the model's last free
    block with sequences of new ids, one more one-block create (refused). The steps and how many checks
    (0: no second opinion, the pool being too large to fill in MOST_FILLING creates)."""
    model, live = _model_after(prefix)
    if not live or parent not in model.sequences:
        return list(prefix), 0
    model.free_sequence(False, parent)
    blocks, fill = model.free_blocks(), []
    while blocks > 0:
        fill.append(min(blocks, MAX_LOGICAL_BLOCKS))
        blocks -= fill[-1]
    if len(fill) > MOST_FILLING:
        return list(prefix), 0
    checks = [Step("free_sequence", (parent,))]
    checks += [Step("create_sequence", (seq_id, count * KV_PER_BLOCK)) for seq_id, count in zip(ids, fill)]
    checks.append(Step("create_sequence", (ids[len(fill)], 1)))
    return [*prefix, *checks], len(checks)


def _ids(steps: Sequence[Step]) -> list[int]:
    """MOST_FILLING + 1 sequence ids the program never names: past its largest, else below its smallest, else
    the first from 0 (a program that names both ends of an int)."""
    named = {arg for step in steps if step.op != "llm_init" for arg in step.args[:2 if step.op == "fork_sequence" else 1]}
    top, bottom, count = max(named, default=0), min(named, default=0), MOST_FILLING + 1
    if top + count <= INT_MAX:
        return list(range(top + 1, top + 1 + count))
    if bottom - count >= -INT_MAX - 1:
        return list(range(bottom - 1, bottom - 1 - count, -1))
    return [seq_id for seq_id in range(len(named) + count) if seq_id not in named][:count]


def _model_after(steps: Sequence[Step]) -> tuple[Model, bool]:
    """The model after `steps`, and whether its engine is live."""
    model, live = Model(), False
    for step in steps:
        call, outcome = predict(model, step, live)
        live = _live(step, call.null, outcome.returned, live)
    return model, live


def _agreeing(fresh: Callable[[], Adapter], steps: Sequence[Step]) -> int | None:
    """How many of `steps`, from the first, return what the model says, in a fresh process of the implementation
    (all of them: len(steps)); None when the implementation does not load, crashes or hangs there."""
    try:
        with closing(fresh()) as adapter:
            return _replay(adapter, steps)[0]
    except ImplementationFailure:
        return None


def _replay(adapter: Adapter, steps: Sequence[Step]) -> tuple[int, object, Model]:
    """`steps` made on `adapter` and the model together, up to the first whose return differs from the model's:
    how many agreed, the engine handle and the model after them."""
    model, live, engine = Model(), False, None
    for at, step in enumerate(steps):
        call, outcome = predict(model, step, live)
        engine, returned = call_on(adapter, step, engine)
        if (returned is not None if step.op in POINTER_CALLS else returned) != outcome.returned:
            return at, engine, model
        live = _live(step, call.null, outcome.returned, live)
    return len(steps), engine, model


def _live(step: Step, null: bool, returned: bool | int, live: bool) -> bool:
    """Whether the model's engine is live after `step` (made with a NULL engine when `null`), which returned
    `returned`, when it was `live` before: from an llm_init it accepts until an llm_destroy of it."""
    if step.op == "llm_init":
        return bool(returned)
    return live and not (step.op == "llm_destroy" and not null)
