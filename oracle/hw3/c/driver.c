/* pagedcheck driver: runs a submission's llm_memory.c on behalf of the Python CAdapter.
 *
 * Usage: driver CMD_FD REPLY_FD CPU_SECONDS OUTPUT_LIMIT MEMORY_LIMIT SANDBOX [CLOSE_FD [LEDGER_FD [LAYOUT]]]
 * CLOSE_FD (under valgrind; -1: none): the descriptor valgrind was given for its log, closed before any of the
 * submission's calls (valgrind keeps its own copy, out of the program's reach). LEDGER_FD (natively; -1: none):
 * a socket to the grader, which receives the seccomp listener of every memory-mapping call (ledger.py).
 * LAYOUT: 0 blocks at their last page's end, 1 at their first page's start.
 *
 * Requests arrive on CMD_FD and replies leave on REPLY_FD, so the submission may print anything on
 * stdout/stderr. A reply carries what the call returned and the process's own heap counters, nothing else:
 * the pool is a window on the grader's memory file, and the engine's state is read by the grader from outside
 * this process while it waits for its next request (c/adapter.py, c/outside.py). The protocol is described in adapter.py; the white-box probes' operations are in driver_probes.c, included
 * below. The driver defines malloc, calloc, realloc, free and the aligned allocators itself, so every allocation
 * the process makes goes through them, however reached: the submission's own calls, and those the C library
 * makes on its behalf (strdup, fopen, asprintf, ...). Natively each block gets pages of its own in a reserved
 * region (the electric fence below): the grader reads the live blocks, and the pages a stray read or write
 * touched, from this process's mappings, outside it. The counters this driver keeps and sends are the
 * process's own word. The driver's own memory comes from mmap (own_alloc), outside the region, and valgrind
 * never sees it as a heap block. Under valgrind the blocks come from glibc's __libc_ functions, which valgrind
 * replaces with its own: valgrind checks every block, and the grader asks it for a leak check (the 'L'
 * request) where no engine is live. */
#define _GNU_SOURCE
#include "llm_memory.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <valgrind/memcheck.h> /* client requests: no-ops outside valgrind */
#if defined(__x86_64__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#endif
#include <sys/syscall.h>

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t count, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void *__libc_memalign(size_t alignment, size_t size);
void __libc_free(void *ptr);
void *reallocarray(void *ptr, size_t count, size_t size);
void *valloc(size_t size);
void *pvalloc(size_t size);
void *memalign(size_t alignment, size_t size);

/* ---- the driver's own memory: mappings, never heap blocks (a size header before each) ---- */

/* Every mapping call of the driver's own outside the heap's span (its tables, reply buffer, pool) is made by this
 * one system call instruction: natively the grader's ledger learns its address from the first mapping call after
 * the handover (register_own_mappings, before any submission code runs). A mapping made outside the span from
 * anywhere else is the submission's (ledger.py). */
__attribute__((noinline, noclone)) static long own_call(long nr, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    if (ret < 0 && ret > -4096)
        return errno = (int)-ret, -1;
    return ret;
#else
    return syscall(nr, a, b, c, d, e, f);
#endif
}

static void *own_mmap_at(size_t len, int prot, int flags, int fd, off_t offset)
{
    long got = own_call(SYS_mmap, 0, (long)len, prot, flags, fd, (long)offset);
    return got == -1 ? MAP_FAILED : (void *)got;
}

static void *own_mmap(size_t len, int prot, int flags, int fd) { return own_mmap_at(len, prot, flags, fd, 0); }

static void own_munmap(void *addr, size_t len) { own_call(SYS_munmap, (long)addr, (long)len, 0, 0, 0, 0); }

static void *own_realloc(void *ptr, size_t size)
{
    size_t *old = ptr ? (size_t *)ptr - 2 : NULL, old_size = old ? old[0] : 0;
    if (ptr != NULL && size <= old_size)
        return ptr;
    size_t *fresh = own_mmap(size + 2 * sizeof(size_t), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1);
    if (fresh == MAP_FAILED)
        return NULL;
    fresh[0] = size;
    if (old != NULL) {
        memcpy(fresh + 2, ptr, old_size);
        own_munmap(old, old_size + 2 * sizeof(size_t));
    }
    return fresh + 2;
}

static void own_free(void *ptr)
{
    if (ptr != NULL)
        own_munmap((size_t *)ptr - 2, ((size_t *)ptr - 2)[0] + 2 * sizeof(size_t));
}

static void *own_alloc(size_t size) { return own_realloc(NULL, size); } /* zeroed: a fresh mapping */

enum { REPLY_OK = 0, REPLY_FATAL = 2, REPLY_HEAP = 4 }; /* HEAP: fatal, a memory error (3 is REPLY_PROBE) */

static int reply_fd;

/* ---- growable byte buffer for replies ---- */

static struct {
    unsigned char *data;
    size_t len, cap;
} out;

static void die(const char *msg)
{
    (void)!write(STDERR_FILENO, msg, strlen(msg));
    _exit(121);
}

