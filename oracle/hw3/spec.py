"""The numbers the HW3 specification fixes. Every module of the grader takes them from here; engine/llm_memory.py
holds its own copy (engine/ imports nothing of oracle/), which tests/test_engine_standalone.py holds equal."""

BLOCK_SIZE = 64  # bytes per physical block
KV_SIZE = 4  # bytes per KV record: one little-endian int32
KV_PER_BLOCK = BLOCK_SIZE // KV_SIZE  # 16
L1_PT_SIZE = 16  # L2-table pointers in a sequence's L1 table
L2_PT_SIZE = 16  # physical block ids in one L2 table
MAX_LOGICAL_BLOCKS = L1_PT_SIZE * L2_PT_SIZE  # 256 per sequence
MAX_KV = MAX_LOGICAL_BLOCKS * KV_PER_BLOCK  # 4096 records per sequence
UNMAPPED = -1  # an L2 entry that maps no block

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1

API = ("llm_init", "create_sequence", "fork_sequence", "append_kv", "free_sequence", "llm_destroy")
