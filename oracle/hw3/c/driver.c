/* pagedcheck's HW3 driver: runs a submission's llm_memory.c on behalf of the Python CAdapter (c/adapter.py).
 *
 * The machinery any C family shares (the driver's own memory, its replies, the heap's accounting, the electric
 * fence and the malloc family; faults, the sandbox, the handover to the grader's ledger, main and its command
 * line) is oracle/native/'s driver_heap.c, included first, and driver_main.c, included last (the build puts
 * oracle/native/ on the driver's include path). This file holds HW3's part: the pool (a window on the grader's
 * memory file), the requests and their dispatch to llm_memory.h's API, the reply to each (the call's return
 * value, then the process's own heap counters, nothing else: the engine's state is read by the grader from
 * outside this process while it waits for its next request, c/probe_state.py), the white-box probes'
 * operations (driver_probes.c, included below) and the core's hooks. The protocol is described in
 * c/driver_reply.py; the grader asks valgrind for a leak check (the 'L' request) where no engine is live. */
#define _GNU_SOURCE
#include "llm_memory.h"

#include "driver_heap.c" /* the machinery of any C family: oracle/native/ */

/* ---- the pool: guard + pool + guard, a window on the grader's memory file ----
 *
 * The grader creates the file (a memfd), writes the window and reads it back itself after every call: the
 * pool's bytes it judges never pass through this process. The driver only maps the window, shared. */

static struct {
    unsigned char *region;
    size_t len;
} pool;

static int in_a_pool(uintptr_t addr)
{
    return pool.region != NULL && addr >= (uintptr_t)pool.region && addr < (uintptr_t)pool.region + pool.len;
}

/* Maps guard + size + guard bytes at `offset` of memory file `fd` (payload: offset:u64 guard:u64), or none
 * (`null`: llm_init is given NULL). An earlier pool stays mapped: an old engine may still point into it. */
static void *load_pool(int cmd_fd, int fd, size_t size, int null)
{
    uint64_t where[2];
    if (!read_full(cmd_fd, where, sizeof where))
        _exit(0);
    pool.region = NULL;
    pool.len = 0;
    if (null)
        return NULL;
    size_t guard = (size_t)where[1];
    pool.len = size + 2 * guard;
    pool.region = own_mmap_at(pool.len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)where[0]);
    if (pool.region == MAP_FAILED && errno == EBADF) { /* the grader's ledger, or the kernel: not the grader's file */
        pool.region = NULL;
        fatal("pagedcheck driver: cannot map a pool of %zu bytes: descriptor %d no longer names the grader's memory "
              "file (the program closed it, or put another file in its place)", size, fd);
    }
    if (pool.region == MAP_FAILED) {
        pool.region = NULL;
        fatal("pagedcheck driver: cannot map a pool of %zu bytes (%s)", size, strerror(errno));
    }
    return pool.region + guard;
}

/* ---- requests ---- */

struct request {
    uint8_t op;
    int32_t fail_at; /* -1: unchanged, 0: no injected failure, k: the k-th allocation from now fails */
    uint64_t target; /* engine address, or pool size for 'I' */
    int32_t a, b;
} __attribute__((packed));

#include "driver_probes.c" /* the white-box probes' operations: see there */

static int64_t call(const struct request *req, int cmd_fd)
{
    LLMEngine *engine = (LLMEngine *)(uintptr_t)req->target;
    switch (req->op) {
    case 'I': /* a = the memory file, b = 1: a NULL pool */
        return (int64_t)(uintptr_t)llm_init(load_pool(cmd_fd, req->a, (size_t)req->target, req->b), (size_t)req->target);
    case 'C':
        return (int64_t)(uintptr_t)create_sequence(engine, req->a, req->b);
    case 'F':
        return (int64_t)(uintptr_t)fork_sequence(engine, req->a, req->b);
    case 'A':
        return append_kv(engine, req->a, req->b);
    case 'R':
        return free_sequence(engine, req->a);
    case 'D':
        return llm_destroy(engine);
    case 'L': /* under valgrind: a leak check now, written by valgrind to its own log (a no-op natively) */
        VALGRIND_DO_LEAK_CHECK;
        return 0;
    default:
        die("pagedcheck driver: unknown request\n");
        return 0;
    }
}

static void serve(int cmd_fd)
{
    struct request req;
    while (read_full(cmd_fd, &req, sizeof req)) {
        call_starts(req.fail_at);
        if (is_probe_op(req.op)) { /* a request like any other: its own count of faulted pages */
            probe_serve(&req, cmd_fd);
            continue;
        }
        int64_t ret = call(&req, cmd_fd);
        begin_reply(REPLY_OK);
        put_i64(ret);
        put_heap_counts();
        send_reply();
    }
}

/* ---- the core's hooks (driver_heap.c) ---- */

static int family_freed(void *ptr) { return probe_pool_freed(ptr); }

static const char *family_memory(uintptr_t addr) { return in_a_pool(addr) ? "the caller's pool" : NULL; }

#include "driver_main.c" /* faults, the sandbox, main: oracle/native/ */
