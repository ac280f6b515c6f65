/* pagedcheck white-box probes: rules a program cannot check through the API alone, checked by reading and
 * editing the submission's structures through the header.
 *
 *     ./probes NAME    prints "PASS: what was checked" and exits 0, or "FAIL: what differs" and exits 1
 *
 * probes.py prepends GUARD_SIZE, GUARD_BYTE and MAGIC(slot) (oracle/hw3/pool.py's c_defines), and runs each probe in its own process. Only
 * destroy_keeps_pool calls llm_destroy (the others leave their engine and pool to the process's exit), so a
 * bug in llm_destroy fails that probe alone. */
#include "llm_memory.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fail(const char *fmt, ...)
{
    va_list ap;
    fputs("FAIL: ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    exit(1);
}

static void *checked_malloc(size_t size)
{
    void *p = malloc(size);
    if (p == NULL) {
        puts("probe: out of memory");
        exit(2);
    }
    return p;
}

/* The grader's magic numbers: slot s holds MAGIC(s), pool.py's magic(s). */
static void fill_magic(unsigned char *bytes, size_t size)
{
    for (size_t at = 0; at < size; at += KV_SIZE) {
        int magic = MAGIC(at / KV_SIZE);
        memcpy(bytes + at, &magic, size - at < KV_SIZE ? size - at : KV_SIZE);
    }
}

static void check_all_free(const LLMEngine *engine, const char *after)
{
    for (int block = 0; block < engine->total_local_blocks; block++)
        if (engine->ref_count[block] != 0)
            fail("ref_count[%d] is %d after %s, expected 0", block, engine->ref_count[block], after);
    if (engine->free_local_blocks != engine->total_local_blocks)
        fail("free_local_blocks is %d after %s, expected %d", engine->free_local_blocks, after,
             engine->total_local_blocks);
}

/* free_sequence must visit all 16 L1 slots. Through the API a sequence's L2 tables are contiguous from
 * slot 0, so the probe makes a gap: a 33-block sequence uses slots 0, 1 and 2; moving slot 1's table to
 * slot 3 keeps every block mapped exactly once and leaves slot 1 NULL between live slots. */
static void l1_gap_free(void)
{
    enum { BLOCKS = 40, RECORDS = (2 * L2_PT_SIZE + 1) * KV_PER_BLOCK };
    unsigned char *pool = checked_malloc(BLOCKS * BLOCK_SIZE);
    fill_magic(pool, BLOCKS * BLOCK_SIZE);
    LLMEngine *engine = llm_init(pool, BLOCKS * BLOCK_SIZE);
    if (engine == NULL)
        fail("llm_init(pool, %d) returned NULL", BLOCKS * BLOCK_SIZE);
    Sequence *seq = create_sequence(engine, 1, RECORDS);
    if (seq == NULL)
        fail("create_sequence(engine, 1, %d) returned NULL with %d free blocks", RECORDS, BLOCKS);
    for (int l1 = 0; l1 < 4; l1++)
        if ((seq->block_table[l1] != NULL) != (l1 < 3))
            fail("create_sequence(engine, 1, %d): block_table[%d] is %s, expected %s", RECORDS, l1,
                 seq->block_table[l1] ? "an L2 table" : "NULL", l1 < 3 ? "an L2 table" : "NULL");

    seq->block_table[3] = seq->block_table[1];
    seq->block_table[1] = NULL;
    if (free_sequence(engine, 1) != 0)
        fail("free_sequence(engine, 1) did not return 0 for a sequence with L1 slots 0, 2 and 3 in use");
    check_all_free(engine, "freeing a sequence whose L1 slot 1 is NULL and slots 0, 2 and 3 are in use "
                           "(the loop must not stop at a NULL slot)");
    if (engine->active_seqs.next != &engine->active_seqs || engine->active_seqs.prev != &engine->active_seqs)
        fail("the active list is not empty after freeing its only sequence");
    puts("PASS: freed a 33-block sequence with L1 slots 0, 2 and 3 in use: every block released");
}

/* fork_sequence must copy every non-NULL parent L2 table (Task 3: "For each non-NULL parent L2 table"), past
 * a NULL one too. The same gap as l1_gap_free: a 33-block parent whose L1 slot 1 is NULL and slots 0, 2 and 3
 * map blocks; the child must get its own copy of slots 0, 2 and 3 and every block a ref_count of 2. */
static void l1_gap_fork(void)
{
    enum { BLOCKS = 40, USED = 2 * L2_PT_SIZE + 1, RECORDS = USED * KV_PER_BLOCK };
    unsigned char *pool = checked_malloc(BLOCKS * BLOCK_SIZE);
    fill_magic(pool, BLOCKS * BLOCK_SIZE);
    LLMEngine *engine = llm_init(pool, BLOCKS * BLOCK_SIZE);
    if (engine == NULL)
        fail("llm_init(pool, %d) returned NULL", BLOCKS * BLOCK_SIZE);
    Sequence *parent = create_sequence(engine, 1, RECORDS);
    if (parent == NULL)
        fail("create_sequence(engine, 1, %d) returned NULL with %d free blocks", RECORDS, BLOCKS);
    for (int l1 = 0; l1 < 4; l1++)
        if ((parent->block_table[l1] != NULL) != (l1 < 3))
            fail("create_sequence(engine, 1, %d): block_table[%d] is %s, expected %s", RECORDS, l1,
                 parent->block_table[l1] ? "an L2 table" : "NULL", l1 < 3 ? "an L2 table" : "NULL");

    parent->block_table[3] = parent->block_table[1];
    parent->block_table[1] = NULL;
    Sequence *child = fork_sequence(engine, 1, 2);
    if (child == NULL)
        fail("fork_sequence(engine, 1, 2) returned NULL for a parent with L1 slots 0, 2 and 3 in use");
    if (child->kv_count != parent->kv_count)
        fail("fork_sequence(engine, 1, 2): the child's kv_count is %d, expected the parent's %d", child->kv_count,
             parent->kv_count);
    for (int l1 = 0; l1 < L1_PT_SIZE; l1++) {
        const int *from = parent->block_table[l1], *to = child->block_table[l1];
        if (from == NULL) {
            if (to != NULL)
                fail("fork_sequence(engine, 1, 2) of a parent whose L1 slot %d is NULL: the child's block_table[%d] "
                     "is an L2 table, expected NULL", l1, l1);
            continue;
        }
        if (to == NULL)
            fail("fork_sequence(engine, 1, 2) of a parent whose L1 slot 1 is NULL and slots 0, 2 and 3 are in use: "
                 "the child's block_table[%d] is NULL, expected a copy of the parent's (the loop must not stop at a "
                 "NULL slot)", l1);
        if (to == from)
            fail("fork_sequence(engine, 1, 2): the child's block_table[%d] is the parent's L2 table, expected its own copy", l1);
        for (int j = 0; j < L2_PT_SIZE; j++) {
            if (to[j] != from[j])
                fail("fork_sequence(engine, 1, 2): the child's block_table[%d][%d] is %d, expected the parent's %d", l1,
                     j, to[j], from[j]);
            if (from[j] != -1 && engine->ref_count[from[j]] != 2)
                fail("ref_count[%d] is %d after fork_sequence(engine, 1, 2), expected 2: the block is in the parent's "
                     "L1 slot %d (slot 1 is NULL; the loop must not stop there)", from[j], engine->ref_count[from[j]], l1);
        }
    }
    if (engine->free_local_blocks != BLOCKS - USED)
        fail("free_local_blocks is %d after fork_sequence(engine, 1, 2), expected %d (a fork takes no block)",
             engine->free_local_blocks, BLOCKS - USED);
    puts("PASS: forked a 33-block sequence with L1 slots 0, 2 and 3 in use: every L2 table copied, every block shared");
}

/* The first byte of a region (guard zone, pool of `size` bytes, guard zone) that differs from what
 * fill_region put there, or -1: recomputed, not compared with a copy, so a large pool costs no second buffer. */
static long long first_changed(const unsigned char *region, size_t size)
{
    size_t length = GUARD_SIZE + size + GUARD_SIZE;
    for (size_t at = 0; at < length; at++) {
        if (at < GUARD_SIZE || at >= GUARD_SIZE + size) {
            if (region[at] != GUARD_BYTE)
                return (long long)at;
            continue;
        }
        size_t offset = at - GUARD_SIZE;
        int magic = MAGIC(offset / KV_SIZE);
        unsigned char bytes[KV_SIZE];
        memcpy(bytes, &magic, KV_SIZE);
        if (region[at] != bytes[offset % KV_SIZE])
            return (long long)at;
    }
    return -1;
}

/* llm_init reads the pool's size and writes nothing into it; its engine starts empty. The sizes run from
 * nothing to 64 MiB (a pool of 2^20 blocks: a guard against overflow must not refuse it). */
static void init_untouched(void)
{
    static const size_t sizes[] = {0, BLOCK_SIZE - 1, BLOCK_SIZE, BLOCK_SIZE + 1, 100, 3 * BLOCK_SIZE - 1, 6400,
                                   (size_t)64 << 20};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t size = sizes[i], length = GUARD_SIZE + size + GUARD_SIZE;
        unsigned char *region = checked_malloc(length);
        memset(region, GUARD_BYTE, length);
        fill_magic(region + GUARD_SIZE, size);

        LLMEngine *engine = llm_init(region + GUARD_SIZE, size);
        long long at = first_changed(region, size);
        if (at >= 0) {
            size_t byte = (size_t)at;
            if (byte < GUARD_SIZE)
                fail("llm_init(pool, %zu) wrote into the guard zone before the pool (byte %zu)", size, byte);
            if (byte >= GUARD_SIZE + size)
                fail("llm_init(pool, %zu) wrote into the guard zone after the pool (byte %zu)", size, byte - GUARD_SIZE - size);
            fail("llm_init(pool, %zu) wrote into the pool (byte %zu)", size, byte - GUARD_SIZE);
        }
        if (size < BLOCK_SIZE) {
            if (engine != NULL)
                fail("llm_init(pool, %zu) returned an engine, expected NULL: the pool is smaller than a block", size);
        } else {
            if (engine == NULL)
                fail("llm_init(pool, %zu) returned NULL", size);
            int total = (int)(size / BLOCK_SIZE);
            if (engine->pool_base_ptr != region + GUARD_SIZE)
                fail("llm_init(pool, %zu): pool_base_ptr is not the pool it was given", size);
            if (engine->total_local_blocks != total)
                fail("llm_init(pool, %zu): total_local_blocks is %d, expected %d", size, engine->total_local_blocks, total);
            if (engine->free_local_blocks != total)
                fail("llm_init(pool, %zu): free_local_blocks is %d, expected %d", size, engine->free_local_blocks, total);
            if (engine->ref_count == NULL)
                fail("llm_init(pool, %zu): ref_count is NULL", size);
            check_all_free(engine, "llm_init");
            if (engine->active_seqs.next != &engine->active_seqs || engine->active_seqs.prev != &engine->active_seqs)
                fail("llm_init(pool, %zu): the empty active_seqs head must point to itself both ways", size);
        }
        if (size > 6400) /* the engine is left to the process's exit; the big pool need not be */
            free(region);
    }
    if (llm_init(NULL, 6400) != NULL)
        fail("llm_init(NULL, 6400) returned an engine, expected NULL");
    puts("PASS: llm_init of 0 bytes to 64 MiB writes nothing, counts whole blocks, starts empty; a NULL pool is refused");
}

