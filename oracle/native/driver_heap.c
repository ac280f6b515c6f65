/* pagedcheck's C driver machinery, for any family graded in C: included first by a family's driver.c (after
 * `#define _GNU_SOURCE` and its API's header), which then defines its requests, its `serve` loop and the hooks
 * below, and includes driver_main.c last.
 *
 * Here: the driver's own memory (mappings of its own, by one system call instruction the grader's ledger learns:
 * oracle/native/ledger.py), its replies (framed by their length: oracle/native/reply_pipe.py; a fatal reply's
 * text, REPLY_FATAL, or REPLY_HEAP for a heap found corrupted), the heap's accounting, the electric fence and the
 * malloc family, which the driver defines itself, so every allocation the process makes goes through them,
 * however reached: the submission's own calls, and those the C library makes on its behalf (strdup, fopen,
 * asprintf, ...). Natively each block gets pages of its own in a reserved region (the electric fence below): the
 * grader reads the live blocks, and the pages a stray read or write touched, from its ledger or this process's
 * mappings, outside it. The counters this driver keeps and sends are the process's own word. The driver's own
 * memory comes from mmap (own_alloc), outside the region, and valgrind never sees it as a heap block. Under
 * valgrind the blocks come from glibc's __libc_ functions, which valgrind replaces with its own: valgrind checks
 * every block. */

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h> /* on_fault's context: the mask its return restores (driver_main.c die_of) */
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

/* ---- the driver's own memory: mappings, never heap blocks (a size header before each) ----
 *
 * Natively, with the grader's ledger, the driver maps its own memory (the heap's table, the reply buffer) at its
 * bounded size BEFORE the handover (reserve_own_memory, driver_main.c), while no code of the submission's has run,
 * and sends their places with the listener: from the handover on no call may unmap, remap or advise them, and
 * none of them grows (own_sealed). The one mapping the driver makes later outside the heap's span is a pool's
 * window (the family's: MAP_SHARED of the grader's memory file, at the offset the grader gave), which the ledger
 * tells by what it maps, never by where the call was made: the submission's code runs in this process and can
 * reach any instruction of it (review 12's sequences_on_the_drivers_pages called the driver's own system call
 * instruction), and change any descriptor of it: the ledger reads which file the call's descriptor names (a
 * file of the submission's put at the number of the grader's is refused, EBADF). Every other mapping outside the
 * span is the submission's (oracle/native/ledger.py). */
static int own_sealed; /* the handover is made: the driver's own memory may no longer grow */

/* The driver's mapping calls, made by a system call instruction of its own (the C library's mmap may be a
 * submission's wrapper's, under valgrind its replacement's). Nothing trusts where it lies: the submission may
 * find it by its bytes and call it, and what it maps so is the submission's like any other mapping. */
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

static void die(const char *msg);

static void *own_realloc(void *ptr, size_t size)
{
    size_t *old = ptr ? (size_t *)ptr - 2 : NULL, old_size = old ? old[0] : 0;
    if (ptr != NULL && size <= old_size)
        return ptr;
    if (own_sealed) /* past its bound after the handover: a mapping the ledger would take for the submission's */
        die("pagedcheck driver: the driver's own memory is past its bound\n");
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
    if (ptr != NULL && !own_sealed)
        own_munmap((size_t *)ptr - 2, ((size_t *)ptr - 2)[0] + 2 * sizeof(size_t));
}

static void *own_alloc(size_t size) { return own_realloc(NULL, size); } /* zeroed: a fresh mapping */

#ifndef DRIVER_REPLY_BOUND /* a family whose replies may be longer defines its own bound first */
#define DRIVER_REPLY_BOUND 4096 /* the most bytes a reply holds: hw3's driver_reply.py REPLY_BOUND */
#endif

enum { REPLY_OK = 0, REPLY_FATAL = 2, REPLY_HEAP = 4 }; /* HEAP: fatal, a memory error (a family's own statuses: 3 and up) */

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
    raise(sig); /* SA_RESETHAND: the action is the default already (no change: driver_main.c keep_own_handlers) */
}

