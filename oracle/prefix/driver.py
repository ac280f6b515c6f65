"""One checked call at a time, for the state machine (machine.py) and the directed programs (checks.py) alike:
the model and a pool (through its adapter) make the same call, then the pool's answer and its state are checked:
the return value (accepted or refused, hits), the universal invariants (null block, live requests, table length,
conservation, derived ref counts, no false hit; a refused call changes nothing), then, under the system's own
policy, the exact tables, free order, hashed blocks and index. The first difference raises Divergence.

Under a policy that is not exact (`@any`) the machine's driver follows the pool (following.py); a directed
program is written for the policy's own choices, so its driver predicts them (`follow=False`), and judges a free's
order by the blocks the program's own later calls take (`by_takes`: oracle/prefix/taken_order.py), never by the queue
the pool shows."""

from copy import deepcopy
from dataclasses import replace
from typing import Any, Callable

from oracle.checked import Checked, Divergence
from oracle.difference import Difference
from oracle.prefix import following
from oracle.prefix.compare import ContentTracker, changed, exact_difference, length_difference, universal_difference
from oracle.prefix.model import PrefixModel
from oracle.prefix.observation import ImplementationFailure, Observation
from oracle.prefix.rules import MAY_MAKE, TAKEN_OVER, free_order_difference, hits_difference, rule_of
from oracle.prefix.taken_order import Freed, Taken, taken_order, touch_difference, touch_explains
from oracle.program import Step
from oracle.stats import RunStats


