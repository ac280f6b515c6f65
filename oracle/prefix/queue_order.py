"""A second opinion on the order a free put its blocks back in, resting on what the pool does, never on the free
queue it shows (a served pool's observe() runs in its own interpreter: the queue it shows may be made up, and made
up consistently). The program is replayed, up to and including the free, in a fresh process of the pool, then the
queue is drained by one-block admits, each of one new token under a new id: the blocks they are granted, in
order, are the queue's order.

The replay must return at every call what the graded run returned, and each admit must be granted exactly one
block of its own; otherwise the second opinion says nothing (None) and the free's order is not judged at the
free (the program's later admits take the queue's blocks, and their tables show its order). The ids and tokens
follow the program (past the largest number it names), so nothing tells the replay from a graded run before the
drain.

Never two processes of the pool alive at once (as oracle/hw3/alone.py, for hw3's second opinions): were the graded
run's process alive meanwhile, the replay could find it (outside bubblewrap's namespaces: an abstract unix name
it bound) and know itself a second opinion. So a served pool's graded run starts in a fresh process of its own
(`alone`, at the start of each directed program: it has seen only the program's calls, as the replay has), is
ended before the replay starts, and goes on in a fresh process that replays its calls so far (their returns not
judged again). Used by oracle/prefix/driver.py (Driver.free) and oracle/prefix/checks.py."""

from contextlib import closing
from typing import Any, Callable

from oracle.prefix.observation import ImplementationFailure
from oracle.program import Step

WHERE = "as one-block admits take them, in a fresh process of the pool"  # a drained order's difference, in words


def alone(graded: Any) -> None:
    """Ends the served pool's process (none in this process: nothing to end); its next call starts a fresh one."""
    end = getattr(graded, "end_process", None)
    if end is not None:
        end()


def second_opinion(graded: Any, fresh: Callable[[], Any]) -> Callable[[list[tuple[Step, Any]], int],
                                                                       tuple[int, ...] | None]:
    """queue_order on pools from `fresh` (the `graded` run's factory: a served pool's adapters share its process),
    that process ended before and after, and the graded run's calls replayed in the next one to go on
    (ImplementationFailure when that replay fails: a crash of the graded run's)."""

    def order(made: list[tuple[Step, Any]], count: int) -> tuple[int, ...] | None:
        alone(graded)
        try:
            return queue_order(fresh, made, count)
        finally:
            if getattr(graded, "end_process", None) is not None:
                alone(graded)
                for step, _ in made:
                    getattr(graded, step.op)(*step.args)

    return order


def queue_order(fresh: Callable[[], Any], made: list[tuple[Step, Any]], count: int) -> tuple[int, ...] | None:
    """The first `count` blocks of the free queue, in the order a fresh process's admits take them after the calls
    `made` (each with what it returned in the graded run), or None where the pool does not let that be seen."""
    past = 1 + max((n for step, _ in made for n in _numbers(step.args)), default=0)
    with closing(fresh()) as pool:
        try:
            for step, returned in made:
                if getattr(pool, step.op)(*step.args) != returned:
                    return None
            for i in range(count):
                accepted, hits = pool.admit(past + i, [past + i])
                if not accepted or hits:
                    return None
            tables = pool.observe().tables
        except ImplementationFailure:
            return None
    granted = [tables.get(past + i, ()) for i in range(count)]
    if any(len(table) != 1 for table in granted) or len({table[0] for table in granted}) != count:
        return None
    return tuple(table[0] for table in granted)


def _numbers(args: Any) -> list[int]:
    """Every integer among a step's arguments (request ids, tokens, positions)."""
    if isinstance(args, (list, tuple)):
        return [n for arg in args for n in _numbers(arg)]
    return [args] if type(args) is int else []