static void put(const void *src, size_t n)
{
    if (out.len + n > out.cap) {
        size_t cap = out.cap ? out.cap : 4096;
        while (cap < out.len + n)
            cap *= 2;
        if ((out.data = own_realloc(out.data, cap)) == NULL)
            die("pagedcheck driver: out of memory\n");
        out.cap = cap;
    }
    memcpy(out.data + out.len, src, n);
    out.len += n;
}

static void put_u8(uint8_t v) { put(&v, 1); }
static void put_u16(uint16_t v) { put(&v, 2); }
static void put_u32(uint32_t v) { put(&v, 4); }
static void put_i64(int64_t v) { put(&v, 8); }
static void put_u64(uint64_t v) { put(&v, 8); }

static void put_text(const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof text)
        n = sizeof text - 1;
    put_u16((uint16_t)n);
    put(text, (size_t)n);
}

static void write_full(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(0); /* Python is gone */
        p += w;
        n -= (size_t)w;
    }
}

/* Sends `out` framed by its length. */
static void send_reply(void)
{
    uint32_t len = (uint32_t)out.len;
    memcpy(out.data, &len, 4);
    write_full(reply_fd, out.data, out.len);
    out.len = 0;
}

static void begin_reply(uint8_t status)
{
    out.len = 0;
    put_u32(0); /* length, filled in by send_reply */
    put_u8(status);
}

/* The submission did something the driver cannot continue after: report it (REPLY_FATAL, or REPLY_HEAP when
 * the heap was found corrupted: a memory error made earlier, wherever it shows), then leave. */
static void fatal_as(uint8_t status, const char *fmt, va_list ap)
{
    char text[512];
    vsnprintf(text, sizeof text, fmt, ap);
    begin_reply(status);
    put_text("%s", text);
    send_reply();
    _exit(0);
}

static void fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fatal_as(REPLY_FATAL, fmt, ap);
}

static void heap_fatal(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fatal_as(REPLY_HEAP, fmt, ap);
}

/* An abort inside malloc or free is glibc finding its heap corrupted: prebuilt, since the heap is not usable. */
static volatile sig_atomic_t in_allocator;
static unsigned char heap_abort_reply[160];
static size_t heap_abort_len;

static void prepare_heap_abort_reply(void)
{
    begin_reply(REPLY_HEAP);
    put_text("malloc aborted: the heap was corrupted by an earlier memory error");
    uint32_t len = (uint32_t)out.len;
    memcpy(out.data, &len, 4);
    heap_abort_len = out.len < sizeof heap_abort_reply ? out.len : sizeof heap_abort_reply;
    memcpy(heap_abort_reply, out.data, heap_abort_len);
    out.len = 0;
}

static void on_abort(int sig)
{
    if (in_allocator) {
        write_full(reply_fd, heap_abort_reply, heap_abort_len);
        _exit(0);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ---- heap accounting: live blocks in an open-addressing table keyed by address ---- */

struct live {
    uintptr_t addr; /* 0: empty slot */
    size_t size;
    int counted; /* made once main began: the C library's start-up allocations are not the submission's */
    size_t first_page, pages; /* in the fence (pages > 0): the block's own pages */
};

static struct {
    struct live *slots;
    size_t mask, used;
    uint64_t allocations, live_blocks, live_bytes;
    uint32_t call_allocations, call_frees;
    int32_t fail_countdown; /* the n-th allocation attempt from now fails; 0: none */
    uint8_t fault_fired;
    int counting; /* main has begun */
} heap;

static size_t slot_of(uintptr_t addr)
{
    uint64_t h = (uint64_t)addr >> 4;
    h *= 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & heap.mask;
}

static void table_insert(uintptr_t addr, size_t size, int counted, size_t first_page, size_t pages);

static void table_grow(void)
{
    struct live *old = heap.slots;
    size_t old_cap = old ? heap.mask + 1 : 0, cap = old_cap ? old_cap * 2 : 1024;
    if ((heap.slots = own_alloc(cap * sizeof *heap.slots)) == NULL)
        die("pagedcheck driver: out of memory\n");
    heap.mask = cap - 1;
    heap.used = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].addr)
            table_insert(old[i].addr, old[i].size, old[i].counted, old[i].first_page, old[i].pages);
    own_free(old);
}

static void table_insert(uintptr_t addr, size_t size, int counted, size_t first_page, size_t pages)
{
    if (heap.slots == NULL || 2 * (heap.used + 1) > heap.mask + 1)
        table_grow();
    size_t i = slot_of(addr);
    while (heap.slots[i].addr)
        i = (i + 1) & heap.mask;
    heap.slots[i] = (struct live){addr, size, counted, first_page, pages};
    heap.used++;
}

static struct live *table_find(uintptr_t addr)
{
    if (heap.slots == NULL)
        return NULL;
    for (size_t i = slot_of(addr); heap.slots[i].addr; i = (i + 1) & heap.mask)
        if (heap.slots[i].addr == addr)
            return &heap.slots[i];
    return NULL;
}

