/* Hostile test submission: llm_destroy forgets to free the engine. */
#include <stdlib.h>
#include "llm_memory.h"

LLMEngine *llm_init(void *pool_addr, size_t pool_size)
{
    LLMEngine *engine = calloc(1, sizeof *engine);
    if (engine == NULL)
        return NULL;
    engine->pool_base_ptr = pool_addr;
    engine->total_local_blocks = (int)(pool_size / BLOCK_SIZE);
    engine->free_local_blocks = engine->total_local_blocks;
    engine->active_seqs.next = &engine->active_seqs;
    engine->active_seqs.prev = &engine->active_seqs;
    return engine;
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

int append_kv(LLMEngine *engine, int seq_id, int kv_data)
{
    (void)engine;
    (void)seq_id;
    (void)kv_data;
    return -1;
}

int llm_destroy(LLMEngine *engine)
{
    return engine == NULL ? -1 : 0;
}
