/* pagedcheck's C driver machinery, the end of the translation unit: faults, the process's sandbox (limits, the
 * seccomp filter that forbids processes, the handover of every mapping call to the grader's ledger) and main.
 * Included last by a family's driver.c (driver_heap.c first; the family's serve loop between).
 *
 * Usage: driver CMD_FD REPLY_FD CPU_SECONDS OUTPUT_LIMIT MEMORY_LIMIT SANDBOX [CLOSE_FD [LEDGER_FD [LAYOUT
 * [MAX_MAP_COUNT [WRITES]]]]]
 * (oracle/native/driver_process.py). CLOSE_FD (under valgrind; -1: none): the descriptor valgrind was given for its
 * log, closed before any of the submission's calls (valgrind keeps its own copy, out of the program's reach).
 * WRITES (under valgrind; "-": none): the grader's answers to a run that may write nowhere (oracle/seccomp.py
 * writes_program("nowhere")), a BPF program in hexadecimal, installed once valgrind has made its start files.
 * LEDGER_FD (natively; -1: none): a socket to the grader, which receives the seccomp listener of every
 * memory-mapping call (ledger.py). LAYOUT: 0 blocks at their last page's end, 1 at their first page's start.
 * MAX_MAP_COUNT: vm.max_map_count as the grader read it (the run has no procfs; absent: read here, else the default).
 * Requests arrive on CMD_FD and replies leave on REPLY_FD, so the submission may print anything on
 * stdout/stderr. */

/* ---- faults: a memory error in the heap, or the submission crashing ---- */

static int handlers_kept; /* keep_own_handlers' filter is installed: no action may change */

/* Dies of `sig` from a handler, as if there were no handler. Without keep_own_handlers' filter (under valgrind, which
 * does not apply a blocked fault's default action) by resetting the action; with it, without changing any action: a
 * fault the kernel raised (si_code > 0) is returned to with `sig` blocked, so the same instruction faults again and
 * the kernel, finding the signal blocked, ends the process by its default action; a signal a process sent (raise) is
 * followed by a read of address 0 with SIGSEGV blocked. */
static void die_of(int sig, const siginfo_t *info, void *context)
{
    if (!handlers_kept) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    if (info->si_code > 0) {
        sigaddset(&((ucontext_t *)context)->uc_sigmask, sig); /* the mask the return restores */
        return;
    }
    sigset_t segv;
    sigemptyset(&segv);
    sigaddset(&segv, SIGSEGV);
    sigprocmask(SIG_BLOCK, &segv, NULL);
    (void)*(volatile const char *)(uintptr_t)0;
}

/* A fault in the fence's region is a memory error (memory_safety's); anywhere else it is the submission
 * crashing, and the process dies of the signal as if there were no handler. */
static void on_fault(int sig, siginfo_t *info, void *context)
{
    if (in_fence((uintptr_t)info->si_addr) && fence_fault((uintptr_t)info->si_addr))
        return; /* the access goes on, on a page the grader counts from outside as a memory error */
    if (in_fence((uintptr_t)info->si_addr)) /* the page refused (the driver's records rewritten): a crash, its item's */
        fatal("SIG%s: an invalid read or write at %p, in the heap but in no live block (past a block's end, before "
              "its start, or in a freed block), on a page that could not be mapped", sigabbrev_np(sig), info->si_addr);
    die_of(sig, info, context);
}

/* ---- sandbox ---- */

static void limit(int resource, rlim_t value)
{
    struct rlimit rl = {value, value};
    setrlimit(resource, &rl);
}

/* Every filter's first instructions: a call of any other ABI than x86-64's kills the process. */
#define X86_64_ONLY                                                                                          \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),                                \
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)

/* Kills the process (SIGSYS) on any attempt to start a process, run a program or signal another
 * process. RLIMIT_NPROC cannot do this for root, whose process count is never limited. */
