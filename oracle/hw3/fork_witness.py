"""Whether a fork shown wrong gets the difference that follows it, for an engine whose objects the grader does not
read (a Python submission's, unread.py): did the fork give the child its parent's blocks without a reference each?

Such a fork returns what it must and writes nothing, so at the fork nothing the grader observes differs. Its
bug shows later, in another call: a write to a block the two sequences share lands in place (the append finds
it unshared), or a free hands out a block the other sequence still holds (a later create or append is granted
where it must be refused). RULES would charge that call's rule (append_cow's, create_free's). So where an append
writes its record into a block the model holds or another than the model's (rules.Effects held, elsewhere), or a
create or append the model refuses for want of blocks succeeds, each fork the engine made since its llm_init is
asked, earliest first. A fork is shown wrong when both hold, each seen in the graded run itself, the program as
written:

- in place, in the graded run itself: after the fork, an append wrote its record in place (as the grader read the
  pool: effects.wrote_in_place) into a block the model says the fork's parent and child still share, where the
  model copies the block first (or refuses the append, no block being free for the copy). A fork that took its
  references leaves the block shared, so a copy-on-write append copies it; one that took none leaves it unshared,
  and the append writes in place. An append that never copies does the same after a correct fork;
- the references, in the same run's later calls: after the fork, the program frees its parent or its child
  while the other lives, and then a create or append is granted that an engine whose fork took its references
  must refuse for want of blocks, however its appends copy. The program's returns are compared, step by step from
  its first, with a model whose forks take their references and whose appends never copy (AppendsInPlace: it
  holds no more blocks than any engine whose references hold, whatever its appends copy); the first return that
  differs must be that grant, after that free. A fork that took no reference gives its blocks back with the
  first sharer's free, and the grant follows; an append that never copies, its references held, agrees with the
  model throughout.

Those later calls are the graded run's own: where the item would stop at the append (its rule's first
difference), its process goes on through the rest of the program as written before any later step is judged,
each call made and the pool read after it as at every graded step, and each call's return kept
(graded_calls.py); the steps after it are then judged on what was kept, never made again. No second process
makes the program's calls, and no call the grader chose follows the fork: there is one run of the program to
tell apart from nothing, so what machine-wide state a process leaves (the kernel's page cache, a clock) tells a
submission nothing, and the references it shows are those of the very run whose append is judged. The item's
verdict still rests on its first difference; the later calls are evidence of whose rule it is, only. A program
shows the references only when it makes such a free and such a grant after its in-place append
(programs/README.md); elsewhere the difference keeps the rule it had, or gains the fork's (below).

References held, shown only after the in-place append, cannot excuse the fork: the submission knows its bug has
shown (its own append wrote into a block a reference was owed on) and can pay what its forks owed right then
(review 11's refs_settled_once_shown), and forks of one block can be correct in one run and not in another
(review 9's page-cache mark). So where the fork is not shown wrong, an in-place append into a block a fork's
two share is charged to the fork's rule as well as Task 4's (Effects.fork_too, rules.rules_of: each item once)
when the same graded run shows its appends copy a block: before it, an append the model copies agreed with the
model; after it, one of the program's later calls made ahead wrote its record into a block holding another
block's records (copies_after, effects.copied_a_block). An engine whose appends copy a block shared wrote this
one in place for a reference missing, or its copy-on-write copies only sometimes; either rule may be the broken
one, and both are charged. An append that never copies shows no copy and keeps Task 4's rule alone (no_cow);
a fork shown wrong takes the difference alone, as before (fork_no_incref: its forks take no reference, so its
appends never copy).

Not told apart: an append that never copies together with a free that drops every reference, or a create or free
count that grants too much after a sharer's free (two bugs that, by the pool and the returns, do what a fork
without references does): charged to the fork once.

A witness can only add the fork's rule to a difference (rules.py AFTER_WRONG_FORK, fork_too), never excuse one: when it
shows nothing, the difference keeps the rule it had; when it shows the fork wrong, the item reading past it
names the fork's item, which then fails or takes the difference (grading/settlement.py). Either way the
difference costs an item, once."""

from typing import Callable, Sequence

from oracle.hw3.effects import copied_a_block
from oracle.hw3.model import Model, Outcome
from oracle.hw3.rules import fails
from oracle.hw3.spec import KV_PER_BLOCK
from oracle.hw3.step import predict
from oracle.program import Step

GRANTS = ("create_sequence", "append_kv")  # the calls a free's blocks can be granted to


