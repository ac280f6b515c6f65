"""Policies: where the prefix-caching systems differ by design, one named value per system.

The universal invariants (conservation, derived ref counts, the null block, table length, no false hit,
atomic failure) hold under every policy; block ids, free order and the index are compared exactly only
under the system's own policy.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Policy:
    name: str
    null_block: bool  # block 0 is reserved: never free, never hashed, never handed out
    initial_order: str  # the order blocks are first taken: "ascending" | "descending"
    free_order: str  # where released blocks go: "append" (tail) | "unhashed_front" | "lifo" | "sorted"
    release_order: str  # the order a request's table is released in: "reverse" | "forward"
    duplicates: str  # a full block whose hash is already indexed: "first" (first wins, all kept) | "last" | "give_back"
    publish: str  # when full blocks enter the index: "allocation" | "compute"
    warm: bool  # a freed block keeps its index entry (can still be hit) until it is reused
    evict_on_reuse: bool  # taking a block for new content removes its index entry (else the entry goes stale)
    verify_tokens: bool  # a hit also checks the block's own token ids
    hit_cap: bool  # at most (n - 1) // block_size blocks hit (one token is always left to compute)
    admission: str  # a request fits when "exact": new blocks + hits taken from the free list <= free; "all_blocks": every block <= free
    caching: bool = True  # no prefix cache at all (Mini-YAIE)
    cold_keeps_hash: bool = False  # not warm: a freed block loses its index entry but keeps its own hash
    exact: bool = True  # compare block ids, free order and the index; False: universal invariants only


LAB = Policy("lab", null_block=True, initial_order="ascending", free_order="append", release_order="reverse",
             duplicates="last", publish="allocation", warm=True, evict_on_reuse=True, verify_tokens=False,
             hit_cap=True, admission="exact")
VLLM_V1 = Policy("vllm_v1", null_block=True, initial_order="ascending", free_order="unhashed_front",
                 release_order="reverse", duplicates="first", publish="allocation", warm=True, evict_on_reuse=True,
                 verify_tokens=False, hit_cap=True, admission="exact")
MINIVLLM = Policy("minivllm", null_block=False, initial_order="descending", free_order="lifo", release_order="forward",
                  duplicates="give_back", publish="allocation", warm=False, evict_on_reuse=True, verify_tokens=False,
                  hit_cap=False, admission="all_blocks")
NANOVLLM = Policy("nanovllm", null_block=False, initial_order="ascending", free_order="append", release_order="reverse",
                  duplicates="last", publish="allocation", warm=True, evict_on_reuse=False, verify_tokens=True,
                  hit_cap=False, admission="all_blocks")
# nano-vllm-fork (PyPI, release 20260210): deallocate also drops the index entry of a block freed to 0, so
# nothing stays warm and no entry goes stale; the freed block keeps its hash until it is reused.
NANOVLLM_FORK = Policy("nanovllm_fork", null_block=False, initial_order="ascending", free_order="append",
                       release_order="reverse", duplicates="last", publish="allocation", warm=False,
                       evict_on_reuse=False, verify_tokens=True, hit_cap=False, admission="all_blocks",
                       cold_keeps_hash=True)
# nano-vllm since 8d63a98: hashes are published after the forward pass (hash_blocks), at most
# (n - 1) // block_size blocks hit, a hit on a free block counts against the free blocks, and taking a block
# for new content drops the index entry that points to it.
NANOVLLM_V2 = Policy("nanovllm_v2", null_block=False, initial_order="ascending", free_order="append",
                     release_order="reverse", duplicates="last", publish="compute", warm=True, evict_on_reuse=True,
                     verify_tokens=True, hit_cap=True, admission="exact")
MINI_YAIE = Policy("mini_yaie", null_block=False, initial_order="ascending", free_order="sorted", release_order="forward",
                   duplicates="last", publish="allocation", warm=False, evict_on_reuse=True, verify_tokens=False,
                   hit_cap=False, admission="all_blocks", caching=False)

POLICIES = {p.name: p for p in (LAB, VLLM_V1, MINIVLLM, NANOVLLM, NANOVLLM_FORK, NANOVLLM_V2, MINI_YAIE)}


def universal(policy: Policy) -> Policy:
    """The same system's generation, checked with the universal invariants only (the `@any` suffix)."""
    return Policy(**{**policy.__dict__, "exact": False})


# The named choices a user's adapter may declare (`policy = {...}`), each with the values it takes, and the
# Policy fields they set; a choice not declared keeps the value of BASE (vLLM v1's design, null block off).
CHOICES = {
    "null_block": ((True, False), {True: {"null_block": True}, False: {"null_block": False}}),
    "free_order": (("append", "unhashed_front", "lifo", "sorted"), None),
    "release_order": (("reverse", "forward"), None),
    "initial_order": (("ascending", "descending"), None),
    "warm_reuse": ((True, False), {True: {"warm": True}, False: {"warm": False}}),
    "hit_cap": ((True, False), None),
    "index": (("multimap", "last_writer", "give_back"),
              {"multimap": {"duplicates": "first"}, "last_writer": {"duplicates": "last"},
               "give_back": {"duplicates": "give_back"}}),
    "evict_on_reuse": ((True, False), None),
    "verify_tokens": ((True, False), None),
    "admission": (("exact", "all_blocks"), None),
    "publish": (("allocation", "compute"), None),
    "caching": ((True, False), None),
}
BASE = Policy("declared", null_block=False, initial_order="ascending", free_order="append", release_order="reverse",
              duplicates="first", publish="allocation", warm=True, evict_on_reuse=True, verify_tokens=False,
              hit_cap=True, admission="exact")


def declared(choices: dict, exact: bool = True) -> Policy:
    """The policy a user's adapter declares from the named choices (CHOICES); ValueError naming the bad one."""
    fields: dict = {}
    for name, value in choices.items():
        if name not in CHOICES:
            raise ValueError(f"unknown policy choice {name!r}; known: {', '.join(CHOICES)}")
        allowed, sets = CHOICES[name]
        if value not in allowed or isinstance(value, bool) != isinstance(allowed[0], bool):
            raise ValueError(f"policy choice {name!r} is one of {', '.join(map(repr, allowed))}, not {value!r}")
        fields.update(sets[value] if sets else {name: value})
    return Policy(**{**BASE.__dict__, **fields, "exact": exact})
