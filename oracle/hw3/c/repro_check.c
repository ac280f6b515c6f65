/* Helpers a program may not use are `static inline`, which gcc does not warn about when unused. */

/* ---- the pool, as the grader prepares it ---- */

static unsigned char *region; /* guard zone + pool + guard zone, from malloc */
static unsigned char *pool;   /* what llm_init receives: region + GUARD_SIZE, or NULL */
static size_t pool_size;

static LLMEngine *engine; /* the last llm_init's result; NULL again after llm_destroy */

#undef container_of /* llm_memory.c may define its own */
#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

/* Every Sequence that create_sequence or fork_sequence returned since the last llm_init: the active list
 * may hold these and nothing else. */
static Sequence *returned[MAX_SEQUENCES];
static int n_returned;

/* The grader's magic number in every 4-byte slot: slot s holds MAGIC(s), pool.py's magic(s) (a trailing
 * partial slot holds the first bytes of its number), so a block copied from the wrong place, or a copy that
 * misses a byte, shows the wrong number. */
static void fill_magic(unsigned char *bytes, size_t size)
{
    for (size_t at = 0; at < size; at += KV_SIZE) {
        int magic = MAGIC(at / KV_SIZE);
        memcpy(bytes + at, &magic, size - at < KV_SIZE ? size - at : KV_SIZE);
    }
}

/* A fresh pool of `size` bytes between two guard zones, for the next llm_init. */
static inline void *new_pool(size_t size)
{
    free(region);
    region = malloc(GUARD_SIZE + size + GUARD_SIZE);
    if (region == NULL) {
        puts("repro: out of memory");
        exit(2);
    }
    memset(region, GUARD_BYTE, GUARD_SIZE + size + GUARD_SIZE);
    pool = region + GUARD_SIZE;
    pool_size = size;
    fill_magic(pool, size);
    n_returned = 0;
    return pool;
}

/* No pool: the next llm_init gets NULL. */
static inline void *no_pool(void)
{
    free(region);
    region = pool = NULL;
    pool_size = 0;
    n_returned = 0;
    return NULL;
}

static inline Sequence *remember(Sequence *seq)
{
    if (seq != NULL && n_returned < MAX_SEQUENCES)
        returned[n_returned++] = seq;
    return seq;
}

/* ---- reporting the first difference ---- */

static void diverge(const char *where, int step, const char *fmt, ...)
{
    va_list ap;
    printf("%s %d: ", where, step);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    exit(1);
}

static inline void check_int(int step, const char *call, int got, int want)
{
    if (got != want)
        diverge("step", step, "%s: return value: expected %d, got %d", call, want, got);
}

static inline void check_pointer(int step, const char *call, const void *got, int want_non_null, const char *what)
{
    if ((got != NULL) != want_non_null)
        diverge("step", step, "%s: return value: expected %s, got %s", call, want_non_null ? what : "NULL",
                got != NULL ? what : "NULL");
}

/* ---- the whole state after the last step ---- */

struct written_slot {
    int slot; /* a 4-byte slot of the pool */
    int value;
};

struct expected_sequence {
    int seq_id;
    int kv_count;
    int n_blocks;
    const int *blocks; /* logical block i is physical block blocks[i] */
};

struct expected_state {
    int live;     /* whether engine is non-NULL */
    int has_pool; /* whether the last llm_init got a pool */
    int total_local_blocks, free_local_blocks;
    const int *ref_count;
    int n_sequences;
    const struct expected_sequence *sequences; /* in active-list order */
    int n_written;
    const struct written_slot *written; /* slots holding something other than their magic number */
};

static int slot_value(const unsigned char *bytes, int slot)
{
    int value;
    memcpy(&value, bytes + (size_t)slot * KV_SIZE, KV_SIZE);
    return value;
}

static void check_list(int step, const struct expected_state *want, const Sequence **seen, int *n_seen)
{
    const struct list_node *head = &engine->active_seqs, *prev = head, *node = head->next;
    int count = 0;
    while (node != head) {
        if (node == NULL)
            diverge("after step", step, "active list broken: position %d: the next pointer before it is NULL", count);
        if (node->prev != prev)
            diverge("after step", step, "active list broken: position %d: prev does not point to the node before it", count);
        const Sequence *seq = container_of(node, Sequence, node);
        int known = 0;
        for (int i = 0; i < n_returned; i++)
            known |= returned[i] == seq;
        if (!known)
            diverge("after step", step,
                    "active list broken: position %d: the node belongs to no sequence that create or fork returned", count);
        if (count > n_returned)
            diverge("after step", step, "active list broken: list does not return to its head");
        seen[count++] = seq;
        prev = node;
        node = node->next;
    }
    if (head->prev != prev)
        diverge("after step", step, "active list broken: head.prev is not the last node");

    int same = count == want->n_sequences;
    for (int i = 0; same && i < count; i++)
        same = seen[i]->seq_id == want->sequences[i].seq_id;
    if (!same) {
        printf("after step %d: active list: expected [", step);
        for (int i = 0; i < want->n_sequences; i++)
            printf("%s%d", i ? ", " : "", want->sequences[i].seq_id);
        printf("], got [");
        for (int i = 0; i < count; i++)
            printf("%s%d", i ? ", " : "", seen[i]->seq_id);
        printf("]\n");
        exit(1);
    }
    *n_seen = count;
}

