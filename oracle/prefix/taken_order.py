"""A free's order as the graded program's own calls take it (oracle/prefix/driver.py, for the directed programs).

The free queue a pool shows is never read for its order: a served pool's observe() runs in its own interpreter, so
the queue it shows may be made up, and made up consistently (tests/hostile_review5/free_queue_lie.py). Nor is a
second run asked: any call the program does not make (a drain of one-block admits, say) is a call the pool can
recognise, and answer as a correct pool would while the graded run keeps its own order
(tests/hostile_review7/drain_regranted.py). The order shows where the program's own calls take free blocks: an
admit (an append, a fork) is granted blocks from the queue's head, and which of the free blocks it gets, in the
order its table holds them, is the queue's head as the pool keeps it. So a free's order is judged at the first call
of the program that takes its blocks, in the graded run itself; where no call of the program takes them, no
program shows that order, and it is not judged (the directed programs of free_queue and reverse_order_free take
every block their frees put back).

A call that takes other free blocks than the model's is a free-queue difference, named by what the takes show, not
by one shape of bug: where every block the call takes sits where the model has a block of the same free (each free's
own blocks, in an order other than that free's), it is the release order's (reverse_order_free), whatever the
permutation (tests/hostile_review8/release_swapped.py: head first with the first two swapped); only where no
reordering within each free explains the takes (a block taken from the wrong end of the queue, another free's first,
a block no free put back) is it the free queue's (free_queue). The model reads on in the pool's queue as far as the
takes show it (`Taken.queue`).

A call that touches free blocks (a cache hit on a warm block takes it out of the queue, from wherever it is) and then
takes free blocks shows the queue's order after the touch: where the takes differ from the model's only across a
touched block (the blocks between two touched blocks, or a touched block and an end of the queue, keep their order
among themselves; only how those runs meet changed), the touch explains them and it is the touch's (`touch`), whatever
the reordering (tests/hostile_review9/touch_rotates_queue.py: the queue rotated head to tail until the hit block is
at the head, so the blocks before it go to the tail). What no free's reordering and no touch explains is the free
queue's. The fuzz (no takes judged: it reads the queue the pool shows) names a touch's order by the same test
(`touch_explains`) on the blocks a call took and the queue shown after it."""

from dataclasses import dataclass

from oracle.difference import Difference

Freed = tuple[int, list[int]]  # a free's request and the blocks it put back, still free, in the model's queue order


@dataclass(frozen=True)
class Taken:
    difference: Difference
    queue: list[int]  # the free queue the model reads on in: the pool's, as far as its takes show it


def taken_order(queue: list[int], expected: list[int], got: list[int], frees: list[Freed],
                before_hits: list[int] | None = None) -> Taken | None:
    """The difference between the blocks a call was granted from the free queue (`got`, each free in the model, in
    its table's order) and the model's (`expected`), `queue` the model's free queue when the call took them,
    `frees` what each earlier free put back and `before_hits` the model's queue before the call's hits took free
    blocks out of it (None: they took none); None when they agree."""
    if got == expected:
        return None
    owner = {block: n for n, (_, blocks) in enumerate(frees) for block in blocks}
    seen = range(len(got))
    if all(owner.get(got[i], -1) == owner.get(queue[i], -2) or got[i] == queue[i] for i in seen):
        released = _released(queue, got, frees, owner)
        if released is not None:
            return released
    pool = list(got) + [block for block in queue if block not in got]  # as far as the takes show it
    if before_hits is not None and touch_explains(before_hits, pool):
        return Taken(touch_difference(before_hits, pool, list(expected), list(got),
                                      "the blocks this call takes from it, in its table's order"), pool)
    return Taken(Difference("free order", "the free queue's head", list(expected), list(got),
                            note="the blocks this call takes from it, in its table's order"),
                 list(got) + [block for block in queue if block not in got])


def _released(queue: list[int], got: list[int], frees: list[Freed], owner: dict[int, int]) -> Taken | None:
    """Takes that each free's own blocks explain, in another order than that free's: the release order's, whatever
    the permutation (the first free whose order differs is named). The model reads on in the pool's queue: each such
    free's blocks the takes do not show follow in the opposite order where the shown ones agree with it (the common
    bug), else in the model's."""
    revised, named = list(queue), None
    for n, (rid, blocks) in enumerate(frees):
        slots = [i for i, block in enumerate(queue) if owner.get(block) == n]
        shown = [i for i in slots if i < len(got)]
        if all(queue[i] == got[i] for i in shown):
            continue
        named = named or (rid, shown)
        backwards = list(reversed([queue[i] for i in slots]))
        if all(backwards[k] == got[i] for k, i in enumerate(slots) if i < len(got)):
            order = backwards
        else:
            taken = [got[i] for i in shown]
            order = taken + [block for block in (queue[i] for i in slots) if block not in taken]
        for i, block in zip(slots, order):
            revised[i] = block
    if named is None:
        return None
    rid, shown = named
    return Taken(Difference("release order", f"the blocks free(req {rid}) put back", [queue[i] for i in shown],
                            [got[i] for i in shown], note="in the order this call takes them from the free queue"),
                 revised)


def touch_explains(before: list[int], after: list[int]) -> bool:
    """Whether `after`, the pool's free queue once a call's hits took free blocks out of `before` (the model's queue
    before the call), differs from `before` without them only where a touch reaches: among the blocks before the last
    block a hit took out (a touch that does not unlink the block in place walks the queue from its head to it, as a
    rotation does), the blocks after it keeping their order among themselves."""
    touched = set(before) - set(after)
    rest = [block for block in before if block not in touched]
    if not touched or after == rest or len(after) != len(set(after)) or set(after) != set(rest):
        return False
    beyond = before[max(i for i, block in enumerate(before) if block in touched) + 1:]
    return [block for block in after if block in beyond] == beyond


def touch_difference(before: list[int], after: list[int], expected: list, got: list, note: str) -> Difference:
    """A free queue whose order a call's touches changed: `expected` and `got` as the call shows it (`note`)."""
    touched = [block for block in before if block not in after]
    hits = f"the hit took block {touched[0]}" if len(touched) == 1 else \
        f"the hits took blocks {', '.join(map(str, touched))}"
    return Difference("touch order", f"the free queue once {hits} out of it", expected, got,
                      note=f"{note}: a hit leaves the other free blocks in their order")
