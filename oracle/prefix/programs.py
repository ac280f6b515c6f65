"""The directed call programs of the prefix family's rubric, as data (oracle/program.py): one per rule of the
lab (seed 001), keyed by its rubric item.

A program's first step makes the pool (`start(blocks, block_size)`); request ids are given in admission order
(the first `admit` is request 0). Steps marked `judge` are the ones that exercise the program's own rule: an
item whose program another rule's bug stops before any of them earns nothing (it checked nothing of its own).
Each program keeps clear of the other rules' edge cases, so another rule's bug rarely reaches it.

Each step's arguments: start (blocks, block_size); admit and lookup, the tokens; free (rid,); fork (rid,
position in its table); append (rid, token).
"""

from oracle.program import Program, Step


def start(blocks: int, block_size: int, judge: bool = False) -> Step:
    return Step("start", (blocks, block_size), judge=judge)


def run(first: int, count: int) -> tuple[int, ...]:
    """`count` consecutive token ids from `first`."""
    return tuple(range(first, first + count))


def admit(*tokens: int, judge: bool = False) -> Step:
    return Step("admit", tokens, judge=judge)


def free(rid: int, judge: bool = False) -> Step:
    return Step("free", (rid,), judge=judge)


def lookup(*tokens: int, judge: bool = False) -> Step:
    return Step("lookup", tokens, judge=judge)


def fork(rid: int, position: int, judge: bool = False) -> Step:
    return Step("fork", (rid, position), judge=judge)


def append(rid: int, token: int, judge: bool = False) -> Step:
    return Step("append", (rid, token), judge=judge)


