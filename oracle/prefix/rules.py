"""The rules of the lab (seed 001) the prefix rubric grades, and which rule a difference breaks: a table of
the difference's aspect and the call that made it."""

from oracle.difference import Difference

# rubric item -> the rule, in the words of the lab
RULES = {
    "free_queue": "new blocks come from the head of the free queue, each with one holder (ref_cnt 1), and a "
                  "freed block goes to its tail (least recently used first)",
    "null_block": "block 0 is the null block: reserved when the pool is made, never free, never given to a "
                  "request, never hashed",
    "hash_chaining": "a full block's hash is hash((parent hash, its tokens)): the same tokens after different "
                     "parents hash differently, and the same prefix always hashes the same (and hits)",
    "touch": "a cache hit on a free block takes it out of the free queue, from wherever it is (O(1)), and every "
             "hit adds one holder to the block's ref_cnt",
    "eviction": "a cached free block taken for new tokens loses its hash and its index entry (_maybe_evict)",
    "hit_cap": "at most (num_tokens - 1) // block_size blocks hit: one token is always left to compute",
    "atomic_allocation": "allocate_slots gives a request every block it needs, or returns None and changes "
                         "nothing (a hit on a free block counts against the free blocks)",
    "reverse_order_free": "free(request) releases its blocks in reverse order, so a chain's tail is evicted "
                          "before its head",
    "no_false_hit": "a block a request reuses holds exactly the KV of that request's own prefix: "
                    "get_computed_blocks stops at the first miss",
    "copy_on_write": "fork_block copies a shared block into a fresh block from the free queue and drops one "
                     "holder of the original; a block held once is returned as it is",
    "append": "a decode token gets a new block exactly when it starts one (allocate_slots for the new token, "
              "by the request's own token count), and the request's blocks and counts follow it; refused only "
              "when no block is free",
    "fuzz": "after every call of a random program the pool agrees with the model of the lab",
}

# (aspect, call) -> rubric item; the call "*" stands for any call without an entry of its own
_BY_ASPECT = {
    ("null block", "*"): "null_block",
    ("hash chaining", "*"): "hash_chaining",
    ("missed hits", "*"): "hash_chaining",
    ("hit blocks", "*"): "hash_chaining",
    ("no false hit", "*"): "no_false_hit",
    ("extra hits", "*"): "no_false_hit",
    ("hit cap", "*"): "hit_cap",
    ("new block ref count", "*"): "free_queue",
    ("token count", "*"): "append",
    ("return value", "append"): "append",
    ("table length", "append"): "append",
    ("ref count", "append"): "append",
    ("conservation", "append"): "append",
    ("conservation", "admit"): "touch",
    ("ref count", "admit"): "touch",
    ("conservation", "fork"): "copy_on_write",
    ("ref count", "fork"): "copy_on_write",
    ("block_table", "fork"): "copy_on_write",
    ("return value", "fork"): "copy_on_write",
    ("conservation", "*"): "free_queue",
    ("ref count", "*"): "free_queue",
    ("free order", "*"): "free_queue",
    ("block_table", "*"): "free_queue",
    ("release order", "*"): "reverse_order_free",
    ("touch order", "*"): "touch",  # a take order the call's hits on free blocks explain (taken_order.py)
    ("hashed blocks", "*"): "eviction",
    ("index", "*"): "eviction",
    ("atomic failure", "*"): "atomic_allocation",
    ("refused (ValueError)", "*"): "copy_on_write",  # Mini-YAIE's copy_blocks of lists of different lengths
    ("return value", "*"): "atomic_allocation",
    ("live requests", "*"): "atomic_allocation",
    ("table length", "*"): "atomic_allocation",
}

TAKEN_OVER = ("free order", "release order", "touch order")  # a directed program's model takes the pool's order, goes on
# the items whose rule's bug may make a difference of that aspect too, besides its own rule's: a free queue that takes
# from the end it frees to gives a free of several blocks, the only free ones, back in the opposite order; a free queue
# that puts a freed block elsewhere than its tail may leave an order a touch explains too (touch's program is written
# so that the usual ones do not: taken_order.py). A free order (taken_order.py: no reordering within each free and no
# touch explains it) neither makes. An item never reads past a difference its own rule may have made: it fails with it
MAY_MAKE = {"release order": frozenset({"free_queue"}), "touch order": frozenset({"free_queue"})}


def rule_of(difference: Difference, op: str) -> str | None:
    """The rubric item whose rule `difference`, made by a call of `op` ("admit", "fork", ...), breaks; None
    for an aspect no rule names."""
    return _BY_ASPECT.get((difference.aspect, op)) or _BY_ASPECT.get((difference.aspect, "*"))


def hits_difference(expected: int, got: int, num_tokens: int, block_size: int, cap: bool) -> Difference | None:
    """How many blocks hit, as the aspect of the rule it breaks: over the cap (where the policy has one),
    more, or fewer than expected."""
    if got == expected:
        return None
    if cap and got > expected and got > (num_tokens - 1) // block_size:
        return Difference("hit cap", "", f"{expected} hits (at most (num_tokens - 1) // block_size = "
                                         f"{(num_tokens - 1) // block_size})", got)
    aspect = "extra hits" if got > expected else "missed hits"
    return Difference(aspect, "", f"{expected} hits", got)


def free_order_difference(difference: Difference, released: int) -> Difference:
    """A free-order difference after a free: when the implementation's queue is the model's with the
    `released` blocks put back in the opposite order, it is the release order that differs."""
    expected, got = list(difference.expected), list(difference.got)
    if released > 1 and expected[:-released] + expected[-released:][::-1] == got:
        return Difference("release order", "the blocks the free put back (tail of the free queue)",
                          expected[-released:], got[-released:], note=difference.note)
    return difference
