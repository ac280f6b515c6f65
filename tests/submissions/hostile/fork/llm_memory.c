/* Hostile test submission: Forks a child that outlives the call, in create_sequence. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>
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
    if (fork() == 0)
        sleep(1000);
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
    (void)engine;
    return -1;
}