/* Removes an entry, shifting later entries of its probe run back so lookups need no tombstones. */
static void table_remove(struct live *entry)
{
    size_t i = (size_t)(entry - heap.slots), j = i;
    heap.used--;
    for (;;) {
        heap.slots[i].addr = 0;
        for (;;) {
            j = (j + 1) & heap.mask;
            if (!heap.slots[j].addr)
                return;
            size_t k = slot_of(heap.slots[j].addr);
            if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
                continue; /* its home lies between the hole and it: it stays */
            break;
        }
        heap.slots[i] = heap.slots[j];
        i = j;
    }
}

/* ---- the heap natively: an electric fence, every block a mapping of its own, each page granted once ----
 *
 * Natively (not under valgrind), every block the submission's process allocates once main has begun is a
 * mapping of its own, of fresh pages in the span [FENCE_BASE, FENCE_BASE + FENCE_SPAN): each block lies above
 * every block before it, with an unmapped page between (its guard), at the end of its last page (at the alignment
 * its size allows) or, in the run at page starts (LAYOUT 1: memory_safety runs its battery both ways), at its
 * first page's start. A freed block's pages are made inaccessible at once (one system call), their bytes kept (a
 * read after the free sees what an ordinary heap would show), and unmapped once QUARANTINE_BLOCKS later blocks
 * were freed; no page of the span is ever mapped for a block twice in a run. So:
 * (a) every allocation and free is a system call the grader answers itself (ledger.py, through the seccomp
 *     filter below): the counts, the live blocks and failure injection are the grader's, never this process's;
 *     without the filter (no seccomp user notification on this machine) the grader reads the span's mappings
 *     (heap_maps.py);
 * (b) a read or write past a block's end or into a freed block faults, with or without valgrind. on_fault then
 *     maps that one page, shared, with the bytes it held, and lets the access go on: the call goes on as it would
 *     have on an ordinary heap (so a memory error costs memory_safety, not the items of the calls that follow),
 *     and the grader counts the page as a stray access (memory_safety). Past MAX_FAULTED pages in one call (a
 *     runaway loop) the pages it maps are the sink's: at most SINK_PAGES of them mapped at once, the oldest
 *     unmapped first, each still counted by the grader; so no memory error ends a call on the fence.
 * A block the fence cannot serve (its budget, a quarter of the address-space limit, or vm.max_map_count spent:
 * a design that keeps tens of thousands of blocks live) comes from the C library's heap instead, never NULL.
 * Under valgrind the blocks come from valgrind's own allocator (through __libc_malloc), which checks them. */
#define FENCE_BASE ((uintptr_t)0x200000000000ull) /* ledger.py's SPAN_START, heap_maps.py's REGION_BASE */
#define FENCE_SPAN ((uintptr_t)1 << 40)
enum { PAGE = 4096, MAX_FAULTED = 64, SINK_PAGES = 4, QUARANTINE_BLOCKS = 1024, QUARANTINE_PAGES = 16384 };

static struct {
    int on, at_start, ledgered; /* ledgered: the grader answers every mapping call (the filter is installed) */
    size_t cursor;              /* the first page a block may take: one past the last block's guard */
    size_t budget_pages, live_pages, max_blocks, live;
    size_t last_first, last_pages; /* the pages of the last block fence_alloc made, for track() */
    int full;                      /* the last fence_alloc failed for want of room: serve from the C library */
    struct { size_t first, pages; } quarantine[QUARANTINE_BLOCKS];
    size_t q_oldest, q_count, q_pages;
    unsigned faulted; /* pages faulted in the current request: past MAX_FAULTED they are the sink's */
    uintptr_t sink[SINK_PAGES]; /* the sink's pages mapped now (ledger.py's Ledger.sink), the oldest at sink_oldest */
    unsigned sink_count, sink_oldest;
} fence;

static int in_fence(uintptr_t addr) { return fence.on && addr >= FENCE_BASE && addr - FENCE_BASE < FENCE_SPAN; }

static size_t read_max_map_count(void)
{
    char text[32] = {0};
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
    size_t n = f != NULL && fgets(text, sizeof text, f) != NULL ? strtoul(text, NULL, 10) : 65530;
    if (f != NULL)
        fclose(f);
    return n;
}

/* The fence's room: a quarter of the address-space limit (1 GiB without one), and as many blocks as the map
 * count leaves beside the quarantine and the driver's own mappings. */
static void fence_reserve(rlim_t memory_limit, int at_start)
{
    if (RUNNING_ON_VALGRIND || sysconf(_SC_PAGESIZE) != PAGE)
        return;
    size_t maps = read_max_map_count();
    fence.on = 1;
    fence.at_start = at_start;
    fence.cursor = 1;
    fence.budget_pages = (memory_limit > 0 ? (size_t)memory_limit / 4 : (size_t)1 << 30) / PAGE;
    fence.max_blocks = maps > QUARANTINE_BLOCKS + 9216 ? maps - QUARANTINE_BLOCKS - 8192 : 1024;
}

/* A block of `size` bytes on fresh pages: aligned to `align` when given (memalign), else to the largest power of
 * two dividing its size, at most 16 (what any object that fits in it needs). NULL with fence.full set when the
 * fence has no room (the caller serves it from the C library), NULL alone when the allocation failed (the
 * grader's failure injection, or the machine out of memory). */
