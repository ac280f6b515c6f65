/* Hostile test submission: create_sequence links a sequence into a cycle that never returns to the head. */
#include <stdlib.h>
#include "llm_memory.h"

LLMEngine *llm_init(void *pool_addr, size_t pool_size)
{
    (void)pool_size;
    LLMEngine *engine = calloc(1, sizeof *engine);
    engine->pool_base_ptr = pool_addr;
    engine->active_seqs.next = &engine->active_seqs;
    engine->active_seqs.prev = &engine->active_seqs;
    return engine;
}

Sequence *create_sequence(LLMEngine *engine, int seq_id, int initial_kv_len)
{
    (void)initial_kv_len;
    Sequence *seq = calloc(1, sizeof *seq);
    seq->seq_id = seq_id;
    seq->node.prev = &engine->active_seqs;
    seq->node.next = &seq->node;
    engine->active_seqs.next = &seq->node;
    return seq;
}

int free_sequence(LLMEngine *engine, int seq_id)
{
    (void)engine;
    (void)seq_id;
    return -1;
}

Sequence *fork_sequence(LLMEngine *engine, int parent_seq_id, int new_seq_id)
{
    (void)engine;
    (void)parent_seq_id;
    (void)new_seq_id;
    return NULL;
}

int append_kv(LLMEngine *engine, int seq_id, int kv_data)
{
    (void)engine;
    (void)seq_id;
    (void)kv_data;
    return -1;
}

int llm_destroy(LLMEngine *engine)
{
    (void)engine;
    return -1;
}