/* llm_destroy must neither free nor write the pool: the caller (here this probe) owns it. */
static void destroy_keeps_pool(void)
{
    enum { SIZE = 10 * BLOCK_SIZE };
    unsigned char *pool = checked_malloc(SIZE), before[SIZE];
    fill_magic(pool, SIZE);
    LLMEngine *engine = llm_init(pool, SIZE);
    if (engine == NULL)
        fail("llm_init(pool, %d) returned NULL", SIZE);
    if (create_sequence(engine, 1, 20) == NULL || fork_sequence(engine, 1, 2) == NULL ||
        append_kv(engine, 2, 7) != 0 || append_kv(engine, 1, 8) != 0 || create_sequence(engine, 3, 16) == NULL)
        fail("a create, fork or append failed on a pool with room for it");
    memcpy(before, pool, SIZE);
    if (llm_destroy(engine) != 0)
        fail("llm_destroy(engine) did not return 0");
    /* glibc hands out the chunk of a size freed last first: if llm_destroy freed the pool, this is it */
    void *same_size = checked_malloc(SIZE);
    if (same_size == (void *)pool)
        fail("llm_destroy freed pool_base_ptr, which the caller owns");
    for (size_t at = 0; at < SIZE; at++)
        if (pool[at] != before[at])
            fail("llm_destroy wrote into the pool (byte %zu) or freed it", at);
    free(same_size);
    free(pool); /* a double free, and an abort, if llm_destroy freed it after all */
    puts("PASS: llm_destroy with three live sequences left the caller's pool allocated and unchanged");
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*probe)(void);
    } probes[] = {
        {"l1_gap_free", l1_gap_free},
        {"l1_gap_fork", l1_gap_fork},
        {"init_untouched", init_untouched},
        {"destroy_keeps_pool", destroy_keeps_pool},
    };
    setvbuf(stdout, NULL, _IONBF, 0); /* a crash must not lose what was printed */
    for (size_t i = 0; argc == 2 && i < sizeof probes / sizeof probes[0]; i++) {
        if (strcmp(argv[1], probes[i].name) == 0) {
            probes[i].probe();
            return 0;
        }
    }
    puts("usage: probes NAME, NAME one of the probes listed in main");
    return 2;
}
