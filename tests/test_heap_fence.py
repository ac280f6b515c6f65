"""The C driver's heap natively (driver.c's electric fence, c/heap_maps.py): the live blocks the grader judges
are the heap region's mappings, read from outside the submission's process; a read or write past a block or
into a freed one faults there and then, with or without valgrind; a signal handler that could swallow that
fault is refused at build."""

import os
from pathlib import Path

import pytest

from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from oracle.native.heap_maps import REGION_BASE, MapsReader, heap_maps
from oracle.native.outside import driver_pid
from oracle.hw3.observation import ImplementationFailure
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched, seeded_build_cache

TAMPER2 = SUBMISSIONS / "hostile" / "tamper2"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fence")


def _driver(source: str, workdir: Path, name: str) -> Path:
    folder = workdir / name
    folder.mkdir(exist_ok=True)
    (folder / "llm_memory.c").write_text(source)
    result = build(folder / "llm_memory.c", seeded_build_cache(workdir / f"{name}-build"))
    assert result.ok and result.driver is not None, result.message
    return result.driver


def _on(base: str, attack: str | None = None) -> str:
    text = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / f"{base}.patch") if base else REFERENCE_C.read_text()
    return patched(text, TAMPER2 / f"{attack}.patch") if attack else text


def test_the_live_blocks_are_the_drivers_mappings_found_from_our_own_process_tree(workdir: Path) -> None:
    """For the reference the outside count follows every allocation and free: its engine and ref_count, then a
    Sequence, its L1 table and one L2 table, then none after llm_destroy. The pid is a descendant of the run we
    started (under bubblewrap the driver's own pid is another namespace's)."""
    adapter = CAdapter(_driver(_on(""), workdir, "reference"))
    try:
        engine = adapter.llm_init(4096)
        assert adapter.observe(None).heap.live_blocks == 2
        assert adapter.create_sequence(engine, 1, 1) is not None
        assert adapter.observe(None).heap.live_blocks == 5
        pid, refused = driver_pid(adapter._proc, adapter.box.expose(adapter.driver))
        assert pid is not None and pid != adapter.pid and not refused
        seen = heap_maps(pid)
        assert seen is not None and seen.blocks == 5 and seen.bytes >= 5 * 4096
        assert adapter.llm_destroy(engine) == 0
        assert adapter.observe(None).heap.live_blocks == 0
    finally:
        adapter.close()


def test_counters_zeroed_inside_the_process_hide_no_block(workdir: Path) -> None:
    """The hostile llm_destroy leaks its Sequence and zeroes the driver's live-block counters (it finds them in
    the program's data): the mappings still hold the Sequence's pages."""
    adapter = CAdapter(_driver(_on("llm_destroy", "hidden_leak_native"), workdir, "hidden_leak"))
    try:
        engine = adapter.llm_init(4096)
        adapter.create_sequence(engine, 1, 1)
        assert adapter.llm_destroy(engine) == 0
        heap = adapter.observe(None).heap
        assert heap.live_blocks == 1, heap
    finally:
        adapter.close()


def test_a_use_after_free_is_seen_natively_from_outside_and_the_call_goes_on(workdir: Path) -> None:
    """free_sequence unlinks its Sequence after freeing it: natively the freed pages are inaccessible, so the
    unlink faults; the driver maps that page again (shared, its bytes kept) and the call goes on as on an
    ordinary heap, returning 0; the grader counts the shared page from the mappings: one page touched."""
    adapter = CAdapter(_driver(_on("use_after_free"), workdir, "use_after_free"))
    try:
        engine = adapter.llm_init(4096)
        adapter.create_sequence(engine, 1, 1)
        assert adapter.observe(None).heap.faulted == 0
        assert adapter.free_sequence(engine, 1) == 0
        assert adapter.observe(None).heap.faulted == 1
        assert adapter.observe(engine).engine.sequences == ()  # the unlink worked, on the kept bytes
    finally:
        adapter.close()


