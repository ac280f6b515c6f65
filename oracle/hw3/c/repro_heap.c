/* ---- the heap, counted as the grader counts it ----
 *
 * llm_memory.c is included below with malloc, calloc, realloc and free turned into the four functions here,
 * which keep every live block with the file and line that allocated it and the step that was running. After
 * llm_destroy (no engine) every block must be freed; a call that must fail must allocate nothing. */

struct heap_block {
    void *addr;
    size_t size;
    const char *file; /* where llm_memory.c allocated it */
    int line;
    int step; /* the step that allocated it */
};

static struct heap_block *heap_blocks; /* the live blocks, in the order they were allocated */
static size_t heap_live, heap_room;
static unsigned long heap_allocations; /* blocks allocated so far, successful calls only */
static int heap_step;                  /* the step being run */

static inline void heap_stop(const char *what, void *ptr, const char *file, int line)
{
    printf("step %d: %s(%p) at %s:%d: not a live heap block (freed already, or not from malloc)\n", heap_step, what,
           ptr, file, line);
    exit(1);
}

static inline size_t heap_find(void *ptr)
{
    for (size_t i = 0; i < heap_live; i++)
        if (heap_blocks[i].addr == ptr)
            return i;
    return heap_live;
}

static inline void *heap_track(void *ptr, size_t size, const char *file, int line)
{
    if (ptr == NULL)
        return NULL;
    if (heap_live == heap_room) {
        heap_room = heap_room ? 2 * heap_room : 64;
        heap_blocks = realloc(heap_blocks, heap_room * sizeof *heap_blocks);
        if (heap_blocks == NULL) {
            puts("repro: out of memory");
            exit(2);
        }
    }
    heap_blocks[heap_live++] = (struct heap_block){ptr, size, file, line, heap_step};
    heap_allocations++;
    return ptr;
}

static inline void heap_untrack(size_t i)
{
    memmove(heap_blocks + i, heap_blocks + i + 1, (heap_live - i - 1) * sizeof *heap_blocks);
    heap_live--;
}

static inline void *heap_malloc(size_t size, const char *file, int line)
{
    void *ptr = malloc(size);
    if (ptr != NULL)
        memset(ptr, 0xA5, size); /* as the grader's malloc: memory never set reads 0xA5 */
    return heap_track(ptr, size, file, line);
}

static inline void *heap_calloc(size_t count, size_t size, const char *file, int line)
{
    return heap_track(calloc(count, size), count * size, file, line);
}

static inline void heap_free(void *ptr, const char *file, int line)
{
    if (ptr == NULL)
        return;
    size_t i = heap_find(ptr);
    if (i == heap_live)
        heap_stop("free", ptr, file, line);
    heap_untrack(i);
    free(ptr);
}

static inline void *heap_realloc(void *ptr, size_t size, const char *file, int line)
{
    if (ptr == NULL)
        return heap_malloc(size, file, line);
    size_t i = heap_find(ptr);
    if (i == heap_live)
        heap_stop("realloc", ptr, file, line);
    void *moved = realloc(ptr, size);
    if (moved == NULL)
        return NULL; /* the old block stays live */
    heap_untrack(i);
    return heap_track(moved, size, file, line);
}

/* A call that must fail allocated nothing since `before` (heap_allocations then). */
static inline void heap_check_no_allocation(int step, const char *call, unsigned long before)
{
    if (heap_allocations != before) {
        printf("step %d: %s: heap: a failing call must allocate nothing, it allocated %lu time(s)\n", step, call,
               heap_allocations - before);
        exit(1);
    }
}

/* With no engine (after llm_destroy, or before any llm_init), every block llm_memory.c allocated is freed. */
static inline void heap_check_leaks(int step, int live)
{
    if (live || heap_live == 0)
        return;
    size_t bytes = 0;
    for (size_t i = 0; i < heap_live; i++)
        bytes += heap_blocks[i].size;
    printf("after step %d: heap: expected every allocation freed, got %zu block(s) (%zu bytes) still live:\n", step,
           heap_live, bytes);
    for (size_t i = 0; i < heap_live && i < 20; i++)
        printf("    %zu bytes allocated at %s:%d (step %d)\n", heap_blocks[i].size, heap_blocks[i].file,
               heap_blocks[i].line, heap_blocks[i].step);
    if (heap_live > 20)
        printf("    ... and %zu more\n", heap_live - 20);
    exit(1);
}