class AppendsInPlace(Model):
    """The model of an engine whose forks take their references and whose appends never copy a shared block (they
    write in place): it holds no more blocks than any engine whose references hold, so what it refuses for want of
    blocks, every such engine refuses."""

    def append_kv(self, null_engine: bool, seq_id: int, kv_data: int) -> Outcome:
        seq = self.sequences.get(seq_id) if self.live and not null_engine else None
        logical = len(seq.values) // KV_PER_BLOCK if seq is not None else 0
        if seq is None or logical >= len(seq.blocks):
            return super().append_kv(null_engine, seq_id, kv_data)
        # its own block: written where it is, shared or not
        self.write(seq.blocks[logical] * KV_PER_BLOCK + len(seq.values) % KV_PER_BLOCK, kv_data)
        seq.values.append(kv_data)
        return Outcome(0)


class ForkWitness:
    """The forks of one graded program (`steps`, the whole program as written), asked as above."""

    def __init__(self, steps: Sequence[Step]):
        self._steps = list(steps)
        self.known: dict[int, bool] = {}  # each fork's references' verdict, by its index in the program

    def shown_wrong(self, at: int, in_place: Sequence[tuple[int, frozenset[int]]],
                    returns: Callable[[], Sequence[bool | int | None]]) -> bool:
        """Whether one of the forks the model made before step `at` (an index) since their last llm_init is shown
        wrong. `in_place`: the graded run's appends so far that wrote in place into a shared block, each as its
        index in the program and the sequences that share the block by the model (effects.wrote_in_place).
        `returns()`: the graded run's returns of the whole program, from its first step (graded_calls.py: the
        rest made on in the graded run's own process), asked only when a fork needs them."""
        for fork in _forks(self._steps[:at]):
            parent, child = self._steps[fork].args
            if not any(index > fork and {parent, child} <= sharers for index, sharers in in_place):
                continue  # no append of the graded run found the block the two share unshared
            if fork not in self.known:
                self.known[fork] = references_missed(self._steps, returns(), fork)
            if self.known[fork]:
                return True
        return False


    def shares_a_fork(self, at: int, sharers: frozenset[int]) -> bool:
        """Whether a fork the model made before step `at` (an index) since the last llm_init has its parent and
        child among `sharers`, the sequences that share a block an append wrote in place."""
        return any(set(self._steps[fork].args) <= sharers for fork in _forks(self._steps[:at]))

    def copies_after(self, at: int, pool: bytes | None, pools: Sequence[bytes | None]) -> bool:
        """Whether an append of the program after step `at` (an index), whose pool after it was `pool`, copied a
        block (effects.copied_a_block), by `pools`, the pool after each later step made ahead in the graded run's
        own process (graded_calls.py program_pools)."""
        before = pool
        for index in range(at + 1, len(self._steps)):
            step, after = self._steps[index], pools[index] if index < len(pools) else None
            if step.op == "append_kv" and not step.null and copied_a_block(step.args[1], before, after):
                return True
            before = after
        return False


def references_missed(steps: Sequence[Step], returns: Sequence[bool | int | None], fork: int) -> bool:
    """Whether the program's `returns` (of `steps`, from the first; the last None when that call crashed or hung)
    first differ from AppendsInPlace's at a create or append it refuses for want of blocks, granted (or crashed or
    hung on its way past the refusal), after the fork at index `fork` and a free of its parent or child while the
    other lived."""
    parent, child = steps[fork].args
    model, live, freed = AppendsInPlace(), False, False
    for at, (step, got) in enumerate(zip(steps, returns)):
        if at > fork and step.op == "llm_init":
            return False  # the fork's engine is gone
        call, outcome = predict(model, step, live)
        if got != outcome.returned:  # granted, or crashed or hung on its way past the refusal (None)
            return (freed and step.op in GRANTS and "oom_refusal" in outcome.events
                    and (got is None or not fails(step.op, got)))
        if at > fork and step.op == "free_sequence" and not call.null and step.args[0] in (parent, child):
            freed = freed or (outcome.returned == 0 and {parent, child} - {step.args[0]} <= set(model.sequences))
        live = _live(step, call.null, outcome.returned, live)
    return False


def _forks(steps: Sequence[Step]) -> list[int]:
    """The indices of the forks the model made (non-NULL engine, a child made) since the last llm_init."""
    model, live, forks = Model(), False, []
    for at, step in enumerate(steps):
        call, outcome = predict(model, step, live)
        live = _live(step, call.null, outcome.returned, live)
        forks = [] if step.op == "llm_init" else forks + ([at] if step.op == "fork_sequence" and outcome.returned else [])
    return forks


def _live(step: Step, null: bool, returned: bool | int, live: bool) -> bool:
    """Whether the model's engine is live after `step` (made with a NULL engine when `null`), which returned
    `returned`, when it was `live` before: from an llm_init it accepts until an llm_destroy of it."""
    if step.op == "llm_init":
        return bool(returned)
    return live and not (step.op == "llm_destroy" and not null)