static void *fence_alloc(size_t size, size_t align, int zero)
{
    (void)zero; /* fresh pages are zero */
    fence.full = 0;
    size_t need = size ? size : 1;
    if (align == 0)
        align = (need & -need) < 16 ? (need & -need) : 16;
    /* With the ledger, only its answer (EDQUOT) says the fence is full: these records are the process's own */
    if (need > (fence.ledgered ? FENCE_SPAN / 2 : fence.budget_pages * PAGE))
        return fence.full = 1, errno = ENOMEM, NULL;
    need = (need + align - 1) / align * align;
    size_t n = (need + PAGE - 1) / PAGE, step = align > PAGE ? align / PAGE : 1;
    if (!fence.ledgered && (fence.live_pages + n > fence.budget_pages || fence.live >= fence.max_blocks))
        return fence.full = 1, errno = ENOMEM, NULL;
    for (;;) { /* past every page a stray access mapped (each a memory error, and bounded a call): never to the C
                * library for want of a place, which would serve the block without asking the grader's ledger */
        size_t first = (fence.cursor + step - 1) / step * step;
        if (first + n + 1 > FENCE_SPAN / PAGE)
            return fence.full = 1, errno = ENOMEM, NULL;
        unsigned char *start = (unsigned char *)(FENCE_BASE + first * PAGE);
        void *got = mmap(start, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                         -1, 0);
        if (got == MAP_FAILED && errno == EEXIST) { /* a stray access mapped a page there */
            fence.cursor = first + n + 1;
            continue;
        }
        if (got == MAP_FAILED && errno == EDQUOT) /* the grader's ledger: the budget is spent */
            return fence.full = 1, errno = ENOMEM, NULL;
        if (got == MAP_FAILED)
            return errno = ENOMEM, NULL;
        if (got != start) /* a kernel without MAP_FIXED_NOREPLACE placed it elsewhere */
            die("pagedcheck driver: the heap's pages were placed elsewhere\n");
        fence.cursor = first + n + 1; /* the page after it stays unmapped: its guard */
        fence.live++;
        fence.live_pages += n;
        fence.last_first = first;
        fence.last_pages = n;
        if (fence.at_start)
            return start;
        return (unsigned char *)(((uintptr_t)start + n * PAGE - need) & ~(uintptr_t)(align - 1));
    }
}

/* A freed block's pages: inaccessible at once (one system call: the grader counts the free), their bytes kept
 * (a read after the free sees what an ordinary heap would show) until QUARANTINE_BLOCKS (or QUARANTINE_PAGES)
 * later ones were freed, then unmapped. Never mapped for a block again. */
static void fence_release(size_t first, size_t n)
{
    if (mprotect((void *)(FENCE_BASE + first * PAGE), n * PAGE, PROT_NONE) != 0)
        die("pagedcheck driver: cannot release heap pages\n");
    fence.live--;
    fence.live_pages -= n;
    size_t at = (fence.q_oldest + fence.q_count) % QUARANTINE_BLOCKS;
    if (fence.q_count == QUARANTINE_BLOCKS) { /* the ring is full: the oldest leaves it */
        munmap((void *)(FENCE_BASE + fence.quarantine[at].first * PAGE), fence.quarantine[at].pages * PAGE);
        fence.q_pages -= fence.quarantine[at].pages;
        fence.q_oldest = (fence.q_oldest + 1) % QUARANTINE_BLOCKS;
        fence.q_count--;
    }
    fence.quarantine[at].first = first;
    fence.quarantine[at].pages = n;
    fence.q_count++;
    fence.q_pages += n;
    while (fence.q_pages > QUARANTINE_PAGES && fence.q_count > 0) {
        size_t old = fence.q_oldest;
        munmap((void *)(FENCE_BASE + fence.quarantine[old].first * PAGE), fence.quarantine[old].pages * PAGE);
        fence.q_pages -= fence.quarantine[old].pages;
        fence.q_oldest = (old + 1) % QUARANTINE_BLOCKS;
        fence.q_count--;
    }
}

/* Past MAX_FAULTED pages in a call, the room for one more sink page: the oldest unmapped when SINK_PAGES are
 * (its bytes, a freed block's kept ones, go with it). An instruction touches at most four pages (a string move's
 * two operands, each across a page's edge), so SINK_PAGES of them let every access go on. */
static void sink_make_room(void)
{
    if (fence.sink_count < SINK_PAGES)
        return;
    munmap((void *)fence.sink[fence.sink_oldest], PAGE);
    fence.sink_oldest = (fence.sink_oldest + 1) % SINK_PAGES;
    fence.sink_count--;
}

/* A read or write of the submission's faulted in the span, outside any live block: the page is mapped again,
 * shared, with the bytes it held (none for a guard page, never mapped), and the access goes on (the grader
 * counts the page as a stray access). Past MAX_FAULTED pages in the call, the page is the sink's (above). 0 when
 * it cannot be (the grader refused it: then the caller ends the call as a crash). */
