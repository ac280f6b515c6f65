"""A second opinion on the order a free put its blocks back in, resting on what the pool does, never on the free
queue it shows (a served pool's observe() runs in its own interpreter: the queue it shows may be made up, and made
up consistently). The program is replayed, up to and including the free, in a fresh process of the pool, then the
queue is drained by one-block admits: the blocks they are granted, in order, are the queue's order.

The drain's admits look like the program's: each is the next request in the program's admission order (the ids
the program's own next admits would get) with one new token, a round number past every number the program names
(as `admit 40` in programs/free_queue.txt), so nothing tells the drain from the program going on.

The replay must return at every call what the graded run returned, and each admit must be granted exactly one
block of its own: where not, the blocks granted before are the queue as far as the pool lets it be seen, with why
it stops there. A drain stopped short is the pool's failure at that free, never a pass (a pool that will not hand
out the blocks it holds free, or not the same way twice, cannot have its order seen, and so cannot hide it): the
free's order is judged wrong where it is judged (after the universal invariants and the tables), by the free's
rule, the release order's where the free put back more than one block (reverse_order_free), the free queue's
where it put back one (free_queue): `difference`.

Never two processes of the pool alive at once (as oracle/hw3/alone.py, for hw3's second opinions): were the graded
run's process alive meanwhile, the replay could find it (outside bubblewrap's namespaces: an abstract unix name
it bound) and know itself a second opinion. So a served pool's graded run starts in a fresh process of its own
(`alone`, at the start of each directed program: it has seen only the program's calls, as the replay has, and its
pool is the first its process makes, as the replay's is), is ended before the replay starts, and goes on in a
fresh process that replays its calls so far (their returns not judged again). Used by oracle/prefix/driver.py
(Driver.free) and oracle/prefix/checks.py."""

from contextlib import closing
from typing import Any, Callable

from oracle.difference import Difference
from oracle.prefix.observation import ImplementationFailure
from oracle.program import Step

WHERE = "as one-block admits take them, in a fresh process of the pool"  # a drained order's difference, in words

Drained = tuple[tuple[int, ...], str]  # the blocks admits took, in order; what stopped them ("": nothing)
# the calls the pool received, how many free blocks the model holds and the program's next request id -> Drained
QueueOrder = Callable[[list[tuple[Step, Any]], int, int], Drained]


def alone(graded: Any) -> None:
    """Ends the served pool's process (none in this process: nothing to end); its next call starts a fresh one."""
    end = getattr(graded, "end_process", None)
    if end is not None:
        end()


def second_opinion(graded: Any, fresh: Callable[[], Any]) -> QueueOrder:
    """queue_order on pools from `fresh` (the `graded` run's factory: a served pool's adapters share its process),
    that process ended before and after, and the graded run's calls replayed in the next one to go on
    (ImplementationFailure when that replay fails: a crash of the graded run's)."""

    def order(made: list[tuple[Step, Any]], count: int, first: int) -> Drained:
        alone(graded)
        try:
            return queue_order(fresh, made, count, first)
        finally:
            if getattr(graded, "end_process", None) is not None:
                alone(graded)
                for step, _ in made:
                    getattr(graded, step.op)(*step.args)

    return order


def queue_order(fresh: Callable[[], Any], made: list[tuple[Step, Any]], count: int, first: int) -> Drained:
    """The first `count` blocks of the free queue, in the order a fresh process's admits take them after the calls
    `made` (each with what it returned in the graded run), and what stopped the admits short of `count`. The
    admits are of requests `first`, `first` + 1, ... (the program's next ids), each of one round token past every
    number the program names."""
    past = 1 + max((n for step, _ in made for n in _numbers(step.args)), default=0)
    tokens = [-(-past // 10) * 10 + 10 * i for i in range(count)]  # round numbers past the program's, as it writes
    admitted, why = count, ""
    with closing(fresh()) as pool:
        try:
            for number, (step, returned) in enumerate(made, 1):
                if getattr(pool, step.op)(*step.args) != returned:
                    return (), f"replayed, call {number} returned otherwise than in the graded run"
        except ImplementationFailure as failure:
            return (), f"replayed, it failed: {failure}"
        try:
            for i in range(count):
                accepted, hits = pool.admit(first + i, [tokens[i]])
                if not accepted or hits:
                    admitted, why = i, "was refused" if not accepted else f"hit {hits} blocks"
                    break
            tables = pool.observe().tables
        except ImplementationFailure as failure:
            return (), f"drained, it failed: {failure}"
    order: list[int] = []
    for i in range(admitted):
        table = tables.get(first + i, ())
        if len(table) != 1 or table[0] in order:
            admitted, why = i, f"was granted {list(table)}, not one block of its own"
            break
        order.append(table[0])
    stop = "" if admitted == count else f"admit(req {first + admitted}, tokens [{tokens[admitted]}]) {why}"
    return tuple(order), stop


def difference(free: list[int], drained: Drained, released: int) -> Difference:
    """A drain stopped short as the free's order difference, by the free's rule (`free`: the model's queue;
    `released`: the blocks the free put back): the release order's where it put back more than one
    (oracle/prefix/rules.py), the free queue's where it put back one."""
    order, stop = drained
    return Difference("release order" if released > 1 else "free order", "the free queue", list(free), list(order),
                      note=f"{WHERE}; {stop}: the pool did not give back blocks it must have")


def _numbers(args: Any) -> list[int]:
    """Every integer among a step's arguments (request ids, tokens, positions)."""
    if isinstance(args, (list, tuple)):
        return [n for arg in args for n in _numbers(arg)]
    return [args] if type(args) is int else []
