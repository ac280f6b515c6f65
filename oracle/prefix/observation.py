"""What an adapter reads back from an implementation after a call, in block ids."""

from dataclasses import dataclass, field


class ImplementationFailure(Exception):
    """The implementation raised, or its state could not be read; the message says which."""


@dataclass(frozen=True)
class Observation:
    tables: dict[int, tuple[int, ...]]  # the live requests' block tables, by the machine's request id
    free: tuple[int, ...] | None  # the free blocks in the order they will be taken; None: not readable
    ref_counts: dict[int, int] | None = None  # every block's ref count as the implementation keeps it
    hashes: dict[int, object] | None = None  # the blocks that carry a hash, and the hash they carry
    indexed: tuple[int, ...] | None = None  # the blocks the hash index points to, sorted (with repeats)
    # the number of tokens the pool counts for each live request (seed 003's `len(seq)`); None: not readable
    lengths: dict[int, int] | None = None
    # the pool's own words for what differences name (NAMES' keys), so a message speaks its terms
    names: dict[str, str] = field(default_factory=dict, compare=False)


# what the checks call things (templates of `rid`, a request id, and `block`, a block id), and what a pool may
# call them instead (an adapter's `names`, seed 003's in oracle/prefix/adapters/minivllm.py)
NAMES = {
    "table": "req {rid} block_table",  # a request's list of block ids: seq{rid}.block_list
    "ref_count": "block {block}",  # a block's count of holders: manager.blocks[{block}].ref_cache
    "length": "the length the pool keeps for req {rid}",  # the length the pool keeps for a request: len(seq{rid})
    "tokens": "it holds",  # the tokens a request holds: seq{rid}.token_ids holds
}


def named(seen: "Observation", what: str, **values: int) -> str:
    """The pool's words for `what` (a key of NAMES) at these ids, or ours."""
    return (seen.names.get(what) or NAMES[what]).format(**values)