class Driver(Checked):
    failure = ImplementationFailure

    def __init__(self, adapter: Any, stats: RunStats | None = None, follow: bool = True, by_takes: bool = False):
        super().__init__(adapter, stats, lambda difference, op: rule_of(difference, op) or "")
        self.by_takes = by_takes  # a free's order from the blocks later calls take (False: from the queue shown)
        self.frees: list[Freed] = []  # what each free put back (by_takes), as long as the blocks stay free
        # the model before the last call that may take free blocks, and that call on it; the pool's takes that
        # differ from the model's, with the queue they show (by_takes)
        self.undo: tuple[PrefixModel, Callable[[PrefixModel], Any]] | None = None
        self.before_free: list[int] | None = None  # the model's free queue before that call
        self.taken: Taken | None = None
        self.guessed = False  # the model read on in a queue the takes showed only in part (take_over_free_order)
        self.model: PrefixModel | None = None
        self.follow = follow  # under a policy that is not exact, the model follows the pool
        self.content = ContentTracker()
        self.prompts: list[list[int]] = []
        self.next_rid = 0

    @property
    def following(self) -> bool:
        return self.follow and not self.model.policy.exact

    # -- one call, checked (a difference: the core's Divergence, by the operation of the call the pool received
    # last, oracle/checked.py) ---------------------------------------------------------------------------------

    def observe(self) -> Observation:
        return self.run(self.impl.observe)

    def _run(self, operation: Callable[[], Any], step: Step) -> Any:
        return self.run(operation, step=step)

    def _expect(self, problem: Difference | None) -> None:
        if problem is not None:
            self.diverge(problem)

    def _returned(self, expected: Any, got: Any, what: str = "return value") -> None:
        if expected != got:
            self.diverge(Difference(what, "", expected, got))

    def _check(self, rid: int | None = None, hits: set[int] = frozenset(), held: set[int] = frozenset(),
               before: Observation | None = None, own: tuple[int, ...] = (), released: int = 0) -> Observation:
        """After a call by request `rid` (`hits`: its positions that hit; `held`: blocks other requests held, and
        `own` its own, before the call; `before`: the state a refused call must leave as it was; `released`: the
        blocks a free put back, whose order is the release order's)."""
        seen = self.observe()
        taken = {b for i, b in enumerate(seen.tables.get(rid, ())) if i not in hits and b not in held and b not in own}
        self._expect((changed(before, seen) if before is not None else None) or
                     universal_difference(self.model, seen, taken))
        self._expect(self.content.after(self.model, seen, rid, hits, held))
        if self.model.policy.exact and self.by_takes:
            self._expect(self._taken_difference(rid, hits, seen) or
                         exact_difference(self.model, replace(seen, free=None)))  # the shown order is not read
        elif self.model.policy.exact:
            problem = self._touched_order(rid, hits, seen) or exact_difference(self.model, seen)
            self._expect(free_order_difference(problem, released) if problem and problem.aspect == "free order"
                         else problem)
        if self.following:
            following.adopt(self.model, seen)
        return seen

    def _takes(self, rid: int | None, hits: set[int],
               seen: Observation) -> tuple[list[int], list[int], list[int]] | None:
        """What the call just made took from the free queue for request `rid`: the model's queue once the call's hits
        took their blocks out of it, the model's takes and the pool's (in its table's order); None where the tables
        differ elsewhere too, or the pool's takes are not free blocks of the model, each once."""
        if self.before_free is None or rid not in self.model.requests or rid not in seen.tables:
            return None
        mine, table = self.model.requests[rid].table, seen.tables[rid]
        slots = [i for i, block in enumerate(mine) if i not in hits and block in self.before_free]  # the model's takes
        if len(table) != len(mine) or any(table[i] != mine[i] for i in range(len(mine)) if i not in slots):
            return None
        queue = [block for block in self.before_free if block not in {mine[i] for i in hits}]
        got = [table[i] for i in slots]
        if len(set(got)) != len(got) or not set(got) <= set(queue):
            return None
        return queue, [mine[i] for i in slots], got

    def _taken_difference(self, rid: int | None, hits: set[int], seen: Observation) -> Difference | None:
        """The free blocks request `rid`'s table got from the call just made, against the model's (taken_order.py)."""
        self.taken = None
        takes = self._takes(rid, hits, seen) if self.undo is not None else None
        if takes is None:
            return None
        queue, expected, got = takes
        # the call's hits took free blocks out of a queue no take has shown other than the model's: a touch may explain
        touched = len(queue) < len(self.before_free) and not self.guessed  # the takes (taken_order.touch_explains)
        self.taken = taken_order(queue, expected, got, self.frees, self.before_free if touched else None)
        return self.taken and self.taken.difference

    def _touched_order(self, rid: int | None, hits: set[int], seen: Observation) -> Difference | None:
        """Where the pool shows its queue (the fuzz): the blocks the call took, then the queue shown after it, against
        the model's, when the call's hits took free blocks out of the queue and that explains the difference
        (taken_order.touch_explains); else None, and the tables and the shown queue are compared as they are."""
        takes = self._takes(rid, hits, seen) if seen.free is not None else None
        if takes is None or len(takes[0]) == len(self.before_free):
            return None
        queue, expected, got = takes
        pool = got + [block for block in seen.free if block not in got]
        if sorted(pool) != sorted(queue) or not touch_explains(self.before_free, pool):
            return None
        return touch_difference(self.before_free, pool, expected + self.model.free, pool,
                                "the blocks this call takes from it, then the free queue it shows")

    def _may_take(self, call: Callable[[PrefixModel], Any]) -> Any:
        """`call` on the model, which is kept as it was before, for a call that may take free blocks (by_takes)."""
        self.undo = (deepcopy(self.model), call) if self.by_takes else None
        self.before_free = list(self.model.free)
        return call(self.model)

    # -- taking over after another rule's difference (the directed programs) ------------------------------

    def take_over(self, divergence: Divergence) -> bool:
        """The model reads on past another rule's difference (oracle/checked.py, replay): a free order (in the
        pool's), or a pool that keeps block 0 free (as one without a null block); never past one the rule judged
        may have made too (rules.MAY_MAKE)."""
        aspect = divergence.difference.aspect
        if self.own in MAY_MAKE.get(aspect, ()):
            return False
        try:
            if aspect in TAKEN_OVER:
                return self.take_over_free_order()
            return divergence.op == "start" and aspect == "null block" and self.take_over_null_block()
        except ImplementationFailure:
            return False

    def take_over_free_order(self) -> bool:
        """The model reads on in the pool's free queue as the last call's takes show it: the call made again on the
        model as it was before, its queue the pool's."""
        if self.taken is None or self.undo is None:
            return False
        self.model, call = self.undo
        self.model.free = list(self.taken.queue)
        call(self.model)
        self.taken, self.guessed = None, True
        return True

    def take_over_null_block(self) -> bool:
        """A pool that keeps block 0 free (at its start): the model reads on as a pool without a null block, in
        the order such a pool's free queue starts in (the order it shows is not read: a free order shows in takes)."""
        seen = self.impl.observe().free
        if seen is None or sorted(seen) != sorted([0, *self.model.free]):
            return False
        model = self.model
        model.policy = replace(model.policy, null_block=False)
        model.free = PrefixModel(model.policy, model.num_blocks, model.block_size).free
        return True

    # -- the calls ------------------------------------------------------------------------------------

    def start(self, num_blocks: int, block_size: int) -> None:
        self.call = f"start({num_blocks} blocks of {block_size} tokens)"
        self.model = PrefixModel(self.impl.policy, num_blocks, block_size)
        self._run(lambda: self.impl.start(num_blocks, block_size), Step("start", (num_blocks, block_size)))
        self._check()

    def admit(self, tokens: list[int], rid: int | None = None) -> int | None:
        """A new request of `tokens` (numbered in admission order, or `rid`): its id, or None when refused."""
        if rid is None:
            rid, self.next_rid = self.next_rid, self.next_rid + 1
        self.call = f"admit(req {rid}, {len(tokens)} tokens)"
        before = self.observe()
        before_free, before_hashed = list(self.model.free), set(self.model.block_hash)
        held = {b for table in before.tables.values() for b in table}
        if self.following:
            accepted, hits = self._run(lambda: self.impl.admit(rid, tokens), Step("admit", (rid, tokens)))
            self._expect(following.admit(self.model, rid, tokens, accepted, hits, before))
            self.prompts.append(list(tokens))
            self.stats.events["refused" if not accepted else "hit" if hits else "miss"] += 1
            self._check(rid if accepted else None, set(range(hits or 0)), held, None if accepted else before)
            return rid if accepted else None
        expected_hits = self.model.lookup(tokens)
        request = self._may_take(lambda model: model.admit(rid, tokens))
        accepted, hits = self._run(lambda: self.impl.admit(rid, tokens), Step("admit", (rid, tokens)))
        if hits is not None:
            self._expect(hits_difference(len(expected_hits), hits, len(tokens), self.model.block_size,
                                         self.model.policy.hit_cap))
        self._returned("accepted" if request else "refused (None)", "accepted" if accepted else "refused (None)")
        self.prompts.append(list(tokens))
        if request is None:
            self.stats.events["refused"] += 1
            self._check(before=before)
            return None
        self._events(before_free, before_hashed, expected_hits, len(tokens))
        self._check(rid, set(range(hits if hits is not None else len(expected_hits))), held)
        return rid

    def _events(self, before_free: list[int], before_hashed: set[int], hits: list[int], num_tokens: int) -> None:
        taken = [b for b in before_free if b not in self.model.free]
        self.stats.events["evicted_warm"] += sum(1 for b in taken if b in before_hashed
                                                 and b not in self.model.used() - set(taken))
        if not self.model.free:
            self.stats.events["pool_exhausted"] += 1
        self.stats.events["hit" if hits else "miss"] += 1
        self.stats.events["warm_hit"] += sum(1 for b in hits if b in before_free)
        if len(hits) * self.model.block_size == num_tokens:
            self.stats.events["whole_prompt_hit"] += 1

    def lookup(self, tokens: list[int]) -> None:
        self.call = f"lookup({len(tokens)} tokens)"
        expected = self.model.lookup(tokens)
        got = self._run(lambda: self.impl.lookup(tokens), Step("lookup", (tokens,)))
        size = self.model.block_size
        if self.following:
            self._expect(following.hit_bound(self.model, len(tokens), len(got)))
        else:
            self._expect(hits_difference(len(expected), len(got), len(tokens), size, self.model.policy.hit_cap))
        self._expect(self.content.looked_up(tokens, got, size))
        if self.model.policy.exact:
            self._returned(expected, got, "hit blocks")

    def append(self, rid: int, token: int) -> None:
        """A decode token: the length the pool keeps first (a stale one is why its answer is wrong), then its
        answer, then the state."""
        self.call = f"append(req {rid}, token {token})"
        before = self.observe()
        held = {b for other, table in before.tables.items() if other != rid for b in table}
        step = Step("append", (rid, token))
        if self.following:
            expected = got = self._run(lambda: self.impl.append(rid, token), step)
            self._expect(following.append(self.model, rid, token, got, before))
        else:
            expected = self._may_take(lambda model: model.append(rid, token))
            got = self._run(lambda: self.impl.append(rid, token), step)
            if before.lengths is not None:
                self._expect(length_difference(self.model, self.observe()))
            self._returned(expected, got)
        if not expected:
            self.stats.events["append_refused"] += 1
        self._check(rid, set(), held, own=before.tables.get(rid, ()))

    def commit(self, rid: int) -> None:
        self.call = f"commit(req {rid})"
        self.model.commit(rid)
        self._run(lambda: self.impl.commit(rid), Step("commit", (rid,)))
        self._check()

    def fork(self, rid: int, position: int) -> None:
        """Copy-on-write of the request's table entry at `position`."""
        self.call = f"fork(req {rid}, block_table[{position}])"
        before = self.observe()
        was = self.model.requests[rid].table[position]
        step = Step("fork", (rid, position))
        if self.following:  # the pool picks the block
            expected = got = self._run(lambda: self.impl.fork(rid, position), step)
            self._expect(following.fork(self.model, rid, position, got, before))
        else:
            expected = self.model.fork(rid, position)
            got = self._run(lambda: self.impl.fork(rid, position), step)
            if (expected is None) != (got is None):
                self.diverge(Difference("return value", "", "refused (no free block)" if expected is None else
                                        "a block", "refused" if got is None else f"block {got}"))
        if expected is None:
            self._check(before=before)
            return
        if expected != was:
            self.stats.events["cow_copy"] += 1
        self.content.content[expected] = self.content.content.get(was)  # the copy holds the same KV
        self._check()

    def copy(self, src: int, dst: int, mismatched: bool) -> None:
        """Mini-YAIE's copy_blocks from request `src`'s blocks to `dst`'s: KV moves, no table and no free block
        changes; lists of different lengths (`mismatched`) must be refused (ValueError), changing nothing."""
        self.call = f"copy_blocks(req {src}'s blocks -> req {dst}'s{', one destination more' if mismatched else ''})"
        refused = self._run(lambda: self.impl.copy(src, dst, mismatched), Step("copy", (src, dst, mismatched)))
        self._returned(mismatched, refused, "refused (ValueError)")
        self.stats.events["copy_refused" if mismatched else "copy"] += 1
        self._check()

    def free(self, rid: int) -> None:
        """Free a request, also one that is not live (never admitted, or freed already)."""
        self.call = f"free(req {rid})" if rid in self.model.requests else f"free(req {rid}, not live)"
        free_before = list(self.model.free)
        self.model.free_request(rid)
        self._run(lambda: self.impl.free(rid), Step("free", (rid,)))
        put_back = [block for block in self.model.free if block not in free_before]
        if self.by_takes and put_back:
            self.frees = [(other, [b for b in blocks if b not in put_back]) for other, blocks in self.frees]
            self.frees.append((rid, put_back))
        self._check(released=len(put_back))

    def reset(self) -> None:
        self.call = "reset()"
        expected = self.model.reset()
        got = self._run(lambda: self.impl.reset(), Step("reset"))
        self._returned(expected, got)
        self.stats.events["reset" if expected else "reset_refused"] += 1
        self._check()
