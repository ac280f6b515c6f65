"""What a submission's compiled object may not do, read from the object itself (never from its source text):
refused at build, with a one-line reason each.

The driver counts every allocation the process makes through its malloc family (driver.c), and valgrind
judges memory from outside the program; both hold only if the submission's code cannot go around them. So an
object is refused when it:

- refers to an entry point that allocates or maps memory behind the malloc family, or finds the driver's own
  code and data to jump into or write (`nm -u`: mmap, brk, syscall, __libc_malloc, dlsym, dl_iterate_phdr, ...);
- holds a system-call instruction (`objdump -d`: syscall, sysenter, int $0x80), the raw way to the same;
- holds valgrind's client-request preamble (the four `rol` of %rdi valgrind.h emits, found as bytes anywhere
  in the object, whatever the disassembly shows), through which a program asks valgrind anything, or includes
  one of valgrind's headers (the preprocessor's own list of the headers it read);
- runs code outside the API calls: a constructor or destructor (.init_array, .fini_array, .ctors, ...), an
  ifunc resolver, or an at-exit handler, which could act before the driver starts or after the last check;
- installs a signal handler (`nm -u`: sigaction, signal, sigset, ...): natively a read or write past a heap
  block's end or into a freed block faults (driver.c's electric fence), and a handler of the submission's could
  swallow that fault, or run code between the calls, when the grader reads the heap from outside. This list is an
  early one-line reason only, not what a verdict rests on: a name is easy to avoid (glibc's alias __sigaction, a
  versioned sigaction@GLIBC_2.2.5: review 14's fault_caught_by_alias); natively the driver's seccomp filter refuses
  every new signal action and signal stack, however the call is reached (driver_main.c keep_own_handlers).
"""

import re
from pathlib import Path

from oracle.sandbox import Limits, Sandbox

TIMEOUT = 60.0
TOOL_LIMITS = Limits(cpu_seconds=60, memory_bytes=1 << 30, file_bytes=64 << 20, processes=8, tmp_bytes=64 << 20)

BEHIND_THE_ALLOCATOR = re.compile(
    r"^(__(?:real|wrap|libc)_\w+|mmap|mmap64|mremap|munmap|mprotect|pkey_mprotect|pkey_alloc|madvise|sbrk|brk|"
    r"syscall|shmat|shmget|memfd_create|process_vm_readv|process_vm_writev|ptrace|"
    r"dlopen|dlmopen|dlsym|dlvsym|dladdr|dladdr1|dlinfo|dl_iterate_phdr|_dl_\w+)$"
)
SIGNAL_HANDLERS = re.compile(r"^(sigaction|signal|sigset|sysv_signal|__sysv_signal|bsd_signal|ssignal|sigvec)$")
AT_EXIT = re.compile(r"^(atexit|at_quick_exit|on_exit|__cxa_atexit|__cxa_thread_atexit(?:_impl)?|pthread_atfork)$")
OUTSIDE_CALLS = re.compile(r"^\.(init_array|fini_array|preinit_array|ctors|dtors|init|fini)(\.|$)")
SYSTEM_CALL = re.compile(r"\t(syscall|sysenter|int\s+\$0x80)\b")
# amd64 valgrind.h: rolq $3, $13, $61, $51 of %rdi before every client request
PREAMBLE = bytes.fromhex("48c1c703" "48c1c70d" "48c1c73d" "48c1c733")


def refusal(box: Sandbox, obj: Path, source: bytes, header: Path, source_name: str) -> str | None:
    """Why the object compiled from `source` (against the official `header`) is refused (one line), or None.
    The tools run in the sandbox; the object's bytes are read here."""
    if PREAMBLE in obj.read_bytes():
        return f"{source_name} makes valgrind client requests (valgrind.h's instruction preamble is in its code): " \
               "a submission may not speak to valgrind"
    exposed = box.expose(obj)

    def tool(*argv: str | Path, readable: list[Path], cwd: Path | None = None) -> str:
        done = box.run(list(argv), timeout=TIMEOUT, readable=readable, limits=TOOL_LIMITS, output_limit=64 << 20,
                       **({"cwd": cwd} if cwd else {}))
        if done.status != 0:
            raise RuntimeError(f"{argv[0]} failed on the submission's object: {done.output[-300:]}")
        return done.output

    sources = box.area("refusal-in")
    (sources / "include").mkdir()
    (sources / "include" / header.name).write_bytes(header.read_bytes())
    (sources / source_name).write_bytes(source)
    headers = tool("gcc", "-M", "-I", "include", source_name, readable=[sources], cwd=sources)
    if re.search(r"(^|[\s/])valgrind/", headers):
        return f"{source_name} includes valgrind's headers: a submission may not speak to valgrind"
    symbols = tool("nm", "-P", exposed, readable=[exposed.parent])
    undefined, ifuncs = [], []
    for line in symbols.splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[1] in "Uw" and any(rule.match(fields[0]) for rule in (BEHIND_THE_ALLOCATOR, AT_EXIT, SIGNAL_HANDLERS)):
            undefined.append(fields[0])
        elif len(fields) >= 2 and fields[1] == "i":
            ifuncs.append(fields[0])
    behind = sorted({name for name in undefined if BEHIND_THE_ALLOCATOR.match(name)})
    if behind:
        return f"{source_name} refers to {', '.join(behind)}, which would allocate or map memory behind the grader's " \
               "accounting, or reach into the grader's driver: only the malloc family may allocate"
    handlers = sorted({name for name in undefined if SIGNAL_HANDLERS.match(name)})
    if handlers:
        return f"{source_name} installs signal handlers ({', '.join(handlers)}): a submission may not catch the faults " \
               "by which the grader sees a memory error"
    sections = tool("objdump", "-h", exposed, readable=[exposed.parent])
    outside = sorted({m.group(0) for line in sections.splitlines() if len(parts := line.split()) > 1
                      and (m := OUTSIDE_CALLS.match(parts[1]))})
    at_exit = sorted({name for name in undefined if AT_EXIT.match(name)})
    if outside or at_exit or ifuncs:
        what = ", ".join([*(f"a {s} section" for s in outside), *at_exit, *(f"the ifunc {f}" for f in ifuncs)])
        return f"{source_name} runs code outside the API calls ({what}): constructors, destructors, ifunc " \
               "resolvers and at-exit handlers are not allowed"
    code = tool("objdump", "-d", exposed, readable=[exposed.parent])
    if found := SYSTEM_CALL.search(code):
        return f"{source_name} makes system calls itself (a `{found.group(1)}` instruction), around the C library: " \
               "not allowed"
    return None
