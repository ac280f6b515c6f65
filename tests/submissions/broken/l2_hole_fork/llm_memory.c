/* Broken on purpose, for the grader's tests: fork_sequence stops copying an L2 table at its first -1 entry; found by the probe l2_hole_fork.
 * Fails the rubric item `fork`. */
/* HW3 reference solution: a paged KV-cache memory manager with 2-level block tables and copy-on-write.
 *
 * Every call validates in the spec's phase order (NULL engine, arguments, ids, free blocks) before it
 * allocates or changes anything, so a failing call leaves no trace. If malloc itself fails half-way, the
 * call undoes what it did and fails the same way. */
#include "llm_memory.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

/* ---- intrusive circular list, as in Linux's list.h ---- */

static void list_init(struct list_node *head)
{
    head->prev = head;
    head->next = head;
}

static void list_add_tail(struct list_node *node, struct list_node *head)
{
    node->prev = head->prev;
    node->next = head;
    head->prev->next = node;
    head->prev = node;
}

static void list_del(struct list_node *node)
{
    node->prev->next = node->next;
    node->next->prev = node->prev;
    node->prev = NULL;
    node->next = NULL;
}

static Sequence *find_sequence(LLMEngine *engine, int seq_id)
{
    for (struct list_node *pos = engine->active_seqs.next; pos != &engine->active_seqs; pos = pos->next) {
        Sequence *seq = container_of(pos, Sequence, node);
        if (seq->seq_id == seq_id)
            return seq;
    }
    return NULL;
}

/* ---- physical blocks ---- */

/* First fit: the lowest-numbered free block. The caller has checked that one exists. */
static int alloc_block(LLMEngine *engine)
{
    for (int block = 0; block < engine->total_local_blocks; block++) {
        if (engine->ref_count[block] == 0) {
            engine->ref_count[block] = 1;
            engine->free_local_blocks--;
            return block;
        }
    }
    return -1;
}

static void release_block(LLMEngine *engine, int block)
{
    if (--engine->ref_count[block] == 0)
        engine->free_local_blocks++;
}

static char *block_addr(const LLMEngine *engine, int block)
{
    return (char *)engine->pool_base_ptr + (size_t)block * BLOCK_SIZE;
}

/* ---- block tables ---- */

static int *new_l2_table(void)
{
    int *l2 = malloc(L2_PT_SIZE * sizeof *l2);
    if (l2 != NULL)
        for (int i = 0; i < L2_PT_SIZE; i++)
            l2[i] = -1;
    return l2;
}

/* Releases every mapped block and frees the tables. Visits all L1 slots: mapped L2 tables need not be
 * contiguous. Also undoes a partly built table, whose unfilled slots are NULL or -1. */
static void destroy_block_table(LLMEngine *engine, int **block_table)
{
    for (int i = 0; i < L1_PT_SIZE; i++) {
        int *l2 = block_table[i];
        if (l2 == NULL)
            continue;
        for (int j = 0; j < L2_PT_SIZE; j++)
            if (l2[j] != -1)
                release_block(engine, l2[j]);
        free(l2);
    }
    free(block_table);
}

/* A Sequence with an all-NULL L1 table, not yet on any list; NULL if malloc fails. */
static Sequence *new_sequence(int seq_id, int kv_count)
{
    Sequence *seq = malloc(sizeof *seq);
    if (seq == NULL)
        return NULL;
    seq->block_table = malloc(L1_PT_SIZE * sizeof *seq->block_table);
    if (seq->block_table == NULL) {
        free(seq);
        return NULL;
    }
    for (int i = 0; i < L1_PT_SIZE; i++)
        seq->block_table[i] = NULL;
    seq->seq_id = seq_id;
    seq->kv_count = kv_count;
    return seq;
}

static void destroy_sequence(LLMEngine *engine, Sequence *seq)
{
    destroy_block_table(engine, seq->block_table);
    free(seq);
}

/* ---- API ---- */

LLMEngine *llm_init(void *pool_addr, size_t pool_size)
{
    if (pool_addr == NULL || pool_size < BLOCK_SIZE)
        return NULL;
    if (pool_size / BLOCK_SIZE > INT_MAX) /* the block count must fit total_local_blocks */
        return NULL;
    LLMEngine *engine = malloc(sizeof *engine);
    if (engine == NULL)
        return NULL;
    engine->pool_base_ptr = pool_addr;
    engine->total_local_blocks = (int)(pool_size / BLOCK_SIZE);
    engine->free_local_blocks = engine->total_local_blocks;
    engine->ref_count = calloc((size_t)engine->total_local_blocks, sizeof *engine->ref_count);
    if (engine->ref_count == NULL) {
        free(engine);
        return NULL;
    }
    list_init(&engine->active_seqs);
    return engine;
}