/* ---- what the family's driver defines (its driver.c, which includes this file first and driver_main.c last) ----
 *
 * family_freed(ptr): a free the family's driver takes itself (memory it handed the submission, freed: noted
 * there), 1 when so; family_memory(addr): in words, the memory the family's driver handed the submission at
 * `addr` that malloc never returned ("the caller's pool": a free of it is the call's crash), or NULL;
 * serve(cmd_fd): its request loop (read_full each request, call_starts, call the API, reply), until end of input. */
static int family_freed(void *ptr);
static const char *family_memory(uintptr_t addr);
static void serve(int cmd_fd);

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

/* The table at `cap` slots (a power of two, at least the live entries' twice). */
static void table_resize(size_t cap)
{
    struct live *old = heap.slots;
    size_t old_cap = old ? heap.mask + 1 : 0;
    if ((heap.slots = own_alloc(cap * sizeof *heap.slots)) == NULL)
        die("pagedcheck driver: out of memory\n");
    heap.mask = cap - 1;
    heap.used = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].addr)
            table_insert(old[i].addr, old[i].size, old[i].counted, old[i].first_page, old[i].pages);
    own_free(old);
}

static void table_grow(void) { table_resize(heap.slots ? (heap.mask + 1) * 2 : 1024); }

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
 * A block the fence cannot hold (the live blocks' bytes past a quarter of the address-space limit, or their number
 * past what vm.max_map_count leaves: the grader's ledger decides, ledger.py) fails: NULL with ENOMEM, as on a machine
 * out of memory. Natively no block comes from the C library's heap, where no guard page would follow it (review 10's
 * overread_past_budget), and no answer changes how the ledger takes a later call (ledger_spent).
 * Under valgrind the blocks come from valgrind's own allocator (through __libc_malloc), which checks them. */
#define FENCE_BASE ((uintptr_t)0x200000000000ull) /* ledger.py's SPAN_START, heap_maps.py's REGION_BASE */
#define FENCE_SPAN ((uintptr_t)1 << 40)
enum { PAGE = 4096, MAX_FAULTED = 64, SINK_PAGES = 4, QUARANTINE_BLOCKS = 1024, QUARANTINE_PAGES = 16384,
       DEFAULT_MAP_COUNT = 65530 /* the kernel's default vm.max_map_count */ };