static void forbid_processes(void)
{
#if defined(__x86_64__)
#define KILL_ON(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
    struct sock_filter filter[] = {
        X86_64_ONLY,
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
 * lets it run or fails it. The listener's descriptor goes to the grader over `sock` (SCM_RIGHTS) with "y" and the
 * places of the driver's own memory (`regions`: start:u64 length:u64 each, mapped before, reserve_own_memory),
 * or "n" when this kernel cannot; this process keeps no copy of either. brk too: the C library's heap may not grow.
 * And every other call with an argument in the fence's span (a pointer to the heap, or any value there): the kernel
 * reads and writes the caller's memory without a fault the driver sees, so the grader's ledger judges the range the
 * call names (ledger.py kernel_access). The driver's own calls name none: its buffers, stack and tables lie outside
 * the span, its only calls on the span's pages are mapping calls. */
static void hand_mappings_to_grader(int sock, uint64_t regions[][2], size_t n_regions)
{
    int listener = -1;
#if defined(__x86_64__)
#define NOTIFY_ON(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, 0x7fc00000U)
    /* any other call one of whose arguments lies in the fence's span: its upper 32 bits are FENCE_BASE's to the
     * span's last page's (0x2000 to 0x20FF). The grader's ledger counts a range that touches a page of no live block
     * as a stray, as a fault's (the kernel's copy of a guard page raises no signal), and lets the call go on. */
#define NOTIFY_IF_IN_SPAN(arg)                                                                                     \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[arg]) + 4),                           \
    BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, (uint32_t)(FENCE_BASE >> 32), 0, 2),                                     \
    BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, (uint32_t)((FENCE_BASE + FENCE_SPAN - 1) >> 32), 1, 0),                  \
    BPF_STMT(BPF_RET | BPF_K, 0x7fc00000U)
    struct sock_filter filter[] = {
        X86_64_ONLY,
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
        NOTIFY_IF_IN_SPAN(0),
        NOTIFY_IF_IN_SPAN(1),
        NOTIFY_IF_IN_SPAN(2),
        NOTIFY_IF_IN_SPAN(3),
        NOTIFY_IF_IN_SPAN(4),
        NOTIFY_IF_IN_SPAN(5),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
#undef NOTIFY_ON
#undef NOTIFY_IF_IN_SPAN
    struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    const unsigned long new_listener = 1UL << 3, wait_killable = 1UL << 5;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) {
        listener = (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, new_listener | wait_killable, &prog);
        if (listener < 0 && errno == EINVAL) /* before Linux 5.19: a signal may interrupt a call while it waits */
            listener = (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, new_listener, &prog);
    }
#endif
    unsigned char said[1 + 2 * 2 * sizeof(uint64_t)] = {listener >= 0 ? 'y' : 'n'};
    size_t said_len = 1;
    if (listener >= 0 && n_regions <= 2) {
        memcpy(said + 1, regions, n_regions * sizeof regions[0]);
        said_len += n_regions * sizeof regions[0];
    }
    union {
        char bytes[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = {said, said_len};
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
    if (sendmsg(sock, &msg, 0) != (ssize_t)said_len)
        die("pagedcheck driver: cannot reach the grader\n");
    if (listener >= 0)
        close(listener);
    close(sock);
    fence.ledgered = listener >= 0;
    own_sealed = fence.ledgered; /* from here on the driver's own memory stays as mapped */
}

/* Natively, with the ledger, after the handover (its sendmsg) and before any submission code: the calls whose buffers
 * the kernel finds through pointers in memory (an iovec array, a msghdr), not in the registers the filter above
 * sees, fail with EPERM: the grader could not tell which pages they read or write. No driver nor honest engine
 * needs them (write and read take the buffer in a register). process_vm_readv and _writev: oracle/seccomp.py. */
static void refuse_indirect_io(void)
{
#if defined(__x86_64__)
#define REFUSE(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
    struct sock_filter filter[] = {
        X86_64_ONLY,
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        REFUSE(__NR_readv),
        REFUSE(__NR_writev),
        REFUSE(__NR_preadv),
        REFUSE(__NR_pwritev),
        REFUSE(327), /* preadv2 */
        REFUSE(328), /* pwritev2 */
        REFUSE(__NR_sendmsg),
        REFUSE(__NR_recvmsg),
        REFUSE(307), /* sendmmsg */
        REFUSE(299), /* recvmmsg */
        REFUSE(__NR_vmsplice),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
#undef REFUSE
    struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        die("pagedcheck driver: cannot install the seccomp filter\n");
#endif
}

/* Natively (strict), once the driver's own handlers and signal stack are in place and before any submission code:
 * no signal action may change from here on and no other signal stack be set; either call fails with EPERM when it
 * would (rt_sigaction with a new action, args[1] != 0, either 32-bit half; sigaltstack with a new stack, args[0] !=
 * 0), and asking for the current ones still works. By the kernel, whatever symbol reached the call (an alias such as
 * __sigaction, a versioned name, syscall, bytes of the submission's own): a fault always reaches on_fault. */
static void keep_own_handlers(void)
{
#if defined(__x86_64__)
#define REFUSE_IF_ARG_SET(nr, arg)                                                                                 \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 5),                                                             \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[arg])),                               \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 2),                                                                \
    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[arg]) + 4),                           \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),                                                                \
    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
    struct sock_filter filter[] = {
        X86_64_ONLY,
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        REFUSE_IF_ARG_SET(__NR_rt_sigaction, 1),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        REFUSE_IF_ARG_SET(__NR_sigaltstack, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
#undef REFUSE_IF_ARG_SET
    struct sock_fprog prog = {(unsigned short)(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        die("pagedcheck driver: cannot install the seccomp filter\n");
    handlers_kept = 1;
#endif
}

/* Under valgrind, after its start (its client's files made and removed in the start folder) and before any submission
 * code: the grader's answers to a run that may write nowhere (`hex`: oracle/seccomp.py writes_program("nowhere"), the
 * program a native run's filter holds), so a memcheck run is told what a native one is in both isolations: EROFS to
 * a call that makes or removes a name, ENOSYS to statfs (oracle/SANDBOX.md "What a run may write"). Valgrind makes
 * the client's calls on the client's thread, so the filter binds them, and its own after. */
static void told_writes_nowhere(const char *hex)
{
    static struct sock_filter filter[512];
    size_t len = strlen(hex), n = len / 2 / sizeof filter[0];
    if (len % (2 * sizeof filter[0]) != 0 || n == 0 || n > sizeof filter / sizeof filter[0])
        die("pagedcheck driver: a malformed filter\n");
    static const char digits[] = "0123456789abcdef";
    unsigned char *bytes = (unsigned char *)filter;
    for (size_t i = 0; i < len; i++) {
        const char *digit = strchr(digits, hex[i]);
        if (digit == NULL || *digit == '\0')
            die("pagedcheck driver: a malformed filter\n");
        bytes[i / 2] = (unsigned char)(bytes[i / 2] << 4 | (digit - digits));
    }
    struct sock_fprog prog = {(unsigned short)n, filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
        die("pagedcheck driver: cannot install the seccomp filter\n");
}

/* Natively, before the handover: the free room the C library's heap already has (its top chunk, its bins) is
 * taken now, and its top may grow by no more than a request needs, so from the handover on a block of the C
 * library's (its own malloc reached by address: the driver serves none natively) needs the heap to grow, a brk the
 * ledger refuses or an mmap it counts as the submission's. */
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

/* Natively, before the handover: the driver's own memory at its bounded size, so that it maps nothing of its own
 * outside the heap's span afterwards but a pool's window (ledger.py tells that one by what it maps). The heap's
 * table holds every block the fence can hold live (the ledger fails one past them) beside those made before;
 * the reply buffer holds the longest reply. Their places, for the grader: `regions` (start, length). */
static size_t reserve_own_memory(uint64_t regions[][2])
{
    size_t blocks = fence.on ? fence.max_blocks : DEFAULT_MAP_COUNT, cap = heap.slots ? heap.mask + 1 : 1024;
    while (cap < 2 * (heap.used + blocks + 1))
        cap *= 2;
    if (heap.slots == NULL || cap > heap.mask + 1)
        table_resize(cap);
    if (out.data == NULL || out.cap < DRIVER_REPLY_BOUND) {
        if ((out.data = own_realloc(out.data, DRIVER_REPLY_BOUND)) == NULL)
            die("pagedcheck driver: out of memory\n");
        out.cap = DRIVER_REPLY_BOUND;
    }
    void *own[] = {heap.slots, out.data};
    for (size_t i = 0; i < 2; i++) {
        size_t *header = (size_t *)own[i] - 2;
        regions[i][0] = (uint64_t)(uintptr_t)header;
        regions[i][1] = (uint64_t)(header[0] + 2 * sizeof(size_t));
    }
    return 2;
}

static void sandbox(rlim_t cpu_seconds, rlim_t output_limit, rlim_t memory_limit, int strict)
{
    limit(RLIMIT_CORE, 0);
    limit(RLIMIT_CPU, cpu_seconds);
    limit(RLIMIT_FSIZE, output_limit);
    limit(RLIMIT_NPROC, 0); /* no fork at all for an ordinary user */
    if (memory_limit > 0)
        limit(RLIMIT_AS, memory_limit);
    if (strict) {
        forbid_processes();
        keep_own_handlers();
    }
}

int main(int argc, char **argv)
{
    if (argc < 7 || argc > 12)
        die("usage: driver CMD_FD REPLY_FD CPU_SECONDS OUTPUT_LIMIT MEMORY_LIMIT SANDBOX [CLOSE_FD [LEDGER_FD [LAYOUT "
            "[MAX_MAP_COUNT [WRITES]]]]]\n");
    /* vm.max_map_count as the grader read it: a driver's run has no procfs (oracle/run_view.py PROCFS) */
    fence_reserve(strtoul(argv[5], NULL, 10), argc > 9 && atoi(argv[9]) == 1,
                  argc > 10 ? strtoul(argv[10], NULL, 10) : 0);
    heap.counting = 1;
    int cmd_fd = atoi(argv[1]);
    reply_fd = atoi(argv[2]);
    if (argc > 7 && atoi(argv[7]) >= 0) { /* under valgrind, which has written its start folder's files by now */
        close(atoi(argv[7]));
        if (argc > 11 && strcmp(argv[11], "-") != 0) /* valgrind's start files are made: no other file from here on */
            told_writes_nowhere(argv[11]);
        /* one byte before any code of the submission's: the grader then seals that folder (oracle/sandbox.py seal) */
        if (write(reply_fd, "S", 1) != 1)
            die("pagedcheck driver: cannot write to the grader\n");
    }
    setvbuf(stdout, NULL, _IONBF, 0); /* a crash must not lose what the submission printed */

    static char alt_stack[1 << 16]; /* so a stack overflow still reaches on_fault */
    stack_t ss = {.ss_sp = alt_stack, .ss_size = sizeof alt_stack};
    sigaltstack(&ss, NULL);
    struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK};
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    prepare_heap_abort_reply();
    /* reset on delivery: every SIGABRT ends the process (on_abort), so no later sigaction is needed for that */
    struct sigaction on_abort_sa = {.sa_handler = on_abort, .sa_flags = SA_NODEFER | SA_ONSTACK | SA_RESETHAND};
    sigaction(SIGABRT, &on_abort_sa, NULL);

    if (argc > 8 && atoi(argv[8]) >= 0) { /* natively: from here on the grader answers every mapping call */
        if (fence.on)
            spend_libc_room();
        uint64_t regions[2][2];
        size_t n_regions = reserve_own_memory(regions);
        hand_mappings_to_grader(atoi(argv[8]), regions, n_regions);
        if (fence.ledgered)
            refuse_indirect_io();
    }
    /* with the ledger, processes are forbidden whatever SANDBOX says: one thread, whose descriptors nothing else can
     * change while it waits in a mapping call the grader answers (the pool's window is told by the file its
     * descriptor names then: ledger.py) */
    sandbox(strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10), strtoul(argv[5], NULL, 10),
            atoi(argv[6]) || fence.ledgered);
    serve(cmd_fd);

    /* Clean exit: drop the driver's own references, so a block the submission never freed is "definitely
     * lost" under valgrind rather than reachable through the accounting table (with the ledger: kept, own_free). */
    own_free(heap.slots);
    own_free(out.data);
    return 0;
}
