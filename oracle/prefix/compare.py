"""Check an implementation's observed state: the universal invariants, then (under the system's own
policy) the exact state the model expects. Each check gives the first Difference or None."""

from oracle.difference import Difference
from oracle.prefix.model import Prefix, PrefixModel
from oracle.prefix.observation import Observation, named


def shown(prefix: Prefix | None) -> str:
    return "nothing" if prefix is None else f"the KV of tokens {list(prefix)}"


class ContentTracker:
    """Which token prefix each block's KV holds, derived from the calls and the tables the implementation
    reported, never read from it. A block a request reuses must hold exactly that request's prefix."""

    def __init__(self) -> None:
        self.content: dict[int, Prefix] = {}

    def reused(self, model: PrefixModel, seen: Observation, rid: int, positions: list[int]) -> Difference | None:
        tokens, table = model.requests[rid].tokens if rid in model.requests else [], seen.tables[rid]
        for position in positions:
            want = tuple(tokens[: (position + 1) * model.block_size])
            if self.content.get(table[position]) != want:
                return false_hit(seen, rid, position, table[position], want, self.content.get(table[position]))
        return None

    def looked_up(self, tokens: list[int], blocks: list[int], block_size: int) -> Difference | None:
        """A look-up's answer: hit `i` must hold the KV of the tokens' first i + 1 blocks."""
        for position, block in enumerate(blocks):
            want = tuple(tokens[: (position + 1) * block_size])
            if self.content.get(block) != want:
                return Difference("no false hit", f"hit {position} (block {block})", want, self.content.get(block))
        return None

    def after(self, model: PrefixModel, seen: Observation, rid: int | None, hits: set[int], held: set[int]) -> Difference | None:
        """After a call by request `rid`: its positions in `hits`, and blocks other requests `held` before the
        call, are reuses and must already hold its prefix; its other blocks now hold what it computes."""
        if rid is not None and rid in seen.tables and rid in model.requests:
            request, table = model.requests[rid], seen.tables[rid]
            reused = [i for i, b in enumerate(table) if i in hits or b in held]
            problem = self.reused(model, seen, rid, [i for i in reused if (i + 1) * model.block_size <= request.covered])
            if problem:
                return problem
            for position, block in enumerate(table):
                if position not in reused:
                    self.content[block] = model.prefix(request.tokens, position, request.covered)
        problem = self.chaining(seen)
        if problem:
            return problem
        for other, table in seen.tables.items():
            request = model.requests.get(other)
            for position, block in enumerate(table if request else ()):
                want = model.prefix(request.tokens, position, request.covered)
                if self.content.get(block) != want:
                    return false_hit(seen, other, position, block, want, self.content.get(block))
        return None


    def chaining(self, seen: Observation) -> Difference | None:
        """Equal hashes only for blocks holding equal prefixes: the hash covers the parent's."""
        first: dict[object, int] = {}
        for block, value in sorted((seen.hashes or {}).items()):
            other = first.setdefault(value, block)
            mine, theirs = self.content.get(block), self.content.get(other)
            if other != block and mine is not None and theirs is not None and mine != theirs:
                return Difference("hash chaining", f"blocks {other} and {block}",
                                  f"different hashes for {shown(theirs)} and {shown(mine)}", "the same hash")
        return None


def false_hit(seen: Observation, rid: int, position: int, block: int, want: Prefix, holds: Prefix | None) -> Difference:
    """Request `rid` holds `block` at `position` for the prefix `want`, but the block's KV was computed for
    `holds` (None: for no request the calls made). Worded by oracle/prefix/difference.py."""
    return Difference("no false hit", f"{named(seen, 'table', rid=rid)}[{position}] (block {block})", want, holds, rid)


def length_difference(model: PrefixModel, seen: Observation) -> Difference | None:
    """The length the pool keeps for each live request is the number of tokens the request holds (a stale
    one, seed 003's `len(seq)` after `append_token`, sizes its blocks wrong)."""
    for rid, request in sorted(model.requests.items()):
        got = (seen.lengths or {}).get(rid, len(request.tokens))
        if got != len(request.tokens):
            return Difference("token count", named(seen, "length", rid=rid), len(request.tokens), got, rid,
                              named(seen, "tokens", rid=rid))
    return None


def universal_difference(model: PrefixModel, seen: Observation, taken: set[int] = frozenset()) -> Difference | None:
    """The first universal difference; `taken`: the blocks the call took from the free list for a request (a
    ref count wrong on one of those is allocation's, not a hit's)."""
    null, size = model.null, model.block_size
    used = [b for table in seen.tables.values() for b in table]
    if null is not None:
        where = "free list" if seen.free and null in seen.free else "a block table" if null in used else None
        if where is None and seen.hashes and null in seen.hashes:
            where = "the hashed blocks"
        if where:
            return Difference("null block", f"block {null}", "never free, held or hashed", f"found in {where}")
    live = sorted(model.requests)
    if sorted(seen.tables) != live:
        return Difference("live requests", "", live, sorted(seen.tables))
    stale = length_difference(model, seen)
    if stale:
        return stale
    for rid in live:
        want = -(-model.requests[rid].covered // size)
        if len(seen.tables[rid]) != want:
            return Difference("table length", named(seen, "table", rid=rid) if seen.names else f"req {rid}",
                              f"{want} blocks", f"{len(seen.tables[rid])}")
    if seen.free is not None:
        free = set(seen.free)
        if len(free) != len(seen.free):
            twice = next(b for b in seen.free if seen.free.count(b) > 1)
            return Difference("conservation", f"block {twice}", "once in the free list", "twice")
        both = sorted(free & set(used))
        if both:
            return Difference("conservation", f"block {both[0]}", "free or held", "both free and held")
        lost = sorted(set(range(model.num_blocks)) - free - set(used) - {null})
        if lost:
            return Difference("conservation", f"block {lost[0]}", "free or held", "neither (leaked)")
    if seen.ref_counts is not None:
        for block in range(model.num_blocks):
            if block == null:
                continue
            derived, got = used.count(block), seen.ref_counts.get(block, 0)
            if got != derived:
                return Difference("new block ref count" if block in taken else "ref count",
                                  named(seen, "ref_count", block=block), f"{derived} ({_holders(seen, block)})", got)
    return None


def _holders(seen: Observation, block: int) -> str:
    if not seen.names:
        return "the live tables holding it"
    holders = [named(seen, "table", rid=rid) for rid, table in sorted(seen.tables.items()) if block in table]
    return f"held by {', '.join(holders)}" if holders else "no live request holds it"


def exact_difference(model: PrefixModel, seen: Observation) -> Difference | None:
    for rid, request in sorted(model.requests.items()):
        got = seen.tables[rid]
        for position, (want, have) in enumerate(zip(request.table, got)):
            if want != have:
                return Difference("block_table", f"{named(seen, 'table', rid=rid)}[{position}]", want, have)
    if seen.free is not None and list(seen.free) != model.free:
        return Difference("free order", "", model.free, list(seen.free))
    if seen.hashes is not None and set(seen.hashes) != set(model.block_hash):
        return Difference("hashed blocks", "", sorted(model.block_hash), sorted(seen.hashes))
    if seen.indexed is not None and list(seen.indexed) != model.indexed():
        return Difference("index", "the blocks it points to", model.indexed(), list(seen.indexed))
    return None


def changed(before: Observation, after: Observation) -> Difference | None:
    """A refused call must change nothing."""
    for name in ("tables", "free", "ref_counts", "hashes", "indexed"):
        if getattr(before, name) != getattr(after, name):
            return Difference("atomic failure", name, getattr(before, name), getattr(after, name))
    return None