def test_a_free_of_a_block_an_earlier_call_freed_is_a_stray_access_and_the_call_goes_on(workdir: Path) -> None:
    """free_sequence frees again, one call later, the Sequence the call before freed (a double free across calls).
    On the fence that pointer is no live block and can be no later block's, so the free changes no live block: the
    driver lets the call go on, returning 0, and the grader counts one stray page from outside (the driver read a
    page no block was given). The blocks the grader reads are those of a single free: none left once both
    sequences are gone; a later block is served as ever."""
    source = _on("").replace("    list_del(&seq->node);\n    destroy_sequence(engine, seq);\n",
                             "    static Sequence *gone;\n    Sequence *again = gone;\n    gone = seq;\n"
                             "    list_del(&seq->node);\n    destroy_sequence(engine, seq);\n"
                             "    if (again != NULL)\n        free(again);\n", 1)
    assert "Sequence *again = gone;" in source
    adapter = CAdapter(_driver(source, workdir, "double_free_later"))
    try:
        engine = adapter.llm_init(4096)
        adapter.create_sequence(engine, 1, 1)
        adapter.create_sequence(engine, 2, 1)
        assert adapter.free_sequence(engine, 1) == 0
        assert adapter.observe(None).heap.faulted == 0
        assert adapter.free_sequence(engine, 2) == 0  # frees sequence 1's Sequence again
        heap = adapter.observe(engine).heap
        assert heap.faulted == 1 and heap.live_blocks == 2, heap  # the engine and its ref_count
        assert adapter.create_sequence(engine, 3, 1) is not None
        assert adapter.observe(engine).heap.live_blocks == 5
    finally:
        adapter.close()


def test_a_realloc_or_usable_size_of_a_freed_block_is_a_stray_access_and_the_call_goes_on(workdir: Path) -> None:
    """create_sequence reallocs a block it freed (review 7's heap_error_hides), then asks malloc_usable_size of it: on
    the fence neither pointer is a live block nor can be a later one, so each is a stray access the grader counts
    (one page each, from outside), realloc answers NULL as a failed realloc and the usable size is 0, and the call
    goes on to its own answer: once the run ended there as a heap found corrupted. 70 such reallocs in one call pass
    the 64 stray pages kept a call and go on too (the sink's, counted)."""
    source = _on("").replace("Sequence *create_sequence(LLMEngine *engine, int seq_id, int initial_kv_len)\n{",
                             """Sequence *create_sequence(LLMEngine *engine, int seq_id, int initial_kv_len)
{
    for (int k = 0; k < (seq_id == 2 ? 70 : 1); k++) {
        void *volatile scratch = malloc(1); /* volatile: gcc would refuse the use after free */
        free(scratch);
        if (realloc(scratch, 2) != NULL || malloc_usable_size(scratch) != 0)
            return NULL;
    }""", 1).replace("#include <string.h>\n", "#include <string.h>\n#include <malloc.h>\n", 1)
    assert "realloc(scratch, 2)" in source and "<malloc.h>" in source
    adapter = CAdapter(_driver(source, workdir, "realloc_freed"))
    try:
        engine = adapter.llm_init(4096)
        assert adapter.create_sequence(engine, 1, 1) is not None
        heap = adapter.observe(engine).heap
        assert heap.faulted == 2 and heap.live_blocks == 5, heap  # the realloc's page, the usable size's
        assert adapter.create_sequence(engine, 2, 1) is not None  # 140 strays in one call
        heap = adapter.observe(engine).heap
        assert heap.faulted == 142 and heap.live_blocks == 8, heap
        assert adapter.llm_destroy(engine) == 0
    finally:
        adapter.close()


