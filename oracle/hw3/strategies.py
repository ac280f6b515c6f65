"""Argument strategies for the HW3 machine, biased towards the spec's boundaries.

Lengths sit at multiples of 16 (a block) and 256 (an L2 table) and one either side, and at the 4096-record
cap; pools run from under one block to more than 256 blocks, in sizes that are not multiples of 64.
"""

from oracle.hw3.spec import BLOCK_SIZE, INT32_MAX, INT32_MIN, KV_PER_BLOCK, MAX_KV, MAX_LOGICAL_BLOCKS
from oracle.step_strategy import Between, Choice

_AROUND = lambda n: [n - 1, n, n + 1]  # noqa: E731
_INT32 = Between(INT32_MIN, INT32_MAX)

# Each is one Choice (oracle/step_strategy.py): an index, then the value a Between or nested Choice draws; the
# first alternative is what shrinking aims at.
_pool_blocks = (
    Between(0, 64),
    Choice(0, 1, *_AROUND(KV_PER_BLOCK), 32, MAX_LOGICAL_BLOCKS - 1),  # 0, 1: pools of 63, 64, 65 bytes
    Choice(MAX_LOGICAL_BLOCKS, MAX_LOGICAL_BLOCKS + 1, 300),  # room for a sequence at the cap
)
_pool_extra = (0, 0, 0, 1, 4, 63)


class _PoolSizes(Choice):
    """blocks * BLOCK_SIZE + extra bytes: a pool size that is not always a multiple of 64."""

    def do_draw(self, data):  # type: ignore[no-untyped-def]
        blocks = super().do_draw(data)
        return blocks * BLOCK_SIZE + _pool_extra[data.draw_integer(0, len(_pool_extra) - 1)]


pool_sizes = _PoolSizes(*_pool_blocks)
null_pools = Choice(*[False] * 7, True)

# Mostly a few ids, so that duplicates and unknown ids come up all the time; the int32 extremes; and any
# int32, so that many sequences can be live at once (a fixed-size table of sequences must not be enough).
seq_ids = Choice(
    *(0, 1, 2, 3, 0, 1, 2, 3, 4, 5, -1, INT32_MAX, INT32_MIN),  # each third as often as before, in one index
    *(0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4),
    *[_INT32] * 13,
)

lengths = Choice(
    *[Between(1, 3 * KV_PER_BLOCK)] * 11,
    *_AROUND(KV_PER_BLOCK), *_AROUND(2 * KV_PER_BLOCK), *_AROUND(256), MAX_KV - 1, MAX_KV, KV_PER_BLOCK, 256,
    *(0, -1, MAX_KV + 1, INT32_MIN, INT32_MAX) * 2, 0,  # refused: bad length, or over 256 blocks
)
kv_values = _INT32

# How far an append burst goes: to the end of the current block, L2 table or the cap, then `past` more.
burst_targets = Choice("block", "block", "block", "l2", "l2", "cap")
burst_past = Choice(0, 0, 1, -1)
# How many records short of filling the pool (negative: over) a filling create asks for.
fill_slack = Choice(0, 0, 0, 1, KV_PER_BLOCK - 1, KV_PER_BLOCK, -1)

blind_calls = Choice("create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy")
null_engines = Choice(False, True)
