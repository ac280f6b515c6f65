/* HW3 paged KV-cache memory manager: the official constants, structs and API.
 * Submissions are compiled against this header, so names and layouts must match the spec exactly. */
#ifndef LLM_MEMORY_H
#define LLM_MEMORY_H

#include <stddef.h>

#define BLOCK_SIZE 64                                /* bytes per physical block */
#define KV_SIZE 4                                    /* bytes per KV record (one int) */
#define KV_PER_BLOCK (BLOCK_SIZE / KV_SIZE)          /* 16 */
#define L1_PT_SIZE 16                                /* L2-table pointers per L1 table */
#define L2_PT_SIZE 16                                /* physical block ids per L2 table */
#define MAX_LOGICAL_BLOCKS (L1_PT_SIZE * L2_PT_SIZE) /* 256 per sequence */

struct list_node {
    struct list_node *prev;
    struct list_node *next;
};

typedef struct Sequence {
    int seq_id;            /* unique identifier for the sequence */
    int **block_table;     /* 2-level block table root: array of L2 table pointers */
    int kv_count;          /* total number of KV records currently held */
    struct list_node node; /* intrusive list node (must be at the end) */
} Sequence;

typedef struct {
    void *pool_base_ptr;          /* base address of the memory pool (owned by the caller) */
    int total_local_blocks;       /* total number of physical blocks */
    int free_local_blocks;        /* number of currently free physical blocks */
    int *ref_count;               /* reference count of each block, total_local_blocks entries */
    struct list_node active_seqs; /* dummy head of the active sequence list */
} LLMEngine;

LLMEngine *llm_init(void *pool_addr, size_t pool_size);
Sequence *create_sequence(LLMEngine *engine, int seq_id, int initial_kv_len);
int free_sequence(LLMEngine *engine, int seq_id);
Sequence *fork_sequence(LLMEngine *engine, int parent_seq_id, int new_seq_id);
int append_kv(LLMEngine *engine, int seq_id, int kv_data);
int llm_destroy(LLMEngine *engine);

#endif /* LLM_MEMORY_H */