def test_a_heap_overflow_by_one_int_is_seen_natively_from_outside(workdir: Path) -> None:
    """fork_l2_malloc_bytes mallocs 16 bytes for 16 ints: the copy runs onto the guard page after them."""
    adapter = CAdapter(_driver(_on("fork_l2_malloc_bytes"), workdir, "overflow"))
    try:
        engine = adapter.llm_init(4096)
        adapter.create_sequence(engine, 1, 1)
        assert adapter.fork_sequence(engine, 1, 2) is not None
        assert adapter.observe(None).heap.faulted == 1
    finally:
        adapter.close()


def test_a_runaway_write_is_counted_past_64_pages_and_the_call_goes_on(workdir: Path) -> None:
    """A write 1 MiB past the engine, every 512 bytes, in llm_destroy: 256 pages, the ref_count block's among them
    (live: no fault), the rest guard or fresh pages. Past 64 stray pages in the call the driver maps each on the sink
    (at most four mapped at once, the oldest unmapped first): no memory error ends a call on the fence, so the call
    goes on and returns 0 (memory_safety's bug alone, not a crash of llm_destroy's), and the grader counted every
    page past the 64 too (ledger.py's sunk). The next call's strays are counted as ever."""
    source = _on("").replace("int llm_destroy(LLMEngine *engine)\n{", """int llm_destroy(LLMEngine *engine)
{
    if (engine != NULL) { /* BUG: writes 1 MiB past the engine */
        char *p = (char *)engine;
        for (long i = 0; i < (1L << 20); i += 512)
            p[sizeof *engine + (unsigned long)i] = 1;
    }""", 1)
    adapter = CAdapter(_driver(source, workdir, "runaway"))
    try:
        engine = adapter.llm_init(4096)
        assert adapter.observe(None).heap.faulted == 0
        assert adapter.llm_destroy(engine) == 0
        heap = adapter.observe(None).heap
        assert 200 < heap.faulted <= 256 and heap.live_blocks == 0, heap
        ledger = adapter._native.listener.ledger if adapter._native and adapter._native.listener else None
        if ledger is not None:  # with the listener: the count past the 64 is the sink's, at most four mapped
            assert len(ledger.faulted) == 64 and ledger.sunk == heap.faulted - 64 and len(ledger.sink) == 4, ledger.sink
        engine = adapter.llm_init(4096)  # a run that goes on: its next engine is built and destroyed
        assert adapter.llm_destroy(engine) == 0
        assert adapter.observe(None).heap.faulted > heap.faulted
    finally:
        adapter.close()


FORGED_HEAP_REPLY = """int llm_destroy(LLMEngine *engine)
{
    /* the driver's reply pipe: its one descriptor above 2 open for writing on a pipe (a run has no /proc to read
     * the driver's command line from) */
    for (int fd = 3; fd < 256; fd++) {
        struct stat st;
        if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || (fcntl(fd, F_GETFL) & O_ACCMODE) != O_WRONLY)
            continue;
        static const char text[] = "free(): double free detected in tcache 2";
        unsigned char msg[4 + 1 + 2 + sizeof text - 1];
        uint32_t len = sizeof msg; /* the whole reply's length, these 4 bytes too */
        uint16_t text_len = sizeof text - 1;
        memcpy(msg, &len, 4);
        msg[4] = 4; /* status 4: "a heap found corrupted" */
        memcpy(msg + 5, &text_len, 2);
        memcpy(msg + 7, text, sizeof text - 1);
        if (write(fd, msg, sizeof msg) == (ssize_t)sizeof msg)
            _exit(0);
    }"""


def test_a_reply_saying_the_heap_was_found_corrupted_is_a_crash_natively(workdir: Path) -> None:
    """Natively no memory error ends a call on the fence, so a reply of status 4 ("a heap found corrupted") is the
    process's word: here llm_destroy writes one on the driver's reply pipe and ends (review 7's forged_heap_reply,
    in a graded run). The grader takes it for a crash of the call, the call's item's, never for a memory error
    (which rules.py would charge to memory_safety, whatever the call, every item reading past it)."""
    source = _on("").replace("int llm_destroy(LLMEngine *engine)\n{", FORGED_HEAP_REPLY, 1)
    source = ("#define _POSIX_C_SOURCE 200809L\n#include <fcntl.h>\n#include <stdint.h>\n#include <sys/stat.h>\n"
              "#include <unistd.h>\n" + source)
    adapter = CAdapter(_driver(source, workdir, "forged_heap_reply"))
    try:
        engine = adapter.llm_init(4096)
        with pytest.raises(ImplementationFailure) as failure:
            adapter.llm_destroy(engine)
        assert "double free detected" in str(failure.value) and not failure.value.heap_corrupted, failure.value
    finally:
        adapter.close()