static struct {
    int on, at_start, ledgered; /* ledgered: the grader answers every mapping call (the filter is installed) */
    size_t cursor;              /* the first page a block may take: one past the last block's guard */
    size_t budget_pages, live_pages, max_blocks, live;
    size_t last_first, last_pages; /* the pages of the last block fence_alloc made, for track() */
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
 * count leaves beside the quarantine and the driver's own mappings, the count taken at most the kernel's default
 * (ledger.py's fence_blocks: the same on every machine that keeps the default or more). */
static void fence_reserve(rlim_t memory_limit, int at_start, size_t given_map_count)
{
    if (RUNNING_ON_VALGRIND || sysconf(_SC_PAGESIZE) != PAGE)
        return;
    size_t maps = given_map_count > 0 ? given_map_count : read_max_map_count();
    if (maps > DEFAULT_MAP_COUNT)
        maps = DEFAULT_MAP_COUNT;
    fence.on = 1;
    fence.at_start = at_start;
    fence.cursor = 1;
    fence.budget_pages = (memory_limit > 0 ? (size_t)memory_limit / 4 : (size_t)1 << 30) / PAGE;
    fence.max_blocks = maps > QUARANTINE_BLOCKS + 9216 ? maps - QUARANTINE_BLOCKS - 8192 : 1024;
}

/* A block of `size` bytes on fresh pages: aligned to `align` when given (memalign), else to the largest power of
 * two dividing its size, at most 16 (what any object that fits in it needs). NULL with ENOMEM when the allocation
 * failed: the grader's failure injection, the fence's room spent (the ledger's answer; without the ledger, the
 * driver's own records, which can only make a block fail), or the machine out of memory. Never elsewhere. */
static void *fence_alloc(size_t size, size_t align, int zero)
{
    (void)zero; /* fresh pages are zero */
    size_t need = size ? size : 1;
    if (align == 0)
        align = (need & -need) < 16 ? (need & -need) : 16;
    if (need > (fence.ledgered ? FENCE_SPAN / 2 : fence.budget_pages * PAGE)) /* larger than any budget: spends nothing */
        return errno = ENOMEM, NULL;
    need = (need + align - 1) / align * align;
    size_t n = (need + PAGE - 1) / PAGE, step = align > PAGE ? align / PAGE : 1;
    if (!fence.ledgered && (fence.live_pages + n > fence.budget_pages || fence.live >= fence.max_blocks))
        return errno = ENOMEM, NULL;
    for (;;) { /* past every page a stray access mapped (each a memory error, and bounded a call): a block never
                * fails for want of a place, only on the ledger's answer */
        size_t first = (fence.cursor + step - 1) / step * step;
        if (first + n + 1 > FENCE_SPAN / PAGE)
            return errno = ENOMEM, NULL;
        unsigned char *start = (unsigned char *)(FENCE_BASE + first * PAGE);
        void *got = mmap(start, n * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                         -1, 0);
        if (got == MAP_FAILED && errno == EEXIST) { /* a stray access mapped a page there */
            fence.cursor = first + n + 1;
            continue;
        }
        if (got == MAP_FAILED) /* the grader's ledger failed it (injected, or the fence's room spent), or the kernel */
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
 * leaves them to memory_safety: the family's probe adapter). Nothing the submission can see tells the two
 * apart. */
static int fenced(void) { return fence.on && heap.counting; }

/* Failure injection where the grader's ledger cannot fail a grant: under valgrind, or without the filter. With the
 * ledger, the grader fails the k-th grant itself (ENOMEM). From the k-th on,
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

/* malloc'd memory is filled with 0xA5, as a debugging malloc does: an array used uninitialised (a counts
 * array from malloc, a table of pointers never set to NULL) must show every time, not read as the zeros of a fresh page.
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
    if (fenced())
        block = fence_alloc(size, 0, 0); /* NULL: failed (the grader's failure injection, or out of memory) */
    else { /* under valgrind, or before main: the C library's (above) */
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
    if (fenced())
        block = fence_alloc(count * size, 0, 1);
    else {
        in_allocator = 1;
        block = __libc_calloc(count, size);
        in_allocator = 0;
    }
    return track(block, count * size);
}

/* The blocks the current API call has freed (the first ones): freeing one again is that call's own bug; any
 * other pointer that is not live was freed (or corrupted) by an earlier call, or never came from malloc. */
static uintptr_t freed_this_call[64];
static unsigned n_freed_this_call;

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
    if (ptr == NULL || family_freed(ptr))
        return;
    struct live *entry = table_find((uintptr_t)ptr);
    if (entry == NULL && freed_in_this_call((uintptr_t)ptr))
        fatal("free(%p): a double free: this call already freed that block", ptr);
    const char *handed = entry == NULL ? family_memory((uintptr_t)ptr) : NULL;
    if (handed != NULL)
        fatal("free(%p): not a live heap block: %s, which malloc did not return", ptr, handed);
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
        if ((moved = fence_alloc(size, 0, 0)) == NULL)
            return NULL; /* failed: the old block stays */
        memcpy(moved, ptr, old_size < size ? old_size : size);
        fence_release(first, pages);
    } else { /* a block of the C library's (made before main, or under valgrind): natively it moves to the fence,
              * as every allocation is the fence's (the grader's ledger fails the k-th request, whatever the block) */
        moved = fenced() ? fence_alloc(size, 0, 0) : NULL;
        if (moved == NULL && fenced())
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
    if (fenced())
        block = fence_alloc(size, alignment < 16 ? 16 : alignment, 0);
    else {
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

/* ---- a call's accounting and its requests, for the family's serve loop ---- */

/* A request begins: the call's counts start from 0; `fail_at` >= 0 sets the failure countdown (-1: unchanged). */
static void call_starts(int32_t fail_at)
{
    if (fail_at >= 0)
        heap.fail_countdown = fail_at;
    heap.call_allocations = heap.call_frees = 0;
    n_freed_this_call = 0;
    fence.faulted = 0;
    heap.fault_fired = 0;
}

/* The process's own heap counts, as a result reply carries them after the call's return value. */
static void put_heap_counts(void)
{
    put_u32(heap.call_allocations);
    put_u32(heap.call_frees);
    put_u8(heap.fault_fired);
    put_u64(heap.allocations);
    put_u64(heap.live_blocks);
    put_u64(heap.live_bytes);
}

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
