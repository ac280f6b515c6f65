/* Hostile test submission: Defines every API function except append_kv. */
#include "llm_memory.h"

LLMEngine *llm_init(void *pool_addr, size_t pool_size)
{
    (void)pool_addr;
    (void)pool_size;
    return NULL;
}

Sequence *create_sequence(LLMEngine *engine, int seq_id, int initial_kv_len)
{
    (void)engine;
    (void)seq_id;
    (void)initial_kv_len;
    return NULL;
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

int llm_destroy(LLMEngine *engine)
{
    (void)engine;
    return -1;
}
