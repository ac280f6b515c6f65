"""A second opinion on a difference that follows a fork, for an engine whose objects the grader does not read (a
Python submission's, unread.py): did the fork give the child its parent's blocks without a reference each?

Such a fork returns what it must and writes nothing, so at the fork nothing the grader observes differs. Its
bug shows later, in another call: a write to a block the two sequences share lands in place (the append finds
it unshared), or a free hands out a block the other sequence still holds (a later create is granted one it
must be refused, an append writes its record there). RULES would charge that call's rule (append_cow's,
first fit's, create_free's). So where an append writes its record into a block the model holds or another than
the model's (rules.Effects held, elsewhere), or a create or append the model refuses for want of blocks
succeeds, witnesses run for each fork the engine made since its llm_init, earliest first, each in a fresh
process, every return compared with the model's:

- in place: the program replayed up to and including the fork, then one append to the child, whose last
  block it shares with the parent (when the parent's last block is full, one append to the parent first, so
  that the fork shares a partial block): the model copies the block, and the grader reads the pool's bytes to
  see where the record landed. A fork that took its references leaves the block shared, so a copy-on-write
  append copies it; one that took none leaves it unshared, and the append writes in place;
- the references: the program replayed up to and including the fork, then the fork's parent freed, the pool
  filled with new sequences up to the model's last free block, and one more one-block create, which must be
  refused (the child still holds every block it shares);
- the control: the program replayed up to the fork, without it, and the same checks of the references.

The fork is shown wrong when the append writes in place, and the references' checks disagree with the model
(the fork agreeing) while the control agrees throughout. Each asks what the others cannot: a free that drops
every reference of a shared block at once fails the references' checks and passes the control (nothing is
shared without a fork), but the fork before it took its references, and the append copies (so the fork is
not blamed: the free's difference keeps its own rule); an append that never copies writes in place after a
correct fork, but the references hold; a free, create or free-count bug that shows without the fork fails the
control. Not told apart: an append that never copies together with a free that drops every reference (two
bugs that, by the pool and the returns, do what a fork without references does).

The witnesses' ids, sizes and records follow the program (ids past the largest it names, the pool it chose,
the last record it appended), so they look like any other replay of it.

A witness can only add the fork's rule to a difference (rules.py AFTER_WRONG_FORK), never excuse one: when it
shows nothing, the difference keeps the rule it had; when it shows the fork wrong, the item reading past it
names the fork's item, which then fails or takes the difference (grading/settlement.py). Either way the
difference costs an item, once."""

import struct
from contextlib import closing
from typing import Callable, Sequence

from oracle.hw3.adapters import Adapter
from oracle.hw3.machine import POINTER_CALLS
from oracle.hw3.model import Model
from oracle.hw3.observation import ImplementationFailure
from oracle.hw3.spec import KV_PER_BLOCK, KV_SIZE, MAX_LOGICAL_BLOCKS
from oracle.hw3.step import call_on, predict
from oracle.program import Step

MOST_FILLING = 16  # the most creates a fill may take (16 x 256 blocks): a larger pool gets no second opinion
INT_MAX = 2**31 - 1


def fork_shown_wrong(fresh: Callable[[], Adapter], steps: Sequence[Step], known: dict[int, bool] | None = None) -> bool:
    """Whether one of the forks the model made among `steps` since their last llm_init is shown wrong by the
    witnesses above. `known` keeps each fork's verdict (by its index in `steps`) across calls of one program."""
    known = {} if known is None else known
    for at in _forks(steps):
        if at not in known:
            known[at] = (_writes_in_place(fresh, steps[: at + 1], _record(steps))
                         and _references_missed(fresh, steps[: at + 1], steps[:at], steps[at].args[0], _ids(steps)))
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


def _writes_in_place(fresh: Callable[[], Adapter], forked: Sequence[Step], record: int) -> bool:
    """Whether, after `forked` (ending with the fork) replayed in a fresh process and agreeing with the model, an
    append of `record` to the child, at the block it shares with the parent, writes the record into that block
    (in place), where the model copies the block first, or refuses the append when no block is free for the
    copy. When the parent's last block is full, one append of `record` to the parent goes before the fork, so
    that the child shares a partial block."""
    parent, child = forked[-1].args
    model, _ = _model_after(forked[:-1])
    if len(model.sequences[parent].values) % KV_PER_BLOCK == 0:
        forked = [*forked[:-1], Step("append_kv", (parent, record)), forked[-1]]
    try:
        with closing(fresh()) as adapter:
            agreeing, engine, model = _replay(adapter, forked)
            seq = model.sequences.get(child)
            if agreeing < len(forked) or seq is None or len(seq.values) % KV_PER_BLOCK == 0:
                return False
            logical, offset = divmod(len(seq.values), KV_PER_BLOCK)
            slot = (seq.blocks[logical] * KV_PER_BLOCK + offset) * KV_SIZE  # in the block the two share
            before = adapter.observe(engine).pool
            if before is None or len(before) < slot + KV_SIZE:
                return False
            value = record ^ 1 if before[slot : slot + KV_SIZE] == struct.pack("<i", record) else record  # not there yet
            if not {"cow_copy", "oom_on_cow"} & set(model.append_kv(False, child, value).events):
                return False  # the model's append finds the block unshared: the fork's references do not matter
            adapter.append_kv(engine, child, value)  # its return aside: where the record lands is the evidence
            after = adapter.observe(engine).pool
    except ImplementationFailure:
        return False
    return after is not None and after[slot : slot + KV_SIZE] == struct.pack("<i", value)


def _record(steps: Sequence[Step]) -> int:
    """The record the in-place witness appends: the last the program appended (0 when it appended none)."""
    return next((step.args[1] for step in reversed(steps) if step.op == "append_kv"), 0)


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
