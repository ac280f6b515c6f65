"""Argument strategies for the prefix machine, biased to the boundaries of a prefix cache.

Token ids come from a tiny alphabet, so equal blocks after different parents are common; prompts are
mostly built from an earlier prompt (cut at a block boundary, one either side, or whole) plus a tail, so
hits, partial hits and prompts equal to a cached prefix are common.
"""

from dataclasses import dataclass

from hypothesis.strategies import SearchStrategy

from oracle.step_strategy import Between, Choice, ListOf

# Each is one plain choice (an index, or an integer; a list its length and its tokens as one integer: oracle/step_strategy.py),
# drawn as Hypothesis's sampled_from, integers, one_of and lists drew the same values without their spans; the first
# alternative is what shrinking aims at.
block_sizes = Choice(2, 2, 3, 4)
pool_blocks = Choice(Between(1, 12), Choice(2, 3, 4, 16, 24))
tokens = Between(0, 2)
tails = Choice(ListOf(tokens, 0, 0), ListOf(tokens, 1, 9))  # empty: exactly the cut prefix
# How much of an earlier prompt a new one keeps: whole blocks, one token either side, or all of it.
cuts = Choice("blocks", "blocks", "blocks_minus_one", "blocks_plus_one", "whole", "whole", "none")
block_counts = Between(0, 3)
earlier = Between(0, 7)  # which earlier prompt (modulo how many there are)
positions = Between(0, 8)
fill_slack = Choice(0, 0, 1, -1)  # tokens short of (negative: past) exhausting the pool
rarely = Choice(False, False, False, True)  # a reset empties the cache: not too often
evictions = Choice(0, 1, 1, 2, 3)  # blocks a pressure request takes from the free list (0: all)
prefix_blocks = Choice(1, 1, 1, 2, 3)  # full blocks of a live request a new prompt repeats

DEFAULT_BLOCK_SIZES = (2, 3, 4)
DEFAULT_POOL_SIZES = tuple(range(1, 13)) + (16, 24)


@dataclass(frozen=True)
class Domain:
    """The pools a machine makes: the block sizes and pool sizes (blocks, the null block included) the
    implementation supports. An adapter declares them (`block_sizes`, `pool_sizes`); a program outside them
    (a shrunk one) is not valid."""

    block_sizes: tuple[int, ...] = DEFAULT_BLOCK_SIZES
    pool_sizes: tuple[int, ...] = DEFAULT_POOL_SIZES

    @classmethod
    def of(cls, adapter: type) -> "Domain":
        """The domain an adapter class declares (the defaults for what it does not); ValueError."""
        sizes = {}
        for name, default in (("block_sizes", DEFAULT_BLOCK_SIZES), ("pool_sizes", DEFAULT_POOL_SIZES)):
            value = tuple(getattr(adapter, name, None) or default)
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in value):
                raise ValueError(f"{adapter.__name__}.{name} must be positive integers, not {value!r}")
            sizes[name] = tuple(sorted(set(value)))
        return cls(**sizes)

    def holds(self, num_blocks: int, block_size: int) -> bool:
        return num_blocks in self.pool_sizes and block_size in self.block_sizes

    def block_size_strategy(self) -> SearchStrategy[int]:
        return block_sizes if self.block_sizes == DEFAULT_BLOCK_SIZES else Choice(*self.block_sizes)

    def pool_strategy(self) -> SearchStrategy[int]:
        return pool_blocks if self.pool_sizes == DEFAULT_POOL_SIZES else Choice(*self.pool_sizes)
