/* pagedcheck white-box probes: rules a program cannot check through the API alone, checked by reading and
 * editing the submission's structures through the header.
 *
 *     ./probes NAME VERDICT_FD TOKEN_FD
 *
 * says "TOKEN PASS: what was checked" on VERDICT_FD and exits 0, or "TOKEN FAIL: what differs" and exits 1.
 * The verdict goes over that private descriptor, never stdout: whatever the submission prints counts for
 * nothing. TOKEN is read from TOKEN_FD (a pipe the grader fills and closes) by take_token, which runs from
 * .preinit_array: this file is linked before the submission, so that runs before any of its constructors, and
 * the pipe is empty by the time the submission's first instruction runs.
 *
 * probes.py prepends GUARD_SIZE, GUARD_BYTE and MAGIC(slot) (oracle/hw3/pool.py's c_defines), and runs each
 * probe in its own process. Only destroy_keeps_pool calls llm_destroy (the others leave their engines and
 * pools to the process's exit), so a bug in llm_destroy fails that probe alone. A probe whose set-up meets
 * another item's bug (a create that maps the wrong blocks, say) passes as "not checked": the bug costs the
 * item of its own rule. big_pool needs mmap (POSIX) with MAP_NORESERVE (Linux). */
#define _DEFAULT_SOURCE /* mmap's MAP_ANONYMOUS and MAP_NORESERVE; before any header */
#include "llm_memory.h"

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int verdict_fd = -1;
static char token[65];

static void take_token(int argc, char **argv, char **envp)
{
    (void)envp;
    if (argc != 4)
        return;
    int fd = atoi(argv[3]);
    size_t have = 0;
    ssize_t n;
    while (have < sizeof token - 1 && (n = read(fd, token + have, sizeof token - 1 - have)) > 0)
        have += (size_t)n;
    close(fd);
    verdict_fd = atoi(argv[2]);
}
__attribute__((section(".preinit_array"), used)) static void (*const take_token_first)(int, char **, char **) = take_token;

/* One line on the private channel: "TOKEN VERDICT: <prefix><fmt...><tail>". */
static void say(const char *verdict, const char *prefix, const char *fmt, va_list ap, const char *tail)
{
    char text[1024];
    vsnprintf(text, sizeof text, fmt, ap);
    dprintf(verdict_fd, "%s %s: %s%s%s\n", token, verdict, prefix, text, tail);
}

/* Each API call a probe makes first says "TOKEN CALL: <api>" on the private channel when it differs from the
 * last one, so a crash or a hang is located in the call it happened in (probes.py passes one in a call the
 * probe is not about as not checked: that call's item judges it). */
static void entering(const char *api)
{
    static const char *last = "";
    if (strcmp(last, api) != 0) {
        last = api;
        dprintf(verdict_fd, "%s CALL: %s\n", token, api);
    }
}
#define llm_init(...) (entering("llm_init"), llm_init(__VA_ARGS__))
#define create_sequence(...) (entering("create_sequence"), create_sequence(__VA_ARGS__))
#define fork_sequence(...) (entering("fork_sequence"), fork_sequence(__VA_ARGS__))
#define append_kv(...) (entering("append_kv"), append_kv(__VA_ARGS__))
#define free_sequence(...) (entering("free_sequence"), free_sequence(__VA_ARGS__))
#define llm_destroy(...) (entering("llm_destroy"), llm_destroy(__VA_ARGS__))

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("FAIL", "", fmt, ap, "");
    va_end(ap);
    exit(1);
}

