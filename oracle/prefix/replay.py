"""Replaying a directed call program (oracle/program.py, the items' in oracle/prefix/programs.py) against the
model and an implementation: one loop for every item. Each step yields what it found: every check's first difference, in the order checked,
or the implementation's failure; the item's check decides which of them are its rule's."""

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from oracle.prefix.compare import ContentTracker, changed, exact_difference, length_difference, universal_difference
from oracle.difference import Difference
from oracle.program import Program, Step
from oracle.prefix.model import PrefixModel
from oracle.prefix.observation import ImplementationFailure, Observation
from oracle.prefix.rules import free_order_difference, hits_difference

_OUT_OF_STEP = ("live requests", "table length", "return value")  # after these the model cannot follow
_TAKEN_OVER = ("free order", "release order")
LOOKUP_RID = 1000  # a look-up on a shape without one admits a request numbered from here, and frees it  # the model takes the implementation's order and goes on


@dataclass
class Found:
    number: int  # 1 is the pool's creation
    op: str
    call: str
    judge: bool
    differences: list[Difference] = field(default_factory=list)
    failure: str | None = None  # the implementation raised, or its state could not be read
    taken_over: bool = False  # only the free order differed: the model took the implementation's and went on

    @property
    def out_of_step(self) -> bool:
        """The model and the implementation no longer agree on which requests live: replay stops here."""
        return self.failure is not None or any(d.aspect in _OUT_OF_STEP for d in self.differences)


def tokens_text(tokens: tuple[int, ...] | list[int]) -> str:
    """[1..8, 10]: runs of consecutive ids shortened."""
    parts, start = [], 0
    for i in range(1, len(tokens) + 1):
        if i == len(tokens) or tokens[i] != tokens[i - 1] + 1:
            run = tokens[start:i]
            parts.append(f"{run[0]}..{run[-1]}" if len(run) > 2 else ", ".join(map(str, run)))
            start = i
    return f"[{', '.join(parts)}]"


def describe(step: Step, rid: int, lookup: bool = True) -> str:
    if step.op == "start":
        blocks, block_size = step.args
        return f"KVCacheManager(block_size={block_size}, num_blocks={blocks})"
    if step.op == "lookup" and not lookup:
        return f"admit(req {LOOKUP_RID + rid}, tokens {tokens_text(step.args)}) and free it (a look-up)"
    if step.op == "admit":
        return f"admit(req {rid}, tokens {tokens_text(step.args)})"
    if step.op == "lookup":
        return f"get_computed_blocks(tokens {tokens_text(step.args)})"
    if step.op == "fork":
        return f"fork_block(req {step.args[0]} block_table[{step.args[1]}])"
    if step.op == "append":
        return f"append(req {step.args[0]}, token {step.args[1]})"
    return f"free(req {step.args[0]})"