static int fence_fault(uintptr_t addr)
{
    static unsigned char copy[PAGE];
    unsigned char *page = (unsigned char *)(addr & ~(uintptr_t)(PAGE - 1));
    int sunk = fence.faulted >= MAX_FAULTED;
    if (sunk)
        sink_make_room();
    if (mprotect(page, PAGE, PROT_READ) == 0) { /* a freed block's page, its bytes kept */
        memcpy(copy, page, PAGE);
        if (mmap(page, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
            return 0;
        memcpy(page, copy, PAGE);
    } else if (mmap(page, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0)
               != page) { /* a guard page, or a freed block's unmapped since */
        return 0;
    }
    if (sunk) {
        fence.sink[(fence.sink_oldest + fence.sink_count) % SINK_PAGES] = (uintptr_t)page;
        fence.sink_count++;
    }
    fence.faulted++;
    return 1;
}

/* A probe's run is served as a graded run is, from its first request to its last: the fence's blocks, the
 * grader's ledger, the same stray accesses let go on (the grader counts them after each probe operation and
 * leaves them to memory_safety: c/probe_adapter.py, probes.py). Nothing the submission can see tells the two
 * apart. */
static int fenced(void) { return fence.on && heap.counting; }

/* Failure injection where the grader's ledger cannot fail a grant: under valgrind, without the filter, or for a
 * block the fence cannot hold. With the ledger, the grader fails the k-th grant itself (ENOMEM). From the k-th on,
 * every allocation of the call fails, as memory that has run out stays out: a call that asks again gets NULL
 * again (review 7's malloc_twice). */
static int injected_failure(void)
{
    if (fence.ledgered && fenced())
        return 0;
    if (heap.fault_fired)
        return 1;
    if (heap.fail_countdown > 0 && --heap.fail_countdown == 0) {
        heap.fault_fired = 1;
        return 1;
    }
    return 0;
}

static void *track(void *p, size_t size)
{
    size_t first = in_fence((uintptr_t)p) ? fence.last_first : 0, pages = first ? fence.last_pages : 0;
    if (p != NULL && !heap.counting) {
        table_insert((uintptr_t)p, size, 0, first, pages);
    } else if (p != NULL) {
        table_insert((uintptr_t)p, size, 1, first, pages);
        heap.allocations++;
        heap.call_allocations++;
        heap.live_blocks++;
        heap.live_bytes += size;
    }
    return p;
}

/* malloc'd memory is filled with 0xA5, as a debugging malloc does: an array used uninitialised (ref_count
 * from malloc, an L1 table never set to NULL) must show every time, not read as the zeros of a fresh page.
 * Under valgrind the filled bytes are marked undefined again, so memcheck still reports their first use. */
enum { FRESH_BYTE = 0xA5 };

static void fill_fresh(void *block, size_t size)
{
    memset(block, FRESH_BYTE, size);
    (void)VALGRIND_MAKE_MEM_UNDEFINED(block, size);
}

void *malloc(size_t size)
{
    if (injected_failure())
        return NULL;
    void *block = NULL;
    if (fenced() && (block = fence_alloc(size, 0, 0)) == NULL && !fence.full)
        return track(NULL, size); /* failed: the grader's failure injection, or out of memory */
    if (block == NULL) { /* not fenced, or the fence full: the C library's (above) */
        in_allocator = 1;
        block = __libc_malloc(size);
        in_allocator = 0;
    }
    if (block != NULL)
        fill_fresh(block, size);
    return track(block, size);
}

void *calloc(size_t count, size_t size)
{
    if (injected_failure())
        return NULL;
    if (fenced() && size != 0 && count > SIZE_MAX / size)
        return errno = ENOMEM, NULL;
    void *block = NULL;
    if (fenced() && (block = fence_alloc(count * size, 0, 1)) == NULL && !fence.full)
        return track(NULL, count * size);
    if (block == NULL) {
        in_allocator = 1;
        block = __libc_calloc(count, size);
        in_allocator = 0;
    }
    return track(block, count * size);
}

static int probe_pool_freed(void *ptr); /* driver_probes.c */

/* The blocks the current API call has freed (the first ones): freeing one again is that call's own bug; any
 * other pointer that is not live was freed (or corrupted) by an earlier call, or never came from malloc. */
static uintptr_t freed_this_call[64];
static unsigned n_freed_this_call;

static int in_a_pool(uintptr_t addr); /* below, with the pools */

static int freed_in_this_call(uintptr_t addr)
{
    for (unsigned i = 0; i < n_freed_this_call && i < 64; i++)
        if (freed_this_call[i] == addr)
            return 1;
    return 0;
}

/* A free of a pointer that is no live block and that this call did not free (a block an earlier call freed, or
 * a pointer malloc never returned). On the fence it changes no live block: no page of the span is mapped for a
 * block twice in a run, so the pointer cannot be a later block's. So the call goes on, as on an ordinary heap, and
 * the grader counts the free as a stray access from outside: the driver reads a page of the span no block was
 * ever given (the next above every block), which faults, and on_fault maps it (fence_fault): a page of the span
 * made accessible outside any block, which the ledger counts (memory_safety's). The page is the driver's choice,
 * never the submission's pointer's (a freed block's page already mapped by an earlier stray would not fault).
 * Past MAX_FAULTED pages in the call, a sink page (fence_fault). 0 when no page faulted (the grader refused it). */
static int stray_free(void)
{
    unsigned before = fence.faulted;
    for (int tries = 0; tries < 8 && fence.faulted == before; tries++) {
        size_t first = fence.cursor;
        if (first + 2 > FENCE_SPAN / PAGE)
            return 0;
        fence.cursor = first + 2; /* the page after it stays unmapped: the next block keeps a guard */
        (void)*(volatile unsigned char *)(FENCE_BASE + first * PAGE);
        __asm__ volatile("" ::: "memory"); /* on_fault changed fence.faulted: read it again */
    }
    return fence.faulted != before;
}

/* `what` (free, realloc, malloc_usable_size) given a pointer that is no live block, nor one this call freed. On the
 * fence a stray access (stray_free) and the call goes on; the caller then answers as for no block. Off the fence
 * (valgrind's blocks, or before main) the heap found corrupted, memory_safety's. */
static void not_live(const char *what, void *ptr)
{
    if (fenced() && stray_free())
        return; /* a stray access the grader counted: the call goes on */
    if (fenced()) /* the grader refused the page (a program that rewrote the driver's records): a crash */
        fatal("%s(%p): not a live heap block, and the stray access could not be counted", what, ptr);
    heap_fatal("%s(%p): not a live heap block (freed, or a pointer malloc did not return)", what, ptr);
}

void free(void *ptr)
{
    if (ptr == NULL || probe_pool_freed(ptr))
        return;
    struct live *entry = table_find((uintptr_t)ptr);
    if (entry == NULL && freed_in_this_call((uintptr_t)ptr))
        fatal("free(%p): a double free: this call already freed that block", ptr);
    if (entry == NULL && in_a_pool((uintptr_t)ptr))
        fatal("free(%p): not a live heap block: the caller's pool, which malloc did not return", ptr);
    if (entry == NULL) {
        not_live("free", ptr);
        return;
    }
    if (n_freed_this_call < 64)
        freed_this_call[n_freed_this_call] = (uintptr_t)ptr;
    n_freed_this_call++;
    if (entry->counted) {
        heap.live_blocks--;
        heap.live_bytes -= entry->size;
        heap.call_frees++;
    }
    size_t first = entry->first_page, pages = entry->pages;
    table_remove(entry);
    if (pages > 0) {
        fence_release(first, pages);
        return;
    }
    in_allocator = 1;
    __libc_free(ptr);
    in_allocator = 0;
}

void *realloc(void *ptr, size_t size)
{
    if (ptr == NULL)
        return malloc(size);
    struct live *entry = table_find((uintptr_t)ptr);
    if (entry == NULL) { /* no block to resize: as a failed realloc (a correct program makes none such) */
        not_live("realloc", ptr);
        return errno = ENOMEM, NULL;
    }
    if (size == 0) { /* glibc frees and returns NULL */
        free(ptr);
        return NULL;
    }
    if (injected_failure())
        return NULL;
    void *moved;
    size_t old_size = entry->size, first = entry->first_page, pages = entry->pages;
    if (pages > 0) { /* in the fence a block always moves: a pointer kept to the old one faults */
        if ((moved = fence_alloc(size, 0, 0)) == NULL && !fence.full)
            return NULL; /* failed: the old block stays */
        if (moved == NULL) { /* the fence full: the C library's */
            in_allocator = 1;
            moved = __libc_malloc(size);
            in_allocator = 0;
            if (moved == NULL)
                return NULL;
        }
        memcpy(moved, ptr, old_size < size ? old_size : size);
        fence_release(first, pages);
    } else { /* a block of the C library's: the fence is asked first, as for every allocation (the grader's
              * ledger fails the k-th request, whatever the block) */
        moved = fenced() ? fence_alloc(size, 0, 0) : NULL;
        if (moved == NULL && fenced() && !fence.full)
            return NULL; /* failed: the old block stays */
        if (moved != NULL) {
            memcpy(moved, ptr, old_size < size ? old_size : size);
            in_allocator = 1;
            __libc_free(ptr);
            in_allocator = 0;
        } else {
            in_allocator = 1;
            moved = __libc_realloc(ptr, size);
            in_allocator = 0;
            if (moved == NULL)
                return NULL;
        }
    }
    if (entry->counted) {
        heap.live_blocks--; /* the old block is gone; track() counts the moved one as one allocation */
        heap.live_bytes -= old_size;
    }
    table_remove(entry);
    if (size > old_size)
        fill_fresh((unsigned char *)moved + old_size, size - old_size);
    return track(moved, size);
}

/* Every block malloc returned is in the table, with the size it was asked for: its usable size (a block of the
 * fence has no header before it for the C library's own answer to read: that read would be a stray access) */
size_t malloc_usable_size(void *ptr)
{
    if (ptr == NULL)
        return 0;
    struct live *entry = table_find((uintptr_t)ptr);
    if (entry == NULL) { /* no block: no usable byte */
        not_live("malloc_usable_size", ptr);
        return 0;
    }
    return entry->size;
}

void *reallocarray(void *ptr, size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(ptr, count * size);
}

void *memalign(size_t alignment, size_t size)
{
    if (injected_failure())
        return NULL;
    if (fenced() && (alignment == 0 || (alignment & (alignment - 1)) != 0))
        return errno = EINVAL, NULL;
    void *block = NULL;
    if (fenced() && (block = fence_alloc(size, alignment < 16 ? 16 : alignment, 0)) == NULL && !fence.full)
        return track(NULL, size);
    if (block == NULL) {
        in_allocator = 1;
        block = __libc_memalign(alignment, size);
        in_allocator = 0;
    }
    if (block != NULL)
        fill_fresh(block, size);
    return track(block, size);
}

void *aligned_alloc(size_t alignment, size_t size) { return memalign(alignment, size); }
void *valloc(size_t size) { return memalign((size_t)sysconf(_SC_PAGESIZE), size); }

void *pvalloc(size_t size)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return memalign(page, (size + page - 1) / page * page);
}

int posix_memalign(void **out_ptr, size_t alignment, size_t size)
{
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0)
        return EINVAL;
    void *block = memalign(alignment, size);
    if (block == NULL && size != 0)
        return ENOMEM;
    *out_ptr = block;
    return 0;
}

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