def test_the_region_is_where_the_grader_looks(workdir: Path) -> None:
    """The core driver's FENCE_BASE (oracle/native/driver_heap.c) and heap_maps.REGION_BASE are one address."""
    driver_c = (Path(__file__).resolve().parents[1] / "oracle" / "native" / "driver_heap.c").read_text()
    assert f"#define FENCE_BASE ((uintptr_t){REGION_BASE:#x}ull)" in driver_c


# under -std=c11 with _POSIX_C_SOURCE, glibc's header makes signal() its System V entry point
@pytest.mark.parametrize("call, symbol", [("sigaction(SIGSEGV, &sa, NULL)", "sigaction"),
                                          ("signal(SIGSEGV, on_fault)", "__sysv_signal")])
def test_a_signal_handler_is_refused_at_build(call: str, symbol: str, workdir: Path) -> None:
    """A handler of the submission's could swallow the fault by which a memory error shows natively, or run
    code between the calls."""
    source = REFERENCE_C.read_text().replace("#include", "#define _POSIX_C_SOURCE 200809L\n#include <signal.h>\n#include", 1)
    source += ("\nstatic void on_fault(int sig) { (void)sig; }\n"
               f"void swallow(void) {{ struct sigaction sa = {{0}}; sa.sa_handler = on_fault; (void)sa; {call}; }}\n")
    folder = workdir / f"handler-{call[:6]}"
    folder.mkdir()
    (folder / "llm_memory.c").write_text(source)
    result = build(folder / "llm_memory.c", seeded_build_cache(workdir / f"handler-{call[:6]}-build"))
    assert not result.ok
    assert f"installs signal handlers ({symbol}): a submission may not catch the faults" in result.message


def _driver_pid(adapter: CAdapter) -> int:
    pid, refused = driver_pid(adapter._proc, adapter.box.expose(adapter.driver))
    assert pid is not None and not refused
    return pid


def test_the_maps_text_and_the_kernels_answers_agree(workdir: Path) -> None:
    """The two readings of the region (the kernel asked mapping by mapping, PROCMAP_QUERY; the maps file's
    text, an older kernel's way) count the same live blocks, pages and faulted pages: after use_after_free's
    free_sequence, the engine and its ref_count live, and one freed page was touched."""
    adapter = CAdapter(_driver(_on("use_after_free"), workdir, "use_after_free"))
    try:
        engine = adapter.llm_init(4096)
        adapter.create_sequence(engine, 1, 1)
        assert adapter.free_sequence(engine, 1) == 0
        pid = _driver_pid(adapter)
        asked, text = MapsReader(pid), MapsReader(pid)
        text.query = False  # what the reader does once the kernel has refused PROCMAP_QUERY
        try:
            seen = asked.heap()
            assert seen is not None and (seen.blocks, seen.faulted) == (2, 1) and seen.bytes >= 2 * 4096
            assert text.heap() == heap_maps(pid) == seen
        finally:
            asked.close()
            text.close()
    finally:
        adapter.close()