static void check_sequence(int step, const Sequence *seq, const struct expected_sequence *want,
                           const unsigned char *image)
{
    int id = want->seq_id;
    if (seq->kv_count != want->kv_count)
        diverge("after step", step, "seq %d kv_count: expected %d, got %d", id, want->kv_count, seq->kv_count);
    if (seq->block_table == NULL)
        diverge("after step", step, "seq %d block_table: expected %d L1 slots, got 0", id, L1_PT_SIZE);
    for (int l1 = 0; l1 < L1_PT_SIZE; l1++) {
        int want_l2 = l1 * L2_PT_SIZE < want->n_blocks;
        const int *l2 = seq->block_table[l1];
        if (want_l2 != (l2 != NULL))
            diverge("after step", step, "seq %d block_table[%d]: expected %s, got %s", id, l1,
                    want_l2 ? "an L2 table" : "NULL", l2 != NULL ? "an L2 table" : "NULL");
        for (int j = 0; want_l2 && j < L2_PT_SIZE; j++) {
            int logical = l1 * L2_PT_SIZE + j;
            int block = logical < want->n_blocks ? want->blocks[logical] : -1;
            if (l2[j] != block)
                diverge("after step", step, "seq %d block_table[%d][%d]: expected %d, got %d", id, l1, j, block, l2[j]);
        }
    }
    /* its records, read through its own block table (equal to the expected one by now) */
    for (int i = 0; i < want->kv_count; i++) {
        int logical = i / KV_PER_BLOCK;
        int block = seq->block_table[logical / L2_PT_SIZE][logical % L2_PT_SIZE];
        if (block == -1)
            continue; /* a record with no block (a state the model took over): nowhere to read */
        int slot = block * KV_PER_BLOCK + i % KV_PER_BLOCK;
        int expected = slot_value(image, slot), got = slot_value(pool, slot);
        if (got != expected)
            diverge("after step", step, "seq %d record %d (block %d): expected %d, got %d", id, i, block, expected, got);
    }
}

static void check_engine(int step, const struct expected_state *want, const unsigned char *image)
{
    if (engine->total_local_blocks != want->total_local_blocks)
        diverge("after step", step, "total_local_blocks: expected %d, got %d", want->total_local_blocks,
                engine->total_local_blocks);
    if (engine->free_local_blocks != want->free_local_blocks)
        diverge("after step", step, "free_local_blocks: expected %d, got %d", want->free_local_blocks,
                engine->free_local_blocks);
    if (engine->ref_count == NULL)
        diverge("after step", step, "ref_count: expected %d entries, got 0", want->total_local_blocks);
    for (int block = 0; block < want->total_local_blocks; block++)
        if (engine->ref_count[block] != want->ref_count[block])
            diverge("after step", step, "ref_count[%d]: expected %d, got %d", block, want->ref_count[block],
                    engine->ref_count[block]);
    const Sequence *seen[MAX_SEQUENCES + 1];
    int n_seen;
    check_list(step, want, seen, &n_seen);
    for (int i = 0; i < n_seen; i++)
        check_sequence(step, seen[i], &want->sequences[i], image);
}

static void check_pool(int step, const unsigned char *image)
{
    for (size_t at = 0; at < pool_size; at++) {
        if (pool[at] == image[at])
            continue;
        int slot = (int)(at / KV_SIZE);
        if ((size_t)(slot + 1) * KV_SIZE > pool_size) /* the trailing partial slot no block covers */
            diverge("after step", step, "pool byte %zu (past the last block): expected 0x%02x, got 0x%02x", at,
                    image[at], pool[at]);
        diverge("after step", step, "pool block %d slot %d (byte %zu): expected %d, got %d", slot / KV_PER_BLOCK,
                slot % KV_PER_BLOCK, at, slot_value(image, slot), slot_value(pool, slot));
    }
    for (size_t at = 0; at < GUARD_SIZE; at++)
        if (region[at] != GUARD_BYTE)
            diverge("after step", step, "guard zone before the pool: byte %zu overwritten with 0x%02x", at, region[at]);
    for (size_t at = 0; at < GUARD_SIZE; at++)
        if (pool[pool_size + at] != GUARD_BYTE)
            diverge("after step", step, "guard zone after the pool: byte %zu overwritten with 0x%02x", at,
                    pool[pool_size + at]);
}

/* Compares everything after `step` with `want`, in the order pagedcheck does, and stops at the first
 * difference. The expected pool is the magic fill with the written slots applied. */
static unsigned char *expected_pool; /* file scope, so that a divergence's exit leaks nothing */

static void check_state(int step, const struct expected_state *want)
{
    if (engine == NULL && want->live)
        diverge("after step", step, "engine: expected a live engine, got none");
    if (engine != NULL && !want->live)
        diverge("after step", step, "engine: expected NULL, got a live engine");
    if (want->has_pool) {
        if ((expected_pool = malloc(pool_size + 1)) == NULL) {
            puts("repro: out of memory");
            exit(2);
        }
        fill_magic(expected_pool, pool_size);
        for (int i = 0; i < want->n_written; i++)
            memcpy(expected_pool + (size_t)want->written[i].slot * KV_SIZE, &want->written[i].value, KV_SIZE);
    }
    if (engine != NULL)
        check_engine(step, want, expected_pool);
    if (want->has_pool)
        check_pool(step, expected_pool);
    free(expected_pool);
    expected_pool = NULL;
#ifdef HEAP_TRACKED
    heap_check_leaks(step, want->live);
#endif
}
