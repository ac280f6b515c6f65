"""The kernel's access to the heap in a real driver (driver_main.c's filter, ledger.py kernel_access): an honest
system call on a live block behaves exactly as on an ordinary heap and counts nothing, a read past a block made by
the kernel is counted as a fault's would be, a string is judged to its NUL, and the calls whose buffers no register
names, or whose register in the heap the grader's table cannot judge, are refused."""

from pathlib import Path

import pytest

from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from tests.conftest import REFERENCE_C, seeded_build_cache

HEADERS = "#define _DEFAULT_SOURCE /* test: pipe, write, read, writev */\n#include <errno.h>\n#include <sched.h>\n" \
          "#include <stdlib.h>\n#include <string.h>\n#include <sys/prctl.h>\n#include <sys/uio.h>\n#include <unistd.h>\n"
# before llm_init returns: its engine (a live block) through a pipe and back, then `extra`; NULL when anything differs
ROUND_TRIP = """    int fds[2];
    LLMEngine copy;
    if (pipe(fds) != 0 || write(fds[1], engine, sizeof *engine) != (ssize_t)sizeof *engine
        || read(fds[0], &copy, sizeof copy) != (ssize_t)sizeof copy || memcmp(&copy, engine, sizeof copy) != 0)
        return NULL;
%s
    close(fds[0]);
    close(fds[1]);
    return engine;
}"""


def _adapter(tmp_path: Path, extra: str) -> CAdapter:
    text = REFERENCE_C.read_text()
    end = text.index("    return engine;\n}", text.index("LLMEngine *llm_init("))
    source = HEADERS + text[:end] + ROUND_TRIP % extra + text[end + len("    return engine;\n}"):]
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "llm_memory.c").write_text(source)
    result = build(folder / "llm_memory.c", seeded_build_cache(tmp_path / "build"))
    assert result.ok and result.driver is not None, result.message
    return CAdapter(result.driver)


def _listened(adapter: CAdapter) -> None:
    if adapter._listener is None:
        pytest.skip("no seccomp user notification here: no ledger judges the kernel's accesses")


def test_a_write_and_read_of_a_live_block_behave_as_on_any_heap_and_count_nothing(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path, "")
    try:
        engine = adapter.llm_init(4096)
        _listened(adapter)
        assert engine is not None  # the bytes went through the pipe and came back equal
        assert adapter.observe(None).heap.faulted == 0
    finally:
        adapter.close()


def test_a_write_from_past_a_block_is_counted_as_a_stray_and_the_call_goes_on(tmp_path: Path) -> None:
    # the kernel's copy of the engine's guard page (blocks at their last page's end): EFAULT, and one page counted
    adapter = _adapter(tmp_path, "    const char *volatile past = (const char *)(engine + 1) + 64; /* past gcc's eye */\n"
                                 "    if (write(fds[1], past, 4) != -1 || errno != EFAULT)\n        return NULL;")
    try:
        engine = adapter.llm_init(4096)
        _listened(adapter)
        assert engine is not None
        assert adapter.observe(None).heap.faulted == 1
    finally:
        adapter.close()


def test_writev_whose_buffers_no_register_names_is_refused(tmp_path: Path) -> None:
    adapter = _adapter(tmp_path, "    struct iovec v = {engine, 8};\n"
                                 "    if (writev(fds[1], &v, 1) != -1 || errno != EPERM)\n        return NULL;")
    try:
        engine = adapter.llm_init(4096)
        _listened(adapter)
        assert engine is not None  # writev answered EPERM
        assert adapter.observe(None).heap.faulted == 0
    finally:
        adapter.close()


def test_a_thread_named_from_a_heap_string_at_its_blocks_end_counts_nothing(tmp_path: Path) -> None:
    # review 16's thread_named_from_heap: "llm" in a 4-byte block (at its page's end), read by the kernel to its NUL
    adapter = _adapter(tmp_path, "    char *name = malloc(4);\n    if (name == NULL)\n        return NULL;\n"
                                 "    strcpy(name, \"llm\");\n"
                                 "    if (prctl(PR_SET_NAME, name, 0, 0, 0) != 0)\n        return NULL;\n    free(name);")
    try:
        engine = adapter.llm_init(4096)
        _listened(adapter)
        assert engine is not None  # prctl went on and succeeded
        assert adapter.observe(None).heap.faulted == 0
    finally:
        adapter.close()


def test_a_call_the_table_does_not_know_is_refused_and_its_address_past_a_block_counted(tmp_path: Path) -> None:
    # review 16's untabled_call_past: sched_setparam names a live block (refused, nothing counted), then the guard page
    adapter = _adapter(tmp_path, "    const char *volatile past = (const char *)(engine + 1) + 64; /* past gcc's eye */\n"
                                 "    if (sched_setparam(0, (const void *)engine) != -1 || errno != EPERM)\n"
                                 "        return NULL;\n"
                                 "    if (sched_setparam(0, (const void *)past) != -1 || errno != EPERM)\n"
                                 "        return NULL;")
    try:
        engine = adapter.llm_init(4096)
        _listened(adapter)
        assert engine is not None  # both answered EPERM
        assert adapter.observe(None).heap.faulted == 1
    finally:
        adapter.close()