BY_ITEM = {
    # Blocks come from the free queue's head; a freed block goes to its tail (one-block requests, so the
    # order inside one request's release is not this program's business).
    "free_queue": Program("free queue", (
        start(6, 4),
        admit(*run(1, 4), judge=True),  # req 0: block 1
        admit(*run(10, 4), judge=True),  # req 1: block 2
        admit(*run(20, 3), judge=True),  # req 2: block 3 (partial)
        free(1, judge=True),  # block 2 to the tail
        free(0, judge=True),  # block 1 after it
        admit(*run(30, 12), judge=True),  # 3 blocks from the head: 4, 5, then 2 (evicted)
        admit(40, judge=True),  # the last free block: 1
    )),
    "null_block": Program("null block", (
        start(4, 4, judge=True),
        admit(*run(1, 12), judge=True),  # every usable block: 1, 2, 3, never 0
        free(0, judge=True),
        admit(*run(50, 9), judge=True),
        admit(60, judge=True),  # refused: block 0 is not free
    )),
    # The same four tokens after different parents must hash differently (no hit walks past a miss here),
    # and the same prefix must hash the same (it hits).
    "hash_chaining": Program("hash chaining", (
        start(8, 4),
        admit(*run(1, 8), 9),  # req 0: blocks for [1..4] and [1..8]
        admit(*[9, 9, 9, 9], *run(5, 4), 0, judge=True),  # req 1: [5..8] after another parent: a new hash
        lookup(*run(1, 8), 7, judge=True),  # the same prefix: 2 hits
        admit(*run(1, 8), 7, judge=True),  # req 2: hits both
    )),
    # A hit on a free (warm) block takes it out of the free queue, from wherever it is; every hit adds one holder.
    "touch": Program("touch", (
        start(6, 4),
        admit(*run(1, 8), 9),  # req 0: blocks 1, 2, 3
        free(0),  # free queue: 4, 5, 3, 2, 1
        admit(*run(1, 8), 10, judge=True),  # req 1: hits 1 and 2 out of the queue's middle and tail
        admit(*run(1, 8), 11, judge=True),  # req 2: hits them again: each has two holders
        free(1, judge=True),
        free(2, judge=True),
    )),
    # A cached free block taken for new tokens loses its hash and its index entry.
    "eviction": Program("eviction", (
        start(4, 4),
        admit(*run(1, 4), 5),  # req 0: block 1 cached for [1..4]
        free(0),
        admit(*run(50, 12), judge=True),  # req 1: takes every free block, 1 among them: evicted
        free(1, judge=True),
        lookup(*run(1, 4), 5, judge=True),  # nothing cached for [1..4] any more
    )),
    # At most (num_tokens - 1) // block_size blocks hit: one token is always left to compute.
    "hit_cap": Program("hit cap", (
        start(6, 4),
        admit(*run(1, 8)),  # req 0: two full blocks, both cached
        lookup(*run(1, 8), judge=True),  # 8 tokens: 1 hit at most
        admit(*run(1, 8), judge=True),  # req 1: the same prompt: 1 hit, the last block computed again
        lookup(*run(1, 4), judge=True),  # 4 tokens: no hit at all
        lookup(*run(1, 8), 0, judge=True),  # 9 tokens: 2 hits
    )),
    # allocate_slots gives a request every block it needs, or returns None and changes nothing.
    "atomic_allocation": Program("atomic allocation", (
        start(5, 4),
        admit(*run(1, 4), 5),  # req 0: blocks 1, 2; block 1 cached for [1..4]
        free(0),  # free queue: 3, 4, 2, 1
        admit(*run(70, 5)),  # req 1: blocks 3, 4; free: 2, 1
        admit(*run(1, 4), 5, 6, 7, 8, 9, judge=True),  # hits block 1 (free) and needs 2 more: only 1 left: refused
        admit(*run(80, 8), judge=True),  # req 3: the 2 free blocks
        admit(90, judge=True),  # refused: nothing free
        free(3, judge=True),
        free(1, judge=True),
        admit(*run(1, 4), 5, 6, 7, 8, 9, judge=True),  # req 5: now it fits
    )),
    # free(request) releases its blocks in reverse order: a chain's tail is evicted before its head.
    "reverse_order_free": Program("reverse-order free", (
        start(6, 4),
        admit(*run(1, 13), judge=True),  # req 0: blocks 1, 2, 3, 4
        free(0, judge=True),  # free queue: 5, then 4, 3, 2, 1
        admit(*run(20, 17), judge=True),  # req 1: takes them in that order
    )),
    # A hit block holds exactly the KV of the request's own prefix: the walk stops at the first miss. Block 1
    # (for [1..4]) is evicted while block 2 (for [1..8]) is still cached: [1..8] must not hit block 2 first.
    "no_false_hit": Program("no false hit", (
        start(9, 4),
        admit(*run(1, 8), 9),  # req 0: blocks 1, 2, 3
        admit(*run(1, 8), 10),  # req 1: hits 1 and 2, and block 4
        fork(1, 0),  # req 1 copies block 1 (copy-on-write, into 5): block 1 is req 0's alone
        free(0),  # releases 3 and 1 (block 2 is still req 1's): free queue 6, 7, 8, 3, 1
        admit(*run(60, 16)),  # req 2: takes 6, 7, 8, 3 ...
        admit(*run(70, 4)),  # req 3: ... and 1: evicted
        lookup(*run(1, 8), 11, judge=True),  # [1..4] misses: no hit, although [1..8] is cached
        free(2),
        admit(*run(1, 8), 12, judge=True),  # req 4: no hit either
        lookup(*run(1, 8), 9, judge=True),  # now both hit, on req 4's blocks
    )),
    # fork_block copies a shared block into a fresh one and drops one holder of the original; a block held
    # once is written in place.
    "copy_on_write": Program("copy-on-write", (
        start(6, 4),
        admit(*run(1, 4), 5),  # req 0: blocks 1, 2
        admit(*run(1, 4), 6),  # req 1: hits block 1: [1, 3]
        fork(1, 0, judge=True),  # shared: copied into block 4
        fork(0, 0, judge=True),  # block 1 is req 0's alone now: no copy
        admit(*run(1, 4), 7),  # req 2: hits block 1 again; the last free block
        fork(2, 0, judge=True),  # shared, but nothing is free: refused, nothing changes
        free(0, judge=True),
        fork(2, 0, judge=True),  # held once now: no copy
    )),
    # A decode token gets a new block exactly when it starts one, by the request's own token count (seed 003's
    # stale `len(seq)` after `append_token` is caught at the first append); refused only when nothing is free.
    # Whole-block prompts: a pool's partial-block bug is another rule's.
    "append": Program("append", (
        start(3, 2),
        admit(1, 2),  # req 0: one full block
        append(0, 3, judge=True),  # starts its second block: a new one
        append(0, 4, judge=True),  # fills it
        append(0, 5, judge=True),  # a third block: the last free one, or none (a null block): refused
        free(0, judge=True),
    )),
}


