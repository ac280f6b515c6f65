/* pagedcheck driver, part two: the operations of the white-box probes (oracle/hw3/probes.py, driven by
 * c/probe_adapter.py). Included by driver.c, after its reply buffer and its guarded reads, so the driver
 * stays one translation unit whose names the submission never sees.
 *
 * These operations only report and edit: what a probe's pool, counters and block tables hold, and the few
 * white-box edits a probe makes. The probe judges what they report in the grader; nothing here decides a
 * verdict, so a submission that writes into this process can at most make the state look like the one a
 * correct implementation leaves, never make a word pass.
 *
 * A probe's pool is a window on a memory file the grader owns (a memfd passed to the driver): the grader reads
 * the pool's bytes itself, outside this process. Each reply is status REPLY_PROBE, then kind:u8 (0 read, 2
 * unreadable + text), then the operation's fields (adapter.py's protocol, and probe_adapter.py's). */

enum { REPLY_PROBE = 3, MAX_PROBE_POOLS = 64, KIND_READ = 0, KIND_UNREADABLE = 2 };

static struct probe_pool {
    void *base;   /* what llm_init was given */
    int freed;    /* the submission passed base to free(): recorded, never done (the grader owns the pool) */
} probe_pools[MAX_PROBE_POOLS];
static size_t n_probe_pools;

static int is_probe_op(uint8_t op)
{
    return op != 0 && strchr("PKSMEBHNGQ", op) != NULL;
}

/* free() of a probe's pool: the caller owns it (llm_destroy must not free it); noted for the 'Q' operation. */
static int probe_pool_freed(void *ptr)
{
    for (size_t i = 0; i < n_probe_pools; i++)
        if (probe_pools[i].base == ptr) {
            probe_pools[i].freed = 1;
            return 1;
        }
    return 0;
}

/* 'P': llm_init on guard + size + guard bytes at `offset` of memory file `fd` (payload: offset:u64
 * guard:u64; b = 1: a NULL pool). Replies mapped:u8 engine:u64 pool:u64; mapped 0: no address space. */
static void probe_init(const struct request *req, int cmd_fd)
{
    uint64_t where[2];
    if (!read_full(cmd_fd, where, sizeof where))
        _exit(0);
    size_t size = (size_t)req->target, guard = (size_t)where[1];
    unsigned char *base = NULL;
    if (!req->b) {
        unsigned char *region = mmap(NULL, size + 2 * guard, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                                     req->a, (off_t)where[0]);
        if (region == MAP_FAILED || n_probe_pools == MAX_PROBE_POOLS) {
            put_u8(KIND_READ);
            put_u8(0);
            put_u64(0);
            put_u64(0);
            return;
        }
        base = region + guard;
        probe_pools[n_probe_pools++] = (struct probe_pool){base, 0};
    }
    LLMEngine *engine = llm_init(base, size);
    put_u8(KIND_READ);
    put_u8(1);
    put_u64((uint64_t)(uintptr_t)engine);
    put_u64((uint64_t)(uintptr_t)base);
}

static int list_length(const LLMEngine *engine, int limit)
{
    int n = 0;
    for (const struct list_node *node = engine->active_seqs.next; node != &engine->active_seqs && n <= limit;
         node = node->next)
        n++;
    return n;
}

/* 'K' counts (a = list limit, -1: none): total:i32 free:i32 pool_base:u64 has_ref:u8 n_ref:u32 ref:i32*n
 * length:i32 (-1: not asked) empty:u8. */
static void put_counts(LLMEngine *engine, int32_t limit)
{
    reading = "the engine";
    int total = engine->total_local_blocks;
    put_i32(total);
    put_i32(engine->free_local_blocks);
    put_u64((uint64_t)(uintptr_t)engine->pool_base_ptr);
    reading = "ref_count";
    put_u8(engine->ref_count != NULL);
    if (engine->ref_count != NULL && total > 0 && total <= MAX_OBSERVED_BLOCKS) {
        put_u32((uint32_t)total);
        put(engine->ref_count, (size_t)total * sizeof(int));
    } else {
        put_u32(0);
    }
    reading = "the active list";
    put_i32(limit >= 0 ? list_length(engine, limit) : -1);
    put_u8(engine->active_seqs.next == &engine->active_seqs && engine->active_seqs.prev == &engine->active_seqs);
}

