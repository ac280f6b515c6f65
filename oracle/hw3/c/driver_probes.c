/* pagedcheck driver, part two: the operations of the white-box probes (oracle/hw3/probes.py, driven by
 * c/probe_adapter.py). Included by driver.c, after its reply buffer and its guarded reads, so the driver
 * stays one translation unit whose names the submission never sees.
 *
 * Only two: 'P', llm_init on a pool the grader owns (a window on a memory file, a memfd passed to the driver,
 * whose bytes the grader reads itself, outside this process), and 'Q', whether free() was given that pool.
 * The submission's objects (counters, ref_count, block tables) are not reported from here: the grader reads
 * and edits them itself, from its own process, while this one is stopped (c/outside.py). Each reply is status
 * REPLY_PROBE, then kind:u8 (0 read), then the operation's fields (probe_adapter.py's protocol). */

enum { REPLY_PROBE = 3, MAX_PROBE_POOLS = 64, KIND_READ = 0, KIND_UNREADABLE = 2 };

static struct probe_pool {
    void *base;   /* what llm_init was given */
    int freed;    /* the submission passed base to free(): recorded, never done (the grader owns the pool) */
} probe_pools[MAX_PROBE_POOLS];
static size_t n_probe_pools;

static int is_probe_op(uint8_t op)
{
    return op != 0 && strchr("PQ", op) != NULL;
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
        unsigned char *region = own_mmap_at(size + 2 * guard, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE,
                                            req->a, (off_t)where[0]); /* the driver's own mapping, as a graded pool */
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

/* 'Q': freed:u8, whether the submission passed the pool at `target` to free(). */
static void put_pool_freed(const struct request *req)
{
    int freed = 0;
    for (size_t i = 0; i < n_probe_pools; i++)
        freed |= probe_pools[i].base == (void *)(uintptr_t)req->target && probe_pools[i].freed;
    put_u8(KIND_READ);
    put_u8((uint8_t)freed);
}

static void probe_serve(const struct request *req, int cmd_fd)
{
    begin_reply(REPLY_PROBE);
    if (req->op == 'P')
        probe_init(req, cmd_fd); /* llm_init is the submission's code: a fault there is its crash */
    else
        put_pool_freed(req);
    send_reply();
}