# The programs of items whose own program needs an operation the target lacks: `program_for` picks one.
#
# Without fork, a chain's tail can still be cached while its head is not: the hit cap makes a second block for
# [1..4] (a prompt of exactly one block may not hit), the index then points at the newer one (last writer) and
# evicting it leaves [1..8]'s block cached behind a miss. Where the index keeps both (vLLM's multimap, first
# wins) the head stays cached, and the same steps check the hits are the right ones. Every block that is
# reused for new tokens (steps 4 and 9) would keep a stale entry where eviction forgets it: the admissions and
# look-ups after them hit it if it is there. Spare blocks keep a look-up that a shape lacks (replayed as an
# admission and a free) from being refused.
WITHOUT_FORK = {
    "no_false_hit": Program("no false hit", (
        start(14, 4),
        admit(*run(1, 8), 9),  # req 0: blocks 1, 2, 3 ([1..4], [1..8] cached)
        admit(*run(1, 4)),  # req 1: no hit (the cap); [1..4] cached again, in block 4
        free(1),  # block 4 to the tail: free queue 5..13, 4
        admit(*run(20, 40)),  # req 2: takes 5..13 and 4: [1..4]'s newer block evicted
        free(2),  # its blocks back, tail first: 4, 13, ..., 5
        lookup(*run(1, 8), 10, judge=True),  # [1..4] misses (last writer) or hits block 1 (multimap): never 4
        admit(*run(1, 8), 10, judge=True),  # req 3: the same
        free(0),  # 3, 2, 1 to the tail when req 3 does not hold them
        free(3),
        admit(*run(100, 36)),  # req 4: takes every block but the last three freed
        lookup(*run(1, 8), 11, judge=True),
        admit(*run(1, 8), 11, judge=True),  # req 5
        lookup(*run(1, 8), 12, judge=True),
        free(4),
        free(5),  # every block free again
        admit(*[7] * 8, 9),  # req 6: [7, 7, 7, 7] twice: the second block's own tokens equal the first's
        free(6),  # its blocks back, tail first
        admit(*run(200, 44)),  # req 7 takes the blocks freed before req 6's
        admit(*[8] * 4, *[7] * 4),  # req 8: the next two, req 6's [7..7, 7..7] block among them, after [8, 8, 8, 8]
        free(7),
        admit(*[7] * 8, 5, judge=True),  # req 9: [7] * 8 was cached; the block that held it now holds
        lookup(*[7] * 8, 6, judge=True),  # [8, 8, 8, 8, 7, 7, 7, 7], its own tokens unchanged
    )),
}


def program_for(item: str, supports: frozenset[str] | set[str]) -> Program:
    """The directed program of `item` for a target with the optional operations `supports`: its own, or the one
    that does without an operation the target lacks."""
    program = BY_ITEM[item]
    lacking = program.ops - {"start", "admit", "free", "lookup"} - set(supports)
    return WITHOUT_FORK[item] if lacking == {"fork"} and item in WITHOUT_FORK else program