class Replay:
    def __init__(self, program: Program, adapter: Any):
        self.program, self.impl = program, adapter
        blocks, block_size = program.steps[0].args  # the first step makes the pool
        self.model = PrefixModel(adapter.policy, blocks, block_size)
        self.content = ContentTracker()
        self.next_rid = 0
        self.made: list[tuple[Step, Any]] = []  # the calls the pool received, and what each returned

    def _call(self, step: Step, run: Callable[[], Any]) -> Any:
        self.made.append((step, None))
        got = run()
        self.made[-1] = (step, got)
        return got

    def steps(self) -> Iterator[Found]:
        """Runs the program, one Found per step (the first is the pool's creation), until it ends or the
        model can no longer follow; the adapter is closed when the loop is left."""
        try:
            for number, step in enumerate(self.program.steps, 1):
                rid, lookup = self.next_rid, "lookup" in self.impl.supports
                op = "admit" if step.op == "lookup" and not lookup else step.op
                found = Found(number, op, describe(step, rid, lookup), step.judge)
                yield self._found(found, lambda: getattr(self, f"_{step.op}")(step))
                if found.out_of_step:
                    return
        finally:
            self.impl.close()

    def _found(self, found: Found, run: Callable[[], list[Difference | None]]) -> Found:
        try:
            found.differences = [d for d in run() if d is not None]
            if found.differences and all(d.aspect in _TAKEN_OVER for d in found.differences):
                found.taken_over = self._take_over_free_order()
            elif found.op == "start" and found.differences[:1] and found.differences[0].aspect == "null block":
                found.taken_over = self._take_over_null_block()
        except ImplementationFailure as failure:
            found.failure = str(failure)
        return found

    def _take_over_null_block(self) -> bool:
        """A pool that keeps block 0 free: the model reads on as a pool without a null block."""
        seen = self.impl.observe().free
        if seen is None or sorted(seen) != sorted([0, *self.model.free]):
            return False
        self.model.policy = replace(self.model.policy, null_block=False)
        self.model.free = list(seen)
        return True

    def _take_over_free_order(self) -> bool:
        """The model reads on in the implementation's free order, when it holds the same blocks."""
        seen = self.impl.observe().free
        if seen is None or sorted(seen) != sorted(self.model.free):
            return False
        self.model.free = list(seen)
        return True

    def _checked(self, seen: Observation, rid: int | None = None, hits: set[int] = frozenset(),
                 held: set[int] = frozenset(), own: tuple[int, ...] = ()) -> list[Difference | None]:
        taken = {b for i, b in enumerate(seen.tables.get(rid, ())) if i not in hits and b not in held and b not in own}
        universal = universal_difference(self.model, seen, taken)
        if universal is not None and universal.aspect in _OUT_OF_STEP:
            return [universal]
        exact = exact_difference(self.model, seen) if self.model.policy.exact else None
        return [universal, self.content.after(self.model, seen, rid, hits, held), exact]

    def _start(self, step: Step) -> list[Difference | None]:
        self._call(step, lambda: self.impl.start(*step.args))
        return self._checked(self.impl.observe())

    def _admit(self, step: Step) -> list[Difference | None]:
        self.next_rid += 1
        return self._admit_as(self.next_rid - 1, list(step.args))

    def _admit_as(self, rid: int, tokens: list[int]) -> list[Difference | None]:
        before = self.impl.observe()
        held = {b for table in before.tables.values() for b in table}
        expected_hits = self.model.lookup(tokens)
        request = self.model.admit(rid, tokens)
        accepted, hits = self._call(Step("admit", (rid, tokens)), lambda: self.impl.admit(rid, tokens))
        policy = self.model.policy
        found = [hits_difference(len(expected_hits), hits, len(tokens), self.model.block_size, policy.hit_cap)
                 if hits is not None else None]
        if (request is not None) != accepted:
            return found + [Difference("return value", "", "accepted" if request else "refused (None)",
                                       "accepted" if accepted else "refused (None)")]
        seen = self.impl.observe()
        if request is None:
            return found + [changed(before, seen)]
        return found + self._checked(seen, rid, set(range(hits if hits is not None else len(expected_hits))), held)

    def _lookup(self, step: Step) -> list[Difference | None]:
        if "lookup" not in self.impl.supports:  # admit the tokens as a request of their own, then free it
            rid = LOOKUP_RID + self.next_rid
            found = self._admit_as(rid, list(step.args))
            if any(d is not None for d in found) or rid not in self.model.requests:
                return found
            return self._free(Step("free", (rid,)))
        tokens = list(step.args)
        expected = self.model.lookup(tokens)
        got = self._call(Step("lookup", (tokens,)), lambda: self.impl.lookup(tokens))
        size = self.model.block_size
        found = [hits_difference(len(expected), len(got), len(tokens), size, self.model.policy.hit_cap)]
        found.append(self.content.looked_up(tokens, got, size))
        if self.model.policy.exact and len(got) == len(expected) and got != expected:
            found.append(Difference("hit blocks", "", expected, got))
        return found

    def _free(self, step: Step) -> list[Difference | None]:
        (rid,) = step.args
        free_before = len(self.model.free)
        self.model.free_request(rid)
        self._call(step, lambda: self.impl.free(rid))
        found = self._checked(self.impl.observe())
        released = len(self.model.free) - free_before
        return [free_order_difference(d, released) if d is not None and d.aspect == "free order" else d for d in found]

    def _append(self, step: Step) -> list[Difference | None]:
        """A decode token: the length the pool keeps first (a stale one is why its answer is wrong), then its
        answer, then the state."""
        rid, token = step.args
        before = self.impl.observe()
        held = {b for other, table in before.tables.items() if other != rid for b in table}
        expected = self.model.append(rid, token)
        got = self._call(step, lambda: self.impl.append(rid, token))
        seen = self.impl.observe()
        found = [length_difference(self.model, seen)]
        if expected != got:
            found.append(Difference("return value", "", expected, got))
        return found + self._checked(seen, rid, set(), held, before.tables.get(rid, ()))

    def _fork(self, step: Step) -> list[Difference | None]:
        rid, position = step.args
        request = self.model.requests[rid]
        before = self.impl.observe()
        was = request.table[position]
        expected = self.model.fork(rid, position)
        got = self._call(step, lambda: self.impl.fork(rid, position))
        if (expected is None) != (got is None):
            return [Difference("return value", "", "refused (no free block)" if expected is None else "a block",
                               "refused" if got is None else f"block {got}")]
        seen = self.impl.observe()
        if expected is None:
            return [changed(before, seen)]
        self.content.content[expected] = self.content.content.get(was)  # the copy holds the same KV
        return self._checked(seen)
