"""The prefix-family state machine: drives an adapter and the model with the same calls and compares.

After every call: the return value (accepted or refused, hits), then the universal invariants (null block,
live requests, table length, conservation, derived ref counts, no false hit; a refused call changes
nothing), then, under the system's own policy, the exact tables, free order, hashed blocks and index.

    from oracle.prefix import load_adapter
    from oracle.prefix.machine import machine_for
    TestLab = machine_for(load_adapter("lab:engine.prefix")).TestCase
"""

from typing import Any, Callable

from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, multiple, precondition, rule

from oracle.prefix import following, strategies as st
from oracle.prefix.compare import ContentTracker, changed, exact_difference, length_difference, universal_difference
from oracle.difference import Difference
from oracle.prefix.divergence import Divergence, counted as _counted, start_rule, supports as _supports, valid as _valid
from oracle.prefix.model import PrefixModel
from oracle.prefix.observation import ImplementationFailure, Observation
from oracle.prefix.rules import hits_difference
from oracle.program import Step
from oracle.stats import RunStats

__all__ = ["Divergence", "PrefixMachine", "machine_for"]


class PrefixMachine(RuleBasedStateMachine):
    requests = Bundle("requests")  # ids that admit accepted (later calls may have freed them)
    adapter_factory: Callable[[], Any]
    stats: RunStats
    domain: st.Domain = st.Domain()

    def __init__(self) -> None:
        super().__init__()
        self.stats.examples += 1
        self.impl = self.adapter_factory()
        self.model: PrefixModel | None = None
        self.content = ContentTracker()
        self.prompts: list[list[int]] = []
        self.next_rid = 0
        self.made: list[tuple[Step, Any]] = []  # the calls the pool received, and what each returned

    # -- one call, checked --------------------------------------------------------------------------

    def _diverge(self, call: str, difference: Difference | None, text: str | None = None) -> None:
        raise Divergence(call, difference, text, made=list(self.made), adapter=self.impl)

    def _observe(self, call: str) -> Observation:
        try:
            return self.impl.observe()
        except ImplementationFailure as failure:
            self._diverge(call, None, f"{call}: {failure}")

    def _run(self, call: str, operation: Callable[[], Any], step: Step) -> Any:
        self.made.append((step, None))
        try:
            got = operation()
        except ImplementationFailure as failure:
            self._diverge(call, None, f"{call}: {failure}")
        self.made[-1] = (step, got)
        return got

    def _returned(self, call: str, what: str, expected: Any, got: Any) -> None:
        if expected != got:
            self._diverge(call, Difference(what, "", expected, got))

    def _hits(self, call: str, expected: int, got: int, num_tokens: int) -> None:
        """How many blocks hit, as the aspect of the rule it breaks (oracle/prefix/rules.py)."""
        problem = hits_difference(expected, got, num_tokens, self.model.block_size, self.model.policy.hit_cap)
        if problem:
            self._diverge(call, problem)

    def _check(self, call: str, rid: int | None = None, hits: set[int] = frozenset(), held: set[int] = frozenset(),
               before: Observation | None = None, own: tuple[int, ...] = ()) -> Observation:
        """After a call by request `rid` (`hits`: its positions that hit; `held`: blocks other requests held, and
        `own` its own, before the call; `before`: the state a refused call must leave as it was)."""
        seen = self._observe(call)
        taken = {b for i, b in enumerate(seen.tables.get(rid, ())) if i not in hits and b not in held and b not in own}
        problem = (changed(before, seen) if before is not None else None) or universal_difference(self.model, seen, taken)
        problem = problem or self.content.after(self.model, seen, rid, hits, held)
        if not problem and self.model.policy.exact:
            problem = exact_difference(self.model, seen)
        if problem:
            self._diverge(call, problem)
        if not self.model.policy.exact:
            following.adopt(self.model, seen)
        return seen

    def _events(self, before_free: list[int], before_hashed: set[int]) -> None:
        taken = [b for b in before_free if b not in self.model.free]
        self.stats.events["evicted_warm"] += sum(1 for b in taken if b in before_hashed and b not in self.model.used() - set(taken))
        if not self.model.free:
            self.stats.events["pool_exhausted"] += 1

    # -- rules --------------------------------------------------------------------------------------

    start = start_rule(st.Domain())  # machine_for makes it the adapter's domain's

    def _start(self, num_blocks: int, block_size: int) -> None:
        # a replayed (shrunk) program may ask for a pool the adapter does not support: such a program is invalid
        _valid(self.domain.holds(num_blocks, block_size))
        self.model = PrefixModel(self.impl.policy, num_blocks, block_size)
        call = f"start({num_blocks} blocks of {block_size} tokens)"
        self._run(call, lambda: self.impl.start(num_blocks, block_size), Step("start", (num_blocks, block_size)))
        self._check(call)

    def _prompt(self, base: int, cut: str, count: int, tail: list[int]) -> list[int]:
        """An earlier prompt cut at a block boundary (or one token either side, or whole), then `tail`."""
        size = self.model.block_size
        head = self.prompts[base % len(self.prompts)] if self.prompts else []
        keep = {"blocks": count * size, "blocks_minus_one": count * size - 1, "blocks_plus_one": count * size + 1,
                "whole": len(head), "none": 0}[cut]
        tokens = head[: max(keep, 0)] + tail
        return tokens or [0]

    def _admit(self, tokens: list[int]) -> int | None:
        _valid(bool(tokens))  # the strategies never make an empty prompt; a shrunk replay that does is not valid
        rid = self.next_rid
        self.next_rid += 1
        call = f"admit(req {rid}, {len(tokens)} tokens)"
        before = self._observe(call)
        before_free, before_hashed = list(self.model.free), set(self.model.block_hash)
        held = {b for table in before.tables.values() for b in table}
        if not self.model.policy.exact:
            return self._admit_following(call, rid, tokens, before, held)
        expected_hits = self.model.lookup(tokens)
        request = self.model.admit(rid, tokens)
        accepted, hits = self._run(call, lambda: self.impl.admit(rid, tokens), Step("admit", (rid, tokens)))
        if hits is not None:
            self._hits(call, len(expected_hits), hits, len(tokens))
        self._returned(call, "return value", "accepted" if request else "refused", "accepted" if accepted else "refused")
        self.prompts.append(list(tokens))
        if request is None:
            self.stats.events["refused"] += 1
            self._check(call, before=before)
            return None
        self._events(before_free, before_hashed)
        self.stats.events["hit" if expected_hits else "miss"] += 1
        self.stats.events["warm_hit"] += sum(1 for b in expected_hits if b in before_free)
        if len(expected_hits) * self.model.block_size == len(tokens):
            self.stats.events["whole_prompt_hit"] += 1
        self._check(call, rid, set(range(hits if hits is not None else len(expected_hits))), held)
        return rid

    def _admit_following(self, call: str, rid: int, tokens: list[int], before: Observation, held: set[int]) -> int | None:
        accepted, hits = self._run(call, lambda: self.impl.admit(rid, tokens), Step("admit", (rid, tokens)))
        problem = following.admit(self.model, rid, tokens, accepted, hits, before)
        if problem:
            self._diverge(call, problem)
        self.prompts.append(list(tokens))
        self.stats.events["refused" if not accepted else "hit" if hits else "miss"] += 1
        self._check(call, rid if accepted else None, set(range(hits or 0)), held, None if accepted else before)
        return rid if accepted else None

    @rule(target=requests, base=st.earlier, cut=st.cuts, count=st.block_counts, tail=st.tails)
    @_counted
    def admit(self, base: int, cut: str, count: int, tail: list[int]) -> Any:
        rid = self._admit(self._prompt(base, cut, count, tail))
        return multiple() if rid is None else rid

    @rule(target=requests, base=st.earlier, slack=st.fill_slack)
    @_counted
    def admit_filling_pool(self, base: int, slack: int) -> Any:
        """A prompt that needs every free block exactly (slack 0), one token less, or one block too many."""
        size = self.model.block_size
        length = max(1, len(self.model.free) * size - slack)
        head = self.prompts[base % len(self.prompts)] if self.prompts else []
        rid = self._admit((head + [1] * length)[:length])
        return multiple() if rid is None else rid

    @rule(target=requests, rid=requests, count=st.prefix_blocks)
    @_counted
    def admit_cached_prefix(self, rid: int, count: int) -> Any:
        """A prompt equal to the first full blocks of a live request: the hit cap makes its last block a
        duplicate of a cached one."""
        request = self.model.requests.get(rid)
        full = len(request.tokens) // self.model.block_size if request else 0
        if not full:
            return multiple()
        new = self._admit(request.tokens[: min(count, full) * self.model.block_size])
        return multiple() if new is None else new

    @precondition(_supports("lookup"))
    @rule(rid=requests, tail=st.tails)
    @_counted
    def lookup_live(self, rid: int, tail: list[int]) -> None:
        """Look up what a live (or freed) request holds, and more."""
        request = self.model.requests.get(rid)
        self._lookup(list(request.tokens if request else self.prompts[rid % len(self.prompts)]) + tail or [0])

    @rule(count=st.evictions)
    @_counted
    def evict(self, count: int) -> None:
        """Pressure: a request of tokens no other request has (so it hits nothing) takes `count` blocks from the head
        of the free list (0: all of them), evicting the warm blocks there, and is freed at once."""
        self._pressure(count)

    def _pressure(self, count: int) -> None:
        blocks = len(self.model.free) if count == 0 else min(count, len(self.model.free))
        rid = self._admit([100 + self.next_rid] * max(1, blocks * self.model.block_size))  # hits nothing
        if rid is not None:
            self._free(rid)

    @rule(rid=requests)
    @_counted
    def evict_then_hit(self, rid: int) -> None:
        """A warm block evicted just before a request hits past it: a prompt equal to a live request's first
        block (under the hit cap, a duplicate entry for it) is freed, pressure evicts it, then the live
        request's prompt is looked up (or admitted, where there is no look-up) again. The request needs two
        full blocks (a head to evict, a block past it): a drawn one too short stands for another live one
        that has them, else for one admitted from its prompt for the while."""
        size, request, own = self.model.block_size, self.model.requests.get(rid), None
        if request is None or len(request.tokens) < 2 * size:
            long = [r for r in self.model.requests.values() if len(r.tokens) >= 2 * size]
            own = None if long else self._admit(((request.tokens if request else []) + [1] * 2 * size)[: 2 * size])
            request = long[rid % len(long)] if long else self.model.requests.get(own)
        if request is None:
            return
        duplicate = self._admit(request.tokens[:size])
        if duplicate is not None:
            self._free(duplicate)
        self._pressure(0)
        if "lookup" in self.impl.supports:
            self._lookup(list(request.tokens) + [0])
        else:
            again = self._admit(list(request.tokens) + [0])
            if again is not None:
                self._free(again)
        if own is not None:
            self._free(own)

    @precondition(_supports("lookup"))
    @rule(base=st.earlier, cut=st.cuts, count=st.block_counts, tail=st.tails)
    @_counted
    def lookup(self, base: int, cut: str, count: int, tail: list[int]) -> None:
        self._lookup(self._prompt(base, cut, count, tail))

    def _lookup(self, tokens: list[int]) -> None:
        call = f"lookup({len(tokens)} tokens)"
        expected = self.model.lookup(tokens)
        got = self._run(call, lambda: self.impl.lookup(tokens), Step("lookup", (tokens,)))
        if self.model.policy.exact:
            self._hits(call, len(expected), len(got), len(tokens))
        elif following.hit_bound(self.model, len(tokens), len(got)):
            self._diverge(call, following.hit_bound(self.model, len(tokens), len(got)))
        problem = self.content.looked_up(tokens, got, self.model.block_size)
        if problem:
            self._diverge(call, problem)
        if self.model.policy.exact:
            self._returned(call, "hit blocks", expected, got)

    def _live(self, rid: int) -> bool:
        request = self.model.requests.get(rid)
        return request is not None and request.covered == len(request.tokens)

    @precondition(_supports("append"))
    @rule(rid=requests, token=st.tokens)
    @_counted
    def append(self, rid: int, token: int) -> None:
        if not self._live(rid):
            return
        call = f"append(req {rid}, token {token})"
        before = self._observe(call)
        held = {b for other, table in before.tables.items() if other != rid for b in table}
        step = Step("append", (rid, token))
        if not self.model.policy.exact:
            expected = got = self._run(call, lambda: self.impl.append(rid, token), step)
            problem = following.append(self.model, rid, token, got, before)
            if problem:
                self._diverge(call, problem)
        else:
            expected = self.model.append(rid, token)
            got = self._run(call, lambda: self.impl.append(rid, token), step)
            stale = length_difference(self.model, self._observe(call)) if before.lengths is not None else None
            if stale:  # the length the pool decides by, before what it decided
                self._diverge(call, stale)
            self._returned(call, "return value", expected, got)
        if not expected:
            self.stats.events["append_refused"] += 1
        self._check(call, rid, set(), held, own=before.tables.get(rid, ()))

    @precondition(_supports("commit"))
    @rule(rid=requests)
    @_counted
    def commit(self, rid: int) -> None:
        if not self._live(rid):
            return
        call = f"commit(req {rid})"
        self.model.commit(rid)
        self._run(call, lambda: self.impl.commit(rid), Step("commit", (rid,)))
        self._check(call)

    @precondition(lambda self: bool({"fork", "copy"} & self.impl.supports))
    @rule(rid=requests, position=st.positions)
    @_counted
    def fork(self, rid: int, position: int) -> None:
        """Copy-on-write of a table entry, a shared one when the request has any; on a shape with
        copy_blocks and no fork (Mini-YAIE), a copy between two live requests' blocks instead."""
        if "fork" not in self.impl.supports:
            return self._copy(rid, position)
        sharing = [r for r, req in self.model.requests.items() if any(self.model.ref_count(b) > 1 for b in req.table)]
        if rid not in sharing and sharing:
            rid = sharing[rid % len(sharing)]  # the drawn request shares nothing: one that does
        request = self.model.requests.get(rid)
        if request is None or not request.table:
            return
        shared = [i for i, b in enumerate(request.table) if self.model.ref_count(b) > 1]
        position = shared[position % len(shared)] if shared else position % len(request.table)
        call = f"fork(req {rid}, block_table[{position}])"
        before = self._observe(call)
        was = request.table[position]
        if self.model.policy.exact:
            expected = self.model.fork(rid, position)
            got = self._run(call, lambda: self.impl.fork(rid, position), Step("fork", (rid, position)))
            self._returned(call, "return value", "refused" if expected is None else "a block",
                           "refused" if got is None else "a block")
        else:  # under @any the pool picks the block
            expected = got = self._run(call, lambda: self.impl.fork(rid, position), Step("fork", (rid, position)))
            problem = following.fork(self.model, rid, position, got, before)
            if problem:
                self._diverge(call, problem)
        if expected is None:
            self._check(call, before=before)
            return
        if expected != was:
            self.stats.events["cow_copy"] += 1
        self.content.content[expected] = self.content.content.get(was)  # the copy holds the same KV
        self._check(call)

    def _copy(self, src: int, position: int) -> None:
        """Mini-YAIE's copy_blocks from request `src`'s blocks to another live request's (the `position`-th,
        cyclically): KV moves, no table and no free block changes. Every fourth position gives lists of
        different lengths, which must be refused (ValueError), changing nothing."""
        live = sorted(self.model.requests)
        if src not in self.model.requests or not live:
            return
        dst, mismatched = live[position % len(live)], position % 4 == 3
        call = f"copy_blocks(req {src}'s blocks -> req {dst}'s{', one destination more' if mismatched else ''})"
        refused = self._run(call, lambda: self.impl.copy(src, dst, mismatched), Step("copy", (src, dst, mismatched)))
        self._returned(call, "refused (ValueError)", mismatched, refused)
        self.stats.events["copy_refused" if mismatched else "copy"] += 1
        self._check(call)

    @rule(rid=consumes(requests))
    @_counted
    def free(self, rid: int) -> None:
        self._free(rid)

    def _free(self, rid: int) -> None:
        call = f"free(req {rid})"
        self.model.free_request(rid)
        self._run(call, lambda: self.impl.free(rid), Step("free", (rid,)))
        self._check(call)

    @rule(rid=st.positions)
    @_counted
    def free_unknown(self, rid: int) -> None:
        """Misuse: free an id that was never admitted, or was freed already (a double free)."""
        if rid in self.model.requests:
            return
        self.stats.events["double_free" if rid < self.next_rid else "unknown_free"] += 1
        call = f"free(req {rid}, not live)"
        self.model.free_request(rid)
        self._run(call, lambda: self.impl.free(rid), Step("free", (rid,)))
        self._check(call)

    @precondition(_supports("reset"))
    @rule(now=st.rarely)
    @_counted
    def reset(self, now: bool) -> None:
        if not now:
            return
        call = "reset()"
        expected = self.model.reset()
        got = self._run(call, lambda: self.impl.reset(), Step("reset"))
        self._returned(call, "return value", expected, got)
        self.stats.events["reset" if expected else "reset_refused"] += 1
        self._check(call)

    def teardown(self) -> None:
        self.impl.close()


def machine_for(adapter_factory: Callable[[], Any], stats: RunStats | None = None) -> type[PrefixMachine]:
    """A machine class bound to an implementation; `stats` collects what its runs fire and reach. The
    factory's `domain` (load_adapter sets it from the adapter class) says which pools to make."""
    domain = getattr(adapter_factory, "domain", None) or st.Domain()
    return type(
        "PrefixMachine",
        (PrefixMachine,),
        {"adapter_factory": staticmethod(adapter_factory), "stats": stats if stats is not None else RunStats(),
         "domain": domain, "start": start_rule(domain)},
    )
