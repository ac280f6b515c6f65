"""oracle/native as a second C family would use it: a toy API (one call, `toy_keep`) whose family writes only its
header, its driver.c (its request, its serve loop, the two hooks, between the core's driver_heap.c and
driver_main.c), its BuildFacts and a DriverProcess subclass; built and run for real (gcc, the sandbox, the
grader's ledger), nothing of hw3 imported."""

import struct
from pathlib import Path

import pytest

from oracle.native.build import BuildFacts, build
from oracle.native.driver_process import DriverFailure, DriverProcess
from oracle.native.native_heap import HeapFacts

HEADER = "long toy_keep(int n);\n"
DRIVER = r"""#define _GNU_SOURCE
#include "toy.h"

#include "driver_heap.c"

struct request {
    uint8_t op;
    int32_t fail_at;
    int32_t n;
} __attribute__((packed));

static void serve(int cmd_fd)
{
    struct request req;
    while (read_full(cmd_fd, &req, sizeof req)) {
        call_starts(req.fail_at);
        int64_t ret = toy_keep(req.n);
        begin_reply(REPLY_OK);
        put_i64(ret);
        put_heap_counts();
        send_reply();
    }
}

static int family_freed(void *ptr) { (void)ptr; return 0; }

static const char *family_memory(uintptr_t addr) { (void)addr; return NULL; }

#include "driver_main.c"
"""
SUBMISSION = r"""#include <stdlib.h>
#include "toy.h"

char *kept[64]; /* global, so that the compiler keeps every malloc (the build makes it local) */
int n_kept;

long toy_keep(int n)
{
    char *block = malloc((size_t)n);
    block[0] = 1; /* n < 0: malloc says NULL, and this write crashes */
    kept[n_kept++ % 64] = block;
    return n;
}
"""
_RESULT = struct.Struct("<qIIBQQQ")


class ToyAdapter(DriverProcess):
    """The toy family's adapter: its request's layout and its reply's, nothing else."""

    reply_bound = 5 + _RESULT.size

    def __init__(self, driver: Path):
        super().__init__(driver, timeout=10.0, output_limit=1 << 16, cpu_seconds=30, memory_limit=1 << 30, wrapper=(),
                         seccomp=True, close_timeout=1.0, sandbox=None, pass_fds=(), handed=(), log_channel=None,
                         program=None)

    def keep(self, n: int) -> tuple[int, HeapFacts]:
        if self._proc is None:
            self._start()
        if self._native is not None:
            self._native.call_started(-1)
        self._write_all(struct.pack("<Bii", ord("K"), -1, n))
        data = self._reply_bytes()
        if data[4] != 0:
            raise self._fail(f"status {data[4]}")
        ret, allocations, frees, fired, _total, live_blocks, live_bytes = _RESULT.unpack_from(data, 5)
        said = HeapFacts(allocations, frees, bool(fired), live_blocks, live_bytes)
        seen = self._native.judged(said, 0) if self._native is not None else said
        assert seen is not None
        return ret, seen


@pytest.fixture(scope="module")
def toy(tmp_path_factory: pytest.TempPathFactory) -> tuple[BuildFacts, Path]:
    folder = tmp_path_factory.mktemp("toy")
    (folder / "family").mkdir()
    (folder / "family" / "toy.h").write_text(HEADER)
    (folder / "family" / "driver.c").write_text(DRIVER)
    (folder / "toy.c").write_text(SUBMISSION)
    facts = BuildFacts(source_name="toy.c", header=folder / "family" / "toy.h",
                       official_flags=("-std=c11", "-Wall", "-Wextra", "-Werror", "-O2"), api=("toy_keep",),
                       driver=folder / "family" / "driver.c", driver_parts=(folder / "family" / "driver.c",),
                       driver_flags=("-std=gnu11", "-Wall", "-Wextra", "-Wpedantic", "-Werror", "-O2"))
    return facts, folder


def test_a_second_family_builds_with_its_driver_and_facts_alone(toy: tuple[BuildFacts, Path]) -> None:
    facts, folder = toy
    result = build(facts, folder / "toy.c", folder / "cache")
    assert result.ok, result.message
    assert result.flags == facts.official_flags


def test_its_calls_are_counted_by_the_grader_and_its_crash_is_the_core_failure(toy: tuple[BuildFacts, Path]) -> None:
    """Natively every block is the fence's, granted by the grader's ledger: a call that mallocs once shows one
    allocation and one more live block; a crash is a DriverFailure (the default failure_type) named by its
    signal."""
    facts, folder = toy
    driver = build(facts, folder / "toy.c", folder / "cache").driver
    assert driver is not None
    adapter = ToyAdapter(driver)
    try:
        ret, first = adapter.keep(100)
        assert (ret, first.allocations, first.live_blocks) == (100, 1, 1)
        ret, second = adapter.keep(5000)
        assert (ret, second.allocations, second.live_blocks) == (5000, 1, 2)
        with pytest.raises(DriverFailure, match="SIGSEGV"):
            adapter.keep(-1)
    finally:
        adapter.close()


def test_a_submission_of_the_second_family_is_refused_by_the_same_rules(toy: tuple[BuildFacts, Path]) -> None:
    facts, folder = toy
    (folder / "mapper").mkdir(exist_ok=True)
    (folder / "mapper" / "toy.c").write_text(SUBMISSION.replace("#include <stdlib.h>", "#define _DEFAULT_SOURCE\n"
                                                                 "#include <stdlib.h>\n#include <sys/mman.h>").replace(
        "malloc((size_t)n)", "mmap(0, (size_t)n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)"))
    result = build(facts, folder / "mapper", folder / "cache")
    assert not result.ok and "toy.c refers to mmap" in result.verdict