static int read_full(int fd, void *buf, size_t n);

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
    if (pool.region == MAP_FAILED) {
        pool.region = NULL;
        fatal("pagedcheck driver: cannot map a pool of %zu bytes", size);
    }
    return pool.region + guard;
}

/* ---- faults: a memory error in the heap, or the submission crashing ---- */

static int in_fence(uintptr_t addr);
static int fence_fault(uintptr_t addr);

/* A fault in the fence's region is a memory error (memory_safety's); anywhere else it is the submission
 * crashing, and the process dies of the signal as if there were no handler. */
static void on_fault(int sig, siginfo_t *info, void *context)
{
    (void)context;
    if (in_fence((uintptr_t)info->si_addr) && fence_fault((uintptr_t)info->si_addr))
        return; /* the access goes on, on a page the grader counts from outside as a memory error */
    if (in_fence((uintptr_t)info->si_addr)) /* the page refused (the driver's records rewritten): a crash, its item's */
        fatal("SIG%s: an invalid read or write at %p, in the heap but in no live block (past a block's end, before "
              "its start, or in a freed block), on a page that could not be mapped", sigabbrev_np(sig), info->si_addr);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* ---- requests ---- */

struct request {
    uint8_t op;
    int32_t fail_at; /* -1: unchanged, 0: no injected failure, k: the k-th allocation from now fails */
    uint64_t target; /* engine address, or pool size for 'I' */
    int32_t a, b;
} __attribute__((packed));

static int read_full(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        p += r;
        n -= (size_t)r;
    }
    return 1;
}

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
        if (req.fail_at >= 0)
            heap.fail_countdown = req.fail_at;
        heap.call_allocations = heap.call_frees = 0;
        n_freed_this_call = 0;
        fence.faulted = 0;
        heap.fault_fired = 0;
        if (is_probe_op(req.op)) { /* a request like any other: its own count of faulted pages */
            probe_serve(&req, cmd_fd);
            continue;
        }
        int64_t ret = call(&req, cmd_fd);
        begin_reply(REPLY_OK);
        put_i64(ret);
        put_u32(heap.call_allocations);
        put_u32(heap.call_frees);
        put_u8(heap.fault_fired);
        put_u64(heap.allocations);
        put_u64(heap.live_blocks);
        put_u64(heap.live_bytes);
        send_reply();
    }
}