/* 'S' a sequence: seq_id:i32 kv_count:i32 has_table:u8 16 x l2:u64 (0: NULL) wild:u16, then 16 x i32 per
 * non-NULL l2 whose bit in `wild` is clear (a set bit: reading that L2 table faulted, a wild pointer). */
static void put_probe_sequence(const Sequence *seq)
{
    reading = "a sequence";
    int **table = seq->block_table;
    put_i32(seq->seq_id);
    put_i32(seq->kv_count);
    put_u8(table != NULL);
    reading = "a sequence's block_table";
    for (int i = 0; i < L1_PT_SIZE; i++)
        put_u64(table != NULL ? (uint64_t)(uintptr_t)table[i] : 0);
    size_t wild_at = out.len;
    uint16_t wild = 0;
    put_u16(0);
    reading = "an L2 block table";
    for (int i = 0; table != NULL && i < L1_PT_SIZE; i++)
        if (table[i] != NULL && put_l2(table[i]))
            wild |= (uint16_t)(1u << i);
    memcpy(out.data + wild_at, &wild, 2);
}

static int in_table(int32_t i, int size)
{
    return i >= 0 && i < size;
}

/* A read or an edit of the submission's state, run guarded (a wild pointer is reported, not a crash). */
static void probe_access(const void *arg)
{
    const struct request *req = arg;
    LLMEngine *engine = (LLMEngine *)(uintptr_t)req->target;
    Sequence *seq = (Sequence *)(uintptr_t)req->target;
    switch (req->op) {
    case 'K':
        put_counts(engine, req->a);
        break;
    case 'S':
        put_probe_sequence(seq);
        break;
    case 'M': /* block_table[b] = block_table[a]; block_table[a] = NULL */
        reading = "a sequence's block_table";
        if (in_table(req->a, L1_PT_SIZE) && in_table(req->b, L1_PT_SIZE)) {
            seq->block_table[req->b] = seq->block_table[req->a];
            seq->block_table[req->a] = NULL;
        }
        break;
    case 'E': { /* block_table[a][dst] = block_table[a][src]; block_table[a][src] = -1; b = src * 16 + dst */
        int32_t src = req->b / L2_PT_SIZE, dst = req->b % L2_PT_SIZE;
        reading = "an L2 block table";
        if (in_table(req->a, L1_PT_SIZE) && in_table(src, L2_PT_SIZE) && in_table(dst, L2_PT_SIZE)) {
            int *l2 = seq->block_table[req->a];
            l2[dst] = l2[src];
            l2[src] = -1;
        }
        break;
    }
    case 'B': /* block_table[a / 16][a % 16] = b, in an L2 table the sequence has */
        reading = "an L2 block table";
        if (in_table(req->a, L1_PT_SIZE * L2_PT_SIZE) && seq->block_table[req->a / L2_PT_SIZE] != NULL)
            seq->block_table[req->a / L2_PT_SIZE][req->a % L2_PT_SIZE] = req->b;
        break;
    case 'H': /* ref_count[0 .. a) = b */
        reading = "ref_count";
        for (int32_t block = 0; block < req->a; block++)
            engine->ref_count[block] = req->b;
        break;
    case 'N': /* free_local_blocks = a */
        reading = "the engine";
        engine->free_local_blocks = req->a;
        break;
    case 'G': /* ref_count[a]:i32 */
        reading = "ref_count";
        put_i32(engine->ref_count[req->a]);
        break;
    case 'Q': { /* freed:u8, for the pool at `target` */
        int freed = 0;
        for (size_t i = 0; i < n_probe_pools; i++)
            freed |= probe_pools[i].base == (void *)(uintptr_t)req->target && probe_pools[i].freed;
        put_u8((uint8_t)freed);
        break;
    }
    }
}

static void probe_serve(const struct request *req, int cmd_fd)
{
    begin_reply(REPLY_PROBE);
    if (req->op == 'P')
        probe_init(req, cmd_fd); /* llm_init is the submission's code: a fault there is its crash */
    else
        guarded(probe_access, req, KIND_READ, KIND_UNREADABLE);
    send_reply();
}