Sequence *create_sequence(LLMEngine *engine, int seq_id, int initial_kv_len)
{
    if (engine == NULL)
        return NULL;
    if (initial_kv_len <= 0)
        return NULL;
    if (find_sequence(engine, seq_id) != NULL)
        return NULL;
    /* ceil(initial_kv_len / KV_PER_BLOCK), without overflowing near INT_MAX */
    int required = initial_kv_len / KV_PER_BLOCK + (initial_kv_len % KV_PER_BLOCK != 0);
    if (required > MAX_LOGICAL_BLOCKS || required > engine->free_local_blocks)
        return NULL;

    Sequence *seq = new_sequence(seq_id, initial_kv_len);
    if (seq == NULL)
        return NULL;
    for (int logical = 0; logical < required; logical++) {
        int **l2 = &seq->block_table[logical / L2_PT_SIZE];
        if (*l2 == NULL && (*l2 = new_l2_table()) == NULL) {
            destroy_sequence(engine, seq); /* gives back the blocks mapped so far */
            return NULL;
        }
        (*l2)[logical % L2_PT_SIZE] = alloc_block(engine); /* no write to the block itself */
    }
    list_add_tail(&seq->node, &engine->active_seqs);
    return seq;
}

int free_sequence(LLMEngine *engine, int seq_id)
{
    if (engine == NULL)
        return -1;
    Sequence *seq = find_sequence(engine, seq_id);
    if (seq == NULL)
        return -1;
    list_del(&seq->node);
    destroy_sequence(engine, seq);
    return 0;
}

Sequence *fork_sequence(LLMEngine *engine, int parent_seq_id, int new_seq_id)
{
    if (engine == NULL)
        return NULL;
    Sequence *parent = find_sequence(engine, parent_seq_id);
    if (parent == NULL || find_sequence(engine, new_seq_id) != NULL)
        return NULL;

    Sequence *child = new_sequence(new_seq_id, parent->kv_count);
    if (child == NULL)
        return NULL;
    for (int i = 0; i < L1_PT_SIZE; i++) {
        const int *from = parent->block_table[i];
        if (from == NULL)
            continue;
        int *to = new_l2_table();
        if (to == NULL) {
            destroy_sequence(engine, child); /* drops the references taken so far */
            return NULL;
        }
        for (int j = 0; j < L2_PT_SIZE; j++) {
            if (from[j] == -1)
                break;
            to[j] = from[j];
            engine->ref_count[to[j]]++;
        }
        child->block_table[i] = to;
    }
    list_add_tail(&child->node, &engine->active_seqs);
    return child;
}

int append_kv(LLMEngine *engine, int seq_id, int kv_data)
{
    if (engine == NULL)
        return -1;
    Sequence *seq = find_sequence(engine, seq_id);
    if (seq == NULL)
        return -1;
    int logical_idx = seq->kv_count / KV_PER_BLOCK;
    int offset = seq->kv_count % KV_PER_BLOCK;
    if (logical_idx >= MAX_LOGICAL_BLOCKS)
        return -1;

    int **l2 = &seq->block_table[logical_idx / L2_PT_SIZE];
    int slot = logical_idx % L2_PT_SIZE;
    int old = *l2 == NULL ? -1 : (*l2)[slot];
    int needs_block = old == -1 || engine->ref_count[old] > 1;
    if (needs_block && engine->free_local_blocks == 0)
        return -1; /* before allocating a missing L2 table */
    if (*l2 == NULL && (*l2 = new_l2_table()) == NULL)
        return -1;

    if (old == -1) {
        (*l2)[slot] = alloc_block(engine);
    } else if (needs_block) { /* copy-on-write: the block is shared */
        int copy = alloc_block(engine);
        memcpy(block_addr(engine, copy), block_addr(engine, old), BLOCK_SIZE);
        release_block(engine, old);
        (*l2)[slot] = copy;
    }
    ((int *)block_addr(engine, (*l2)[slot]))[offset] = kv_data;
    seq->kv_count++;
    return 0;
}

int llm_destroy(LLMEngine *engine)
{
    if (engine == NULL)
        return -1;
    struct list_node *pos = engine->active_seqs.next;
    while (pos != &engine->active_seqs) {
        struct list_node *next = pos->next;
        destroy_sequence(engine, container_of(pos, Sequence, node));
        pos = next;
    }
    free(engine->ref_count);
    free(engine); /* never the pool: the caller owns it */
    return 0;
}