/* ---- sandbox ---- */

static void limit(int resource, rlim_t value)
{
    struct rlimit rl = {value, value};
    setrlimit(resource, &rl);
}

/* Kills the process (SIGSYS) on any attempt to start a process, run a program or signal another
 * process. RLIMIT_NPROC cannot do this for root, whose process count is never limited. */
static void forbid_processes(void)
{
#if defined(__x86_64__)
#define KILL_ON(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        KILL_ON(__NR_fork),
        KILL_ON(__NR_vfork),
        KILL_ON(__NR_clone),
        KILL_ON(435), /* clone3 */
        KILL_ON(__NR_execve),
        KILL_ON(__NR_execveat),
        KILL_ON(__NR_kill),
        KILL_ON(__NR_ptrace),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
#undef KILL_ON
    struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        die("pagedcheck driver: cannot install the seccomp filter\n");
#endif
}

/* Hands every memory-mapping system call of this process to the grader from now on (seccomp user
 * notification): each waits in the kernel until the grader, whose ledger (ledger.py) keeps the heap's pages,
 * lets it run or fails it. The listener's descriptor goes to the grader over `sock` (SCM_RIGHTS) with "y", or
 * "n" when this kernel cannot; this process keeps no copy of either. brk too: the C library's heap may grow only
 * once the ledger said the fence is full. */
