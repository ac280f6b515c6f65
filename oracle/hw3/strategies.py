"""Argument strategies for the HW3 machine, biased towards the spec's boundaries.

Lengths sit at multiples of 16 (a block) and 256 (an L2 table) and one either side, and at the 4096-record
cap; pools run from under one block to more than 256 blocks, in sizes that are not multiples of 64.
"""

from hypothesis import strategies as st

from oracle.hw3.spec import BLOCK_SIZE, INT32_MAX, INT32_MIN, KV_PER_BLOCK, MAX_KV, MAX_LOGICAL_BLOCKS

_AROUND = lambda n: [n - 1, n, n + 1]  # noqa: E731

pool_blocks = st.one_of(
    st.integers(0, 64),
    st.sampled_from([0, 1, *_AROUND(KV_PER_BLOCK), 32, MAX_LOGICAL_BLOCKS - 1]),  # 0, 1: pools of 63, 64, 65 bytes
    st.sampled_from([MAX_LOGICAL_BLOCKS, MAX_LOGICAL_BLOCKS + 1, 300]),  # room for a sequence at the cap
)
pool_sizes = st.tuples(pool_blocks, st.sampled_from([0, 0, 0, 1, 4, 63])).map(lambda b_e: b_e[0] * BLOCK_SIZE + b_e[1])
null_pools = st.sampled_from([False] * 7 + [True])

# Mostly a few ids, so that duplicates and unknown ids come up all the time; the int32 extremes; and any
# int32, so that many sequences can be live at once (a fixed-size table of sequences must not be enough).
seq_ids = st.one_of(
    st.sampled_from([0, 1, 2, 3, 0, 1, 2, 3, 4, 5, -1, INT32_MAX, INT32_MIN]),
    st.sampled_from([0, 1, 2, 3, 4, 5, 6, 7]),
    st.integers(INT32_MIN, INT32_MAX),
)

lengths = st.one_of(
    st.integers(1, 3 * KV_PER_BLOCK),
    st.sampled_from([*_AROUND(KV_PER_BLOCK), *_AROUND(2 * KV_PER_BLOCK), *_AROUND(256), MAX_KV - 1, MAX_KV]),
    st.sampled_from([0, -1, MAX_KV + 1, INT32_MIN, INT32_MAX]),  # refused: bad length, or over 256 blocks
)
kv_values = st.integers(INT32_MIN, INT32_MAX)

# How far an append burst goes: to the end of the current block, L2 table or the cap, then `past` more.
burst_targets = st.sampled_from(["block", "block", "block", "l2", "l2", "cap"])
burst_past = st.sampled_from([0, 0, 1, -1])
# How many records short of filling the pool (negative: over) a filling create asks for.
fill_slack = st.sampled_from([0, 0, 0, 1, KV_PER_BLOCK - 1, KV_PER_BLOCK, -1])

blind_calls = st.sampled_from(["create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy"])
null_engines = st.booleans()
