"""Broken: copy-on-write copies only the records already written (offset slots), not all 64 bytes."""

from engine.llm_memory import (  # noqa: F401
    KV_PER_BLOCK, KV_SIZE, BLOCK_SIZE, L2_PT_SIZE, MAX_LOGICAL_BLOCKS, UNMAPPED, _RECORD, _engine, _int32,
    create_sequence, fork_sequence, free_sequence, llm_destroy, llm_init,
)


def append_kv(engine, seq_id, kv_data):
    if engine is None:
        return -1
    engine = _engine(engine)
    _int32("seq_id", seq_id)
    _int32("kv_data", kv_data)
    seq = engine.find(seq_id)
    if seq is None:
        return -1
    logical_idx, offset = divmod(seq.kv_count, KV_PER_BLOCK)
    if logical_idx >= MAX_LOGICAL_BLOCKS:
        return -1
    l1, l2 = divmod(logical_idx, L2_PT_SIZE)
    l2_table = seq.block_table[l1]
    block = UNMAPPED if l2_table is None else l2_table[l2]
    shared = block != UNMAPPED and engine.ref_count[block] > 1
    if (block == UNMAPPED or shared) and engine.free_local_blocks == 0:
        return -1
    if l2_table is None:
        l2_table = seq.block_table[l1] = [UNMAPPED] * L2_PT_SIZE
    if block == UNMAPPED:
        block = l2_table[l2] = engine.allocate_block()
    elif shared:
        new_block = engine.allocate_block()
        pool, n = engine.pool_base_ptr, offset * KV_SIZE  # BUG: n should be BLOCK_SIZE
        pool[new_block * BLOCK_SIZE : new_block * BLOCK_SIZE + n] = pool[block * BLOCK_SIZE : block * BLOCK_SIZE + n]
        engine.release_block(block)
        block = l2_table[l2] = new_block
    _RECORD.pack_into(engine.pool_base_ptr, block * BLOCK_SIZE + offset * KV_SIZE, kv_data)
    seq.kv_count += 1
    return 0
