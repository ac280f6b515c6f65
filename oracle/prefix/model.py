"""The model of a prefix-caching block pool, independent of every implementation.

Requests are plain token lists; ref counts are derived from the live tables; every block carries the exact
token prefix its KV holds (`content`); the free order is a plain list (index 0 is taken next) and the index
a plain dict from a block's full token prefix (a perfect chained hash) to the blocks published under it.
What differs between systems is a Policy.
"""

from dataclasses import dataclass, field

from oracle.prefix.policy import Policy

Prefix = tuple[int, ...]


@dataclass
class Request:
    tokens: list[int]
    table: list[int] = field(default_factory=list)
    covered: int = 0  # tokens that have a slot
    computed: int = 0  # tokens whose KV is committed
    published: int = 0  # leading blocks already offered to the index
    hits: int = 0  # blocks reused at admission


class PrefixModel:
    def __init__(self, policy: Policy, num_blocks: int, block_size: int):
        self.policy, self.num_blocks, self.block_size = policy, num_blocks, block_size
        first = 1 if policy.null_block else 0
        ids = list(range(first, num_blocks))
        self.free: list[int] = ids[::-1] if policy.initial_order == "descending" else ids
        self.index: dict[Prefix, list[int]] = {}
        self.block_hash: dict[int, Prefix] = {}  # blocks that carry a hash
        self.content: dict[int, Prefix] = {}  # the token prefix whose KV the block holds
        self.requests: dict[int, Request] = {}

    # -- derived facts ------------------------------------------------------------------------------

    @property
    def null(self) -> int | None:
        return 0 if self.policy.null_block else None

    def ref_count(self, block: int) -> int:
        return sum(r.table.count(block) for r in self.requests.values())

    def used(self) -> set[int]:
        return {b for r in self.requests.values() for b in r.table}

    def indexed(self) -> list[int]:
        return sorted(b for blocks in self.index.values() for b in blocks)

    def prefix(self, tokens: list[int], position: int, covered: int) -> Prefix:
        return tuple(tokens[: min((position + 1) * self.block_size, covered)])

    # -- the prefix cache -----------------------------------------------------------------------------

    def lookup(self, tokens: list[int]) -> list[int]:
        """The blocks a new request with these tokens would reuse, under the policy's rules."""
        if not self.policy.caching:
            return []
        full = len(tokens) // self.block_size
        cap = (len(tokens) - 1) // self.block_size if self.policy.hit_cap else full
        hits: list[int] = []
        for position in range(cap):
            key = self.prefix(tokens, position, len(tokens))
            blocks = self.index.get(key)
            if not blocks:
                break
            block = blocks[0]
            if self.policy.verify_tokens and self.block_hash.get(block, ())[-self.block_size :] != key[-self.block_size :]:
                break
            hits.append(block)
        return hits

    def _take(self, block: int) -> None:
        """A free block leaves the free list for new content: its old hash goes (and, by policy, its entry)."""
        self.free.remove(block)
        old = self.block_hash.pop(block, None)
        if old is not None and self.policy.evict_on_reuse and block in self.index.get(old, []):
            self.index[old].remove(block)
            if not self.index[old]:
                del self.index[old]
        self.content.pop(block, None)

    def _publish(self, request: Request, upto: int) -> None:
        """Offer full blocks [published, upto) of the request to the index, under the duplicate rule."""
        for position in range(request.published, upto):
            block = request.table[position]
            key = self.prefix(request.tokens, position, request.covered)
            if block in self.block_hash:
                continue
            holders = self.index.get(key, [])
            if holders and self.policy.duplicates == "give_back":
                request.table[position] = holders[0]  # the indexed block is reused; this one goes back
                self._release([block])
                continue
            self.block_hash[block] = key
            if self.policy.duplicates == "first":
                self.index.setdefault(key, []).append(block)
            else:
                self.index[key] = [block]
        request.published = max(request.published, upto)

    def _release(self, blocks: list[int]) -> None:
        """Blocks whose last holder let go go back to the free list, where and how the policy says."""
        front: list[int] = []
        for block in blocks:
            if block in self.used():
                continue
            if not self.policy.warm:
                self._unhash(block, keep_hash=self.policy.cold_keeps_hash)
            if self.policy.free_order == "lifo":
                self.free.insert(0, block)
            elif self.policy.free_order == "unhashed_front" and block not in self.block_hash:
                front.append(block)
            else:
                self.free.append(block)
        self.free[:0] = front
        if self.policy.free_order == "sorted":
            self.free.sort()

    def _unhash(self, block: int, keep_hash: bool = False) -> None:
        old = self.block_hash.get(block) if keep_hash else self.block_hash.pop(block, None)
        if old is not None and block in self.index.get(old, []):
            self.index[old].remove(block)
            if not self.index[old]:
                del self.index[old]

    # -- the calls --------------------------------------------------------------------------------------

    def fits(self, tokens: list[int], hits: list[int], have: int) -> bool:
        needed = -(-len(tokens) // self.block_size) - have
        if self.policy.admission == "all_blocks":
            return needed <= len(self.free)
        from_free = sum(1 for b in hits if b in self.free)
        return needed - len(hits) <= len(self.free) - from_free

    def admit(self, rid: int, tokens: list[int]) -> Request | None:
        """Allocate a new request's whole prompt, reusing what the cache holds. None: refused, nothing changed."""
        hits = self.lookup(tokens)
        if not self.fits(tokens, hits, 0):
            return None
        request = Request(list(tokens), hits=len(hits))
        self.requests[rid] = request
        for block in hits:
            if block in self.free:
                self.free.remove(block)  # a hit on a warm block: out of the middle of the free list
            request.table.append(block)
        request.published = len(hits)
        request.computed = len(hits) * self.block_size
        self._grow(request, len(tokens))
        return request

    def _grow(self, request: Request, covered: int) -> None:
        needed = -(-covered // self.block_size)
        request.covered = covered
        while len(request.table) < needed:
            block = self.free[0]
            self._take(block)
            request.table.append(block)
        for position in range(request.hits, needed):
            self.content[request.table[position]] = self.prefix(request.tokens, position, covered)
        if self.policy.caching and self.policy.publish == "allocation":
            self._publish(request, covered // self.block_size)

    def append(self, rid: int, token: int) -> bool:
        """A decode token: room for one more. False: no free block for it (the token is kept, unslotted)."""
        request = self.requests[rid]
        request.tokens.append(token)
        if len(request.table) * self.block_size < len(request.tokens) and not self.free:
            return False
        self._grow(request, len(request.tokens))
        return True

    def commit(self, rid: int) -> None:
        """The forward pass ran: every slotted token's KV is computed (and published, where that is when)."""
        request = self.requests[rid]
        request.computed = request.covered
        if self.policy.caching and self.policy.publish == "compute":
            self._publish(request, request.computed // self.block_size)

    def fork(self, rid: int, position: int) -> int | None:
        """Copy-on-write of one table entry: a shared block is copied into a fresh one. None: no free block."""
        request = self.requests[rid]
        block = request.table[position]
        if self.ref_count(block) <= 1:
            return block
        if not self.free:
            return None
        copy = self.free[0]
        self._take(copy)
        request.table[position] = copy
        self.content[copy] = self.content[block]
        return copy

    def free_request(self, rid: int) -> None:
        """Release a request's blocks (an unknown or freed id changes nothing)."""
        request = self.requests.pop(rid, None)
        if request is None:
            return
        blocks = request.table[::-1] if self.policy.release_order == "reverse" else list(request.table)
        self._release(blocks)

    def reset(self) -> bool:
        """Forget every hash; refused while any request holds a block."""
        if self.used():
            return False
        self.index.clear()
        self.block_hash.clear()
        return True