static void hand_mappings_to_grader(int sock)
{
    int listener = -1;
#if defined(__x86_64__)
#define NOTIFY_ON(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, 0x7fc00000U)
    struct sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1), /* the x32 numbering of the same calls */
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
        NOTIFY_ON(__NR_mmap),
        NOTIFY_ON(__NR_mprotect),
        NOTIFY_ON(__NR_munmap),
        NOTIFY_ON(__NR_brk),
        NOTIFY_ON(__NR_mremap),
        NOTIFY_ON(__NR_madvise),
        NOTIFY_ON(__NR_shmat),
        NOTIFY_ON(__NR_remap_file_pages),
        NOTIFY_ON(329), /* pkey_mprotect */
        NOTIFY_ON(453), /* map_shadow_stack */
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
#undef NOTIFY_ON
    struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    const unsigned long new_listener = 1UL << 3, wait_killable = 1UL << 5;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) {
        listener = (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, new_listener | wait_killable, &prog);
        if (listener < 0 && errno == EINVAL) /* before Linux 5.19: a signal may interrupt a call while it waits */
            listener = (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, new_listener, &prog);
    }
#endif
    char said = listener >= 0 ? 'y' : 'n';
    union {
        char bytes[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = {&said, 1};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (listener >= 0) {
        msg.msg_control = control.bytes;
        msg.msg_controllen = sizeof control.bytes;
        struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmsg), &listener, sizeof(int));
    }
    if (sendmsg(sock, &msg, 0) != 1)
        die("pagedcheck driver: cannot reach the grader\n");
    if (listener >= 0)
        close(listener);
    close(sock);
    fence.ledgered = listener >= 0;
}

/* Natively, before the handover: the free room the C library's heap already has (its top chunk, its bins) is
 * taken now, and its top may grow by no more than a request needs, so from the handover on a block of the C
 * library's (its own malloc reached by address, or the driver's fallback) needs the heap to grow, a brk or mmap
 * the ledger refuses until it said the fence is full. Then the first mapping call after the handover, the
 * driver's own: the ledger learns own_mmap's instruction from it. */
static void spend_libc_room(void)
{
    mallopt(M_TOP_PAD, 0);
    mallopt(M_TRIM_THRESHOLD, -1); /* no trim: a shrunk top grows back behind nobody's count */
    for (size_t size = 16; size <= 1024; size += 16) /* the per-size caches and fast bins */
        for (int i = 0; i < 16; i++)
            (void)__libc_malloc(size);
    void *end = sbrk(0);
    while (sbrk(0) == end && __libc_malloc(16) != NULL) /* every free chunk split, then the top: until it grows */
        ;
    for (struct mallinfo2 m = mallinfo2(); m.keepcost >= 64 && __libc_malloc(16) != NULL; m = mallinfo2())
        ;
}

static void register_own_mappings(void)
{
    void *first = own_alloc(1);
    if (first == NULL)
        die("pagedcheck driver: the grader refused the driver's own memory\n");
    own_free(first);
}

static void sandbox(rlim_t cpu_seconds, rlim_t output_limit, rlim_t memory_limit, int strict)
{
    limit(RLIMIT_CORE, 0);
    limit(RLIMIT_CPU, cpu_seconds);
    limit(RLIMIT_FSIZE, output_limit);
    limit(RLIMIT_NPROC, 0); /* no fork at all for an ordinary user */
    if (memory_limit > 0)
        limit(RLIMIT_AS, memory_limit);
    if (strict)
        forbid_processes();
}

int main(int argc, char **argv)
{
    if (argc < 7 || argc > 10)
        die("usage: driver CMD_FD REPLY_FD CPU_SECONDS OUTPUT_LIMIT MEMORY_LIMIT SANDBOX [CLOSE_FD [LEDGER_FD [LAYOUT]]]\n");
    fence_reserve(strtoul(argv[5], NULL, 10), argc > 9 && atoi(argv[9]) == 1);
    heap.counting = 1;
    if (argc > 7 && atoi(argv[7]) >= 0)
        close(atoi(argv[7]));
    int cmd_fd = atoi(argv[1]);
    reply_fd = atoi(argv[2]);
    setvbuf(stdout, NULL, _IONBF, 0); /* a crash must not lose what the submission printed */

    static char alt_stack[1 << 16]; /* so a stack overflow still reaches on_fault */
    stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack};
    sigaltstack(&ss, NULL);
    struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK};
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    prepare_heap_abort_reply();
    struct sigaction on_abort_sa = {.sa_handler = on_abort, .sa_flags = SA_NODEFER | SA_ONSTACK};
    sigaction(SIGABRT, &on_abort_sa, NULL);

    if (argc > 8 && atoi(argv[8]) >= 0) { /* natively: from here on the grader answers every mapping call */
        if (fence.on)
            spend_libc_room();
        hand_mappings_to_grader(atoi(argv[8]));
        if (fence.ledgered)
            register_own_mappings();
    }
    sandbox(strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10), strtoul(argv[5], NULL, 10), atoi(argv[6]));
    serve(cmd_fd);

    /* Clean exit: drop the driver's own references, so a block the submission never freed is "definitely
     * lost" under valgrind rather than reachable through the accounting table. */
    own_free(heap.slots);
    own_free(out.data);
    return 0;
}