static void pass(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("PASS", "", fmt, ap, "");
    va_end(ap);
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

static void not_checked(const char *fmt, ...);

static void check_all_free(const LLMEngine *engine, const char *after)
{
    for (int block = 0; block < engine->total_local_blocks; block++)
        if (engine->ref_count[block] != 0)
            fail("ref_count[%d] is %d after %s, expected 0", block, engine->ref_count[block], after);
    if (engine->free_local_blocks != engine->total_local_blocks) /* every ref_count is 0: Constraint 5's bug */
        not_checked("free_local_blocks is %d after %s, expected %d (item free_count)", engine->free_local_blocks, after,
             engine->total_local_blocks);
}

static LLMEngine *probe_engine(int blocks)
{
    size_t size = (size_t)blocks * BLOCK_SIZE;
    unsigned char *pool = checked_malloc(size);
    fill_magic(pool, size);
    LLMEngine *engine = llm_init(pool, size);
    if (engine == NULL)
        not_checked("llm_init(pool, %zu) returned NULL (item llm_init)", size);
    return engine;
}

/* A probe meets another item's bug in its set-up: it passes as not checked, and that item fails. */
static void not_checked(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    say("PASS", "not checked: ", fmt, ap, " (another item's bug)");
    va_end(ap);
    exit(0);
}

/* create_sequence(engine, seq_id, records) on an engine with nothing mapped, checked before a probe edits the
 * result: `records / 16` rounded up distinct blocks, each with ref_count 1, mapped in order from
 * block_table[0][0], -1 and NULL everywhere else. Block ids are first fit's business (the first_fit item), so
 * any distinct ids do. */
static Sequence *created(LLMEngine *engine, int seq_id, int records)
{
    int used = (records + KV_PER_BLOCK - 1) / KV_PER_BLOCK, free_before = engine->free_local_blocks;
    Sequence *seq = create_sequence(engine, seq_id, records);
    if (seq == NULL || seq->block_table == NULL)
        not_checked("create_sequence(engine, %d, %d) returned %s with %d free blocks", seq_id, records,
                    seq == NULL ? "NULL" : "a sequence with no block table", free_before);
    const char *after = "after create_sequence";
    if (engine->free_local_blocks != free_before - used)
        not_checked("free_local_blocks is %d %s(engine, %d, %d), expected %d", engine->free_local_blocks, after,
                    seq_id, records, free_before - used);
    int mapped = 0;
    for (int l1 = 0; l1 < L1_PT_SIZE; l1++) {
        const int *l2 = seq->block_table[l1];
        if ((l2 != NULL) != (l1 * L2_PT_SIZE < used))
            not_checked("block_table[%d] is %s %s(engine, %d, %d)", l1, l2 ? "an L2 table" : "NULL", after, seq_id,
                        records);
        for (int j = 0; l2 != NULL && j < L2_PT_SIZE; j++) {
            int block = l2[j], want = l1 * L2_PT_SIZE + j < used;
            if (want ? block < 0 || block >= engine->total_local_blocks || engine->ref_count[block] != 1 : block != -1)
                not_checked("block_table[%d][%d] is %d %s(engine, %d, %d)", l1, j, block, after, seq_id, records);
            mapped += want;
        }
    }
    int held = 0; /* `used` entries, each a block with ref_count 1, and `used` such blocks: all distinct */
    for (int block = 0; block < engine->total_local_blocks; block++)
        held += engine->ref_count[block] == 1;
    if (mapped != used || held != used)
        not_checked("create_sequence(engine, %d, %d) maps %d blocks, %d of them distinct; expected %d", seq_id,
                    records, mapped, held, used);
    return seq;
}

/* The blocks a probe's sequence maps, by block id: 1 where mapped. */
static unsigned char *mapped_blocks(const LLMEngine *engine, const Sequence *seq)
{
    unsigned char *mapped = calloc((size_t)engine->total_local_blocks, 1);
    if (mapped == NULL)
        fail("probe: out of memory");
    for (int l1 = 0; l1 < L1_PT_SIZE; l1++)
        for (int j = 0; seq->block_table[l1] != NULL && j < L2_PT_SIZE; j++)
            if (seq->block_table[l1][j] != -1)
                mapped[seq->block_table[l1][j]] = 1;
    return mapped;
}

/* After freeing a probe's only sequence: every block free. `kept` marks the blocks a loop that stopped at the
 * probe's gap would keep, so that bug gets its name (`why`) and any other gets the plain difference. */
static void check_released(const LLMEngine *engine, const unsigned char *kept, const char *after, const char *why)
{
    int stopped = 1, any = 0;
    for (int block = 0; block < engine->total_local_blocks; block++) {
        any |= engine->ref_count[block] != 0;
        stopped &= (engine->ref_count[block] != 0) == kept[block];
    }
    if (any && stopped)
        fail("after %s, the blocks past the gap still have ref_count 1, expected 0 (%s)", after, why);
    check_all_free(engine, after);
}

/* free_sequence must visit all 16 L1 slots. Through the API a sequence's L2 tables are contiguous from
 * slot 0, so the probe makes a gap: a 33-block sequence uses slots 0, 1 and 2; moving slot 1's table to
 * slot 3 keeps every block mapped exactly once and leaves slot 1 NULL between live slots. */
static void l1_gap_free(void)
{
    enum { BLOCKS = 40, RECORDS = (2 * L2_PT_SIZE + 1) * KV_PER_BLOCK };
    LLMEngine *engine = probe_engine(BLOCKS);
    Sequence *seq = created(engine, 1, RECORDS);
    unsigned char *kept = mapped_blocks(engine, seq);
    for (int j = 0; j < L2_PT_SIZE; j++)
        kept[seq->block_table[0][j]] = 0; /* slot 0 comes before the gap */

    seq->block_table[3] = seq->block_table[1];
    seq->block_table[1] = NULL;
    if (free_sequence(engine, 1) != 0)
        fail("free_sequence(engine, 1) did not return 0 for a sequence with L1 slots 0, 2 and 3 in use");
    check_released(engine, kept, "freeing a sequence whose L1 slot 1 is NULL and slots 0, 2 and 3 are in use",
                   "the loop must not stop at a NULL slot");
    if (engine->active_seqs.next != &engine->active_seqs || engine->active_seqs.prev != &engine->active_seqs)
        fail("the active list is not empty after freeing its only sequence");
    pass("freed a 33-block sequence with L1 slots 0, 2 and 3 in use: every block released");
}

/* The child of a fork of `parent` must have its own copy of each of the parent's L2 tables, entry for entry,
 * NULL where the parent's slot is NULL, the parent's kv_count, and each block shared (ref_count 2). `edit`
 * says what the probe did to the parent's table, and `why` names the loop bug a mismatch most likely is. */
static void check_forked(const LLMEngine *engine, const Sequence *parent, const Sequence *child, const char *edit,
                         const char *why)
{
    if (child == NULL || child->block_table == NULL)
        fail("fork_sequence(engine, 1, 2) returned %s for a parent whose %s", child ? "a child with no block table" : "NULL",
             edit);
    if (child->kv_count != parent->kv_count) /* the fork item's directed scenario judges kv_count */
        not_checked("fork_sequence(engine, 1, 2): the child's kv_count is %d, expected the parent's %d (item fork)",
                    child->kv_count, parent->kv_count);
    int first = parent->block_table[0] != NULL ? parent->block_table[0][0] : -1;
    if (first >= 0 && first < engine->total_local_blocks && engine->ref_count[first] != 2) /* before any gap */
        not_checked("ref_count[%d] is %d after fork_sequence(engine, 1, 2), expected 2, for the block of the parent's "
                    "block_table[0][0], before any gap (item fork)", first, engine->ref_count[first]);
    for (int l1 = 0; l1 < L1_PT_SIZE; l1++) {
        const int *from = parent->block_table[l1], *to = child->block_table[l1];
        if (from == NULL) {
            if (to != NULL)
                fail("fork_sequence(engine, 1, 2) of a parent whose L1 slot %d is NULL: the child's block_table[%d] "
                     "is an L2 table, expected NULL", l1, l1);
            continue;
        }
        if (to == NULL)
            fail("fork_sequence(engine, 1, 2) of a parent whose %s: the child's block_table[%d] is NULL, expected a "
                 "copy of the parent's (%s)", edit, l1, why);
        if (to == from)
            fail("fork_sequence(engine, 1, 2): the child's block_table[%d] is the parent's L2 table, expected its own copy", l1);
        for (int j = 0; j < L2_PT_SIZE; j++) {
            if (to[j] != from[j])
                fail("fork_sequence(engine, 1, 2) of a parent whose %s: the child's block_table[%d][%d] is %d, "
                     "expected the parent's %d (%s)", edit, l1, j, to[j], from[j], why);
            if (from[j] != -1 && engine->ref_count[from[j]] != 2)
                fail("ref_count[%d] is %d after fork_sequence(engine, 1, 2), expected 2: the block is in the parent's "
                     "block_table[%d][%d], and the parent's %s (%s)", from[j], engine->ref_count[from[j]], l1, j,
                     edit, why);
        }
    }
}

/* fork_sequence must copy every non-NULL parent L2 table (Task 3: "For each non-NULL parent L2 table"), past
 * a NULL one too. The same gap as l1_gap_free: a 33-block parent whose L1 slot 1 is NULL and slots 0, 2 and 3
 * map blocks; the child must get its own copy of slots 0, 2 and 3 and every block a ref_count of 2. */
static void l1_gap_fork(void)
{
    enum { BLOCKS = 40, USED = 2 * L2_PT_SIZE + 1, RECORDS = USED * KV_PER_BLOCK };
    LLMEngine *engine = probe_engine(BLOCKS);
    Sequence *parent = created(engine, 1, RECORDS);
    parent->block_table[3] = parent->block_table[1];
    parent->block_table[1] = NULL;
    check_forked(engine, parent, fork_sequence(engine, 1, 2), "L1 slot 1 is NULL and slots 0, 2 and 3 are in use",
                 "the loop must not stop at a NULL slot");
    if (engine->free_local_blocks != BLOCKS - USED)
        fail("free_local_blocks is %d after fork_sequence(engine, 1, 2), expected %d (a fork takes no block)",
             engine->free_local_blocks, BLOCKS - USED);
    pass("forked a 33-block sequence with L1 slots 0, 2 and 3 in use: every L2 table copied, every block shared");
}

/* Inside an L2 table too, free_sequence releases "every mapped physical block (!= -1)" and fork copies "the
 * mapped entries": through the API an L2 table fills from entry 0 without a hole, so the probe makes one. A
 * 3-block sequence maps entries 0, 1 and 2 of block_table[0]; entry 1 moves to entry 5, leaving -1 between. */
static Sequence *l2_hole(LLMEngine *engine)
{
    Sequence *seq = created(engine, 1, 3 * KV_PER_BLOCK);
    int *l2 = seq->block_table[0];
    l2[5] = l2[1];
    l2[1] = -1;
    return seq;
}

static void l2_hole_free(void)
{
    LLMEngine *engine = probe_engine(8);
    Sequence *seq = l2_hole(engine);
    unsigned char *kept = mapped_blocks(engine, seq);
    kept[seq->block_table[0][0]] = 0; /* entry 0 comes before the hole */
    if (free_sequence(engine, 1) != 0)
        fail("free_sequence(engine, 1) did not return 0 for a sequence whose block_table[0] maps entries 0, 2 and 5");
    check_released(engine, kept, "freeing a sequence whose block_table[0] maps entries 0, 2 and 5 (entry 1 is -1)",
                   "the loop over an L2 table must not stop at an unmapped entry");
    pass("freed a sequence whose block_table[0] maps entries 0, 2 and 5: every block released");
}

static void l2_hole_fork(void)
{
    LLMEngine *engine = probe_engine(8);
    Sequence *parent = l2_hole(engine);
    check_forked(engine, parent, fork_sequence(engine, 1, 2), "block_table[0] maps entries 0, 2 and 5 (entry 1 is -1)",
                 "the loop over an L2 table must not stop at an unmapped entry");
    pass("forked a sequence whose block_table[0] maps entries 0, 2 and 5: every entry copied, every block shared");
}

/* The spec limits live sequences by nothing but the pool. 5000 one-block sequences with ids spread over the
 * non-negative int range are live at once, then each is freed. */
static int spread_id(int i)
{
    /* distinct high halves (40503 is odd) over the whole non-negative int range (a negative id is the fuzz
     * item's business); low halves shared by runs of 256 ids, so an id kept in a short or a char collides */
    return (int)(((uint32_t)i * 40503u & 0x7FFFu) << 16 | (uint32_t)i >> 8);
}

static int list_length(const LLMEngine *engine, int limit)
{
    int n = 0;
    for (const struct list_node *node = engine->active_seqs.next; node != &engine->active_seqs && n <= limit;
         node = node->next)
        n++;
    return n;
}

static void many_sequences(void)
{
    enum { COUNT = 5000 };
    LLMEngine *engine = probe_engine(COUNT);
    if (engine->total_local_blocks != COUNT)
        not_checked("llm_init counted %d blocks in a %d-block pool", engine->total_local_blocks, COUNT);
    for (int i = 0; i < COUNT; i++)
        if (create_sequence(engine, spread_id(i), 1) == NULL)
            fail("create_sequence(engine, %d, 1) returned NULL with %d sequences live and %d free blocks, expected a "
                 "sequence: no live sequence has that id, and the spec limits sequences only by the pool", spread_id(i),
                 i, engine->free_local_blocks);
    if (engine->free_local_blocks != 0)
        fail("free_local_blocks is %d with %d one-block sequences in a %d-block pool, expected 0",
             engine->free_local_blocks, COUNT, COUNT);
    int n = list_length(engine, COUNT); /* the list's order is the tail_insertion item's business */
    if (n != COUNT)
        fail("the active list holds %s%d sequences, expected %d", n > COUNT ? "more than " : "", n > COUNT ? COUNT : n, COUNT);
    for (int i = 0; i < COUNT; i++)
        if (free_sequence(engine, spread_id(i)) != 0)
            fail("free_sequence(engine, %d) returned -1 with %d sequences live, expected 0", spread_id(i), COUNT - i);
    check_all_free(engine, "freeing all 5000 sequences");
    pass("5000 sequences with ids spread up to INT_MAX live at once, then all freed");
}

/* Only the pool limits how many sequences share a block: a sequence and 300 forks, past any small counter. */
static void many_forks(void)
{
    enum { FORKS = 300 };
    LLMEngine *engine = probe_engine(4);
    Sequence *seq = created(engine, 0, 1);
    int block = seq->block_table[0][0];
    for (int i = 1; i <= FORKS; i++)
        if (fork_sequence(engine, 0, i) == NULL)
            fail("fork_sequence(engine, 0, %d) returned NULL with %d forks of sequence 0 live, expected a sequence", i, i - 1);
    if (engine->ref_count[block] != FORKS + 1)
        fail("ref_count[%d] is %d after 300 forks of the one-block sequence that maps it, expected %d", block,
             engine->ref_count[block], FORKS + 1);
    for (int i = 0; i <= FORKS; i++)
        if (free_sequence(engine, i) != 0)
            fail("free_sequence(engine, %d) returned -1 with %d sequences sharing a block, expected 0", i, FORKS + 1 - i);
    check_all_free(engine, "freeing a sequence and its 300 forks");
    pass("a one-block sequence and 300 forks share its block (ref_count 301), then all freed");
}

/* Each engine's state is its own (Task 1: llm_init allocates an LLMEngine and its own ref_count array): two
 * engines live at once, with the same sequence ids, must not see each other's sequences, blocks or counts.
 * The probe checks what one engine's calls return and that they leave the other engine exactly as it was, so
 * a wrong block count (another item's bug) does not fail it. */
typedef struct {
    int free_local_blocks, sequences, ref_count[16];
} Snapshot;

static Snapshot snapshot(const LLMEngine *engine)
{
    Snapshot shot = {.free_local_blocks = engine->free_local_blocks, .sequences = list_length(engine, 100)};
    for (int block = 0; block < engine->total_local_blocks && block < 16; block++)
        shot.ref_count[block] = engine->ref_count[block];
    return shot;
}

static void check_unchanged(const LLMEngine *engine, Snapshot before, const char *name, const char *calls)
{
    Snapshot now = snapshot(engine);
    if (now.free_local_blocks != before.free_local_blocks || now.sequences != before.sequences)
        fail("%s on the other engine changed engine %s: free_local_blocks %d -> %d, active sequences %d -> %d", calls,
             name, before.free_local_blocks, now.free_local_blocks, before.sequences, now.sequences);
    for (int block = 0; block < 16; block++)
        if (now.ref_count[block] != before.ref_count[block])
            fail("%s on the other engine changed engine %s: ref_count[%d] %d -> %d", calls, name, block,
                 before.ref_count[block], now.ref_count[block]);
}

/* One call of two_engines: its result must be `want` (1: a sequence or 0; 0: NULL or -1). */
static void expect(int ok, int want, const char *call, const char *why)
{
    if (ok != want)
        fail("%s %s, expected %s: %s", call, ok ? "succeeded" : "failed", want ? "success" : "NULL / -1", why);
}

static void two_engines(void)
{
    LLMEngine *a = probe_engine(10), *b = probe_engine(6);
    expect(create_sequence(a, 1, 20) != NULL, 1, "create_sequence(a, 1, 20)", "a is the first of two live engines");
    expect(create_sequence(b, 1, 5) != NULL, 1, "create_sequence(b, 1, 5)", "sequence 1 exists only in the other engine, a");
    expect(create_sequence(b, 2, 5) != NULL, 1, "create_sequence(b, 2, 5)", "1 sequence is live in b");

    Snapshot before = snapshot(b);
    expect(append_kv(a, 1, 7) == 0, 1, "append_kv(a, 1, 7)", "sequence 1 lives in a, with room in its block");
    expect(free_sequence(a, 1) == 0, 1, "free_sequence(a, 1)", "sequence 1 lives in a");
    expect(create_sequence(a, 3, 5) != NULL, 1, "create_sequence(a, 3, 5)", "a has free blocks and no sequence 3");
    expect(free_sequence(a, 2) == 0, 0, "free_sequence(a, 2)", "sequence 2 lives in engine b, not a");
    expect(append_kv(a, 2, 8) == 0, 0, "append_kv(a, 2, 8)", "sequence 2 lives in engine b, not a");
    check_unchanged(b, before, "b", "append_kv, free_sequence and create_sequence");

    before = snapshot(a);
    expect(append_kv(b, 2, 9) == 0, 1, "append_kv(b, 2, 9)", "sequence 2 lives in b, with room in its block");
    expect(free_sequence(b, 1) == 0, 1, "free_sequence(b, 1)", "sequence 1 lives in b");
    expect(free_sequence(b, 3) == 0, 0, "free_sequence(b, 3)", "sequence 3 lives in engine a, not b");
    check_unchanged(a, before, "a", "append_kv and free_sequence");
    pass("two live engines with the same sequence ids kept their sequences, blocks and counts apart");
}

/* Block 2^25 starts 2 GiB into the pool: its address must be computed in size_t
 * ((char *)pool + (size_t)block * BLOCK_SIZE); in int, block * BLOCK_SIZE overflows. The pool is reserved
 * address space, never touched but where the probe looks; ref_count marks the blocks below 2^25 as taken
 * (white-box), so a create and a copy-on-write must use blocks past 2^25. Which ones is first fit's business. */
static int pool_int(const unsigned char *pool, int block, int slot)
{
    int value;
    memcpy(&value, pool + (size_t)block * BLOCK_SIZE + (size_t)slot * KV_SIZE, sizeof value);
    return value;
}

static void big_pool(void)
{
    const int far = 1 << 25, blocks = far + 3;
    size_t size = (size_t)blocks * BLOCK_SIZE;
    unsigned char *pool = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (pool == MAP_FAILED) {
        pass("not checked: no 2 GiB of address space for the pool");
        return;
    }
    LLMEngine *engine = llm_init(pool, size);
    if (engine == NULL || engine->total_local_blocks != blocks)
        not_checked("llm_init did not take the 2 GiB pool whole (item llm_init)");
    for (int block = 0; block < far; block++)
        engine->ref_count[block] = 1;
    engine->free_local_blocks = 3;
    Sequence *seq = create_sequence(engine, 1, 1);
    if (seq == NULL || seq->block_table[0] == NULL || seq->block_table[0][0] < far || seq->block_table[0][0] >= blocks)
        fail("create_sequence(engine, 1, 1) with only blocks 2^25 to 2^25 + 2 free did not map one of them");
    int first = seq->block_table[0][0];
    if (append_kv(engine, 1, 0x5EED) != 0)
        fail("append_kv(engine, 1, 0x5EED) on a 2 GiB pool did not return 0");
    if (pool_int(pool, first, 1) != 0x5EED)
        fail("append_kv(engine, 1, 0x5EED) did not write record 1 of block %d, 2 GiB and more into the pool "
             "(compute the block's address in size_t, not int)", first);
    Sequence *child = fork_sequence(engine, 1, 2);
    if (child != NULL && (child->kv_count != 2 || engine->ref_count[first] != 2)) {
        pass("only partly checked: the write past 2^25 is right; the copy-on-write was not checked: fork_sequence(engine, "
             "1, 2) gave the child kv_count %d and ref_count[%d] %d, expected 2 and 2 (another item's bug)",
             child->kv_count, first, engine->ref_count[first]);
        exit(0);
    }
    if (child == NULL || append_kv(engine, 2, 0xC0DE) != 0)
        fail("fork_sequence(engine, 1, 2) or append_kv(engine, 2, 0xC0DE) on a 2 GiB pool failed, with free blocks left");
    int copy = child->block_table[0] != NULL ? child->block_table[0][0] : -1;
    if (copy == first) {
        pass("only partly checked: the write past 2^25 is right; append_kv(engine, 2, 0xC0DE) after the fork wrote "
             "into the shared block %d instead of a copy (another item's bug: append_cow)", first);
        exit(0);
    }
    if (copy < far || copy >= blocks)
        fail("append_kv(engine, 2, 0xC0DE) after the fork: the child maps block %d, expected a copy of block %d", copy, first);
    if (pool_int(pool, copy, 1) != 0x5EED || pool_int(pool, copy, 2) != 0xC0DE)
        fail("the copy-on-write from block %d to block %d did not copy record 1 and write 0xC0DE as record 2 "
             "(compute the blocks' addresses in size_t, not int)", first, copy);
    pass("blocks past 2^25 of a 2 GiB pool written and copied at the right addresses");
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
            not_checked("llm_init(pool, %zu) wrote into the pool (byte %zu) (item no_premature_writes)", size,
                        byte - GUARD_SIZE);
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
    pass("llm_init of 0 bytes to 64 MiB writes nothing, counts whole blocks, starts empty; a NULL pool is refused");
}

/* llm_destroy must neither free nor write the pool: the caller (here this probe) owns it. */
static void destroy_keeps_pool(void)
{
    enum { SIZE = 10 * BLOCK_SIZE };
    unsigned char *pool = checked_malloc(SIZE), before[SIZE];
    fill_magic(pool, SIZE);
    LLMEngine *engine = llm_init(pool, SIZE);
    if (engine == NULL)
        not_checked("llm_init(pool, %d) returned NULL (item llm_init)", SIZE);
    if (create_sequence(engine, 1, 20) == NULL || fork_sequence(engine, 1, 2) == NULL ||
        append_kv(engine, 2, 7) != 0 || append_kv(engine, 1, 8) != 0 || create_sequence(engine, 3, 16) == NULL)
        not_checked("a create, fork or append failed on a pool with room for it");
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
    pass("llm_destroy with three live sequences left the caller's pool allocated and unchanged");
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
        {"l2_hole_free", l2_hole_free},
        {"l2_hole_fork", l2_hole_fork},
        {"many_sequences", many_sequences},
        {"many_forks", many_forks},
        {"two_engines", two_engines},
        {"big_pool", big_pool},
    };
    setvbuf(stdout, NULL, _IONBF, 0); /* a crash must not lose what was printed */
    for (size_t i = 0; argc == 4 && verdict_fd >= 0 && i < sizeof probes / sizeof probes[0]; i++) {
        if (strcmp(argv[1], probes[i].name) == 0) {
            probes[i].probe();
            return 0;
        }
    }
    puts("usage: probes NAME VERDICT_FD TOKEN_FD, NAME one of the probes listed in main");
    return 2;
}