def test_a_descriptor_without_procmap_query_falls_back_to_the_maps_text(workdir: Path, tmp_path: Path) -> None:
    """A kernel before 6.11 answers PROCMAP_QUERY with ENOTTY, as it does on any file that has no such request
    (here an ordinary file in place of the maps descriptor): the reader reads the maps text from then on."""
    adapter = CAdapter(_driver(_on(""), workdir, "reference"))
    try:
        engine = adapter.llm_init(4096)
        adapter.create_sequence(engine, 1, 1)
        pid = _driver_pid(adapter)
        reader = MapsReader(pid)
        os.close(reader.fd)
        reader.fd = os.open(tmp_path / "not-maps", os.O_RDWR | os.O_CREAT)
        try:
            seen = reader.heap()
            assert not reader.query
            assert seen is not None and seen.blocks == 5 and seen == heap_maps(pid)
        finally:
            reader.close()
    finally:
        adapter.close()


def test_the_mappings_of_a_driver_that_ended_are_none(workdir: Path) -> None:
    """Once the driver has ended there is no reading: None from the kept descriptor and from the text, and a
    new reader cannot open its maps (the adapter takes that as the driver's end, not as an empty heap)."""
    adapter = CAdapter(_driver(_on(""), workdir, "reference"))
    adapter.llm_init(4096)
    pid = _driver_pid(adapter)
    reader = MapsReader(pid)
    adapter.close()
    try:
        assert reader.heap() is None
        assert heap_maps(pid) is None
        with pytest.raises(OSError):
            MapsReader(pid)
    finally:
        reader.close()


def test_without_a_listener_the_heap_facts_are_the_drivers_mappings_and_its_word_only_adds(workdir: Path) -> None:
    """NativeHeap's fallback where the driver could hand over no listener (a kernel without seccomp user
    notification): the live blocks and bytes are read from the driver's mappings after each call; what the
    driver says only adds (a count written down cannot hide a block the grader sees)."""
    from oracle.native.native_heap import HeapFacts, NativeHeap

    adapter = CAdapter(_driver(_on(""), workdir, "reference"))
    heap = None
    try:
        engine = adapter.llm_init(4096)
        assert adapter.create_sequence(engine, 1, 1) is not None
        heap = NativeHeap(adapter._proc, adapter.box.expose(adapter.driver), None)
        said_nothing = heap.judged(HeapFacts(0, 0, False, 0, 0), live_before=2)
        assert said_nothing is not None
        assert (said_nothing.allocations, said_nothing.live_blocks, said_nothing.injected) == (3, 5, False)
        assert said_nothing.live_bytes >= 5 * 4096
        said_more = heap.judged(HeapFacts(7, 1, True, 9, 1 << 30), live_before=2)
        assert said_more == HeapFacts(7, 1, True, 9, 1 << 30, said_nothing.faulted)
        assert heap.faulted() == said_nothing.faulted  # a probe operation's count: the mappings' alone
    finally:
        if heap is not None:
            heap.close()
        adapter.close()


def test_a_kernel_without_procmap_query_reads_the_same_answers_from_the_maps_text() -> None:
    """heap_maps._unreadable_in_text, what `unreadable` falls back to on a kernel before 6.11, answers as
    PROCMAP_QUERY does on this process's own mappings: readable memory, a page it may not read, no mapping."""
    import ctypes
    import mmap

    from oracle.native.heap_maps import NOT_MAPPED, NOT_READABLE, _unreadable_in_text, unreadable

    page = mmap.PAGESIZE
    region = mmap.mmap(-1, 3 * page)
    base = ctypes.addressof(ctypes.c_char.from_buffer(region))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    assert libc.mprotect(base + page, page, 0) == 0  # the middle page: no access
    maps = os.open("/proc/self/maps", os.O_RDONLY)
    try:
        cases = [(base, 16, None), (base + page, 8, NOT_READABLE), (base + page - 4, 8, NOT_READABLE),
                 (base + 2 * page, page, None), (16, 8, NOT_MAPPED)]
        for address, length, expected in cases:
            assert _unreadable_in_text(maps, address, address + length) == expected, hex(address)
            assert unreadable(maps, address, length) == expected, hex(address)
    finally:
        os.close(maps)
        libc.mprotect(base + page, page, 3)
