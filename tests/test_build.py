"""oracle.hw3.c.build: which file is the submission (and what is refused before any build), the private
cache's refusals, and the one line a failed build is summed up in (on gcc's real output, and on plain logs
for the link failures no source of ours can provoke)."""

import os
from pathlib import Path

import pytest

from oracle.hw3.c.build import FACTS, OFFICIAL_FLAGS, build, submission_source
from oracle.native.build import BuildResult
from oracle.native.build_cache import private_cache
from oracle.native.upload import Refused
from tests.conftest import REFERENCE_C


def test_a_file_that_is_no_c_source_is_the_callers_mistake(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("int x;\n")
    with pytest.raises(ValueError, match="notes.txt is neither a .c file nor a directory"):
        submission_source(tmp_path / "notes.txt")


def test_an_llm_memory_c_that_is_a_link_or_no_file_is_refused(tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "llm_memory.c").symlink_to(REFERENCE_C)
    with pytest.raises(Refused, match=rf"llm_memory.c is a symbolic link \(to {REFERENCE_C}\): submit the file itself"):
        submission_source(linked)
    folder = tmp_path / "folder"
    (folder / "llm_memory.c").mkdir(parents=True)
    with pytest.raises(Refused, match="llm_memory.c is not a regular file"):
        submission_source(folder)


def test_an_upload_is_searched_no_further_than_its_first_ten_thousand_entries(tmp_path: Path) -> None:
    many = tmp_path / "a"
    many.mkdir()
    for n in range(10_001):
        (many / f"{n:05d}.txt").touch()
    (tmp_path / "z").mkdir()
    (tmp_path / "z" / "llm_memory.c").write_text(REFERENCE_C.read_text())
    with pytest.raises(Refused, match=r"no llm_memory.c was uploaded: .* a/00000.txt, .* and 9993 more$"):
        submission_source(tmp_path)


def test_a_build_cache_others_may_write_into_or_a_link_is_refused(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(RuntimeError, match="writable by other users: refusing to run programs from it"):
        private_cache(shared)
    (tmp_path / "link").symlink_to(tmp_path / "own", target_is_directory=True)
    (tmp_path / "own").mkdir(mode=0o700)
    with pytest.raises(RuntimeError, match="is not owned by this user: refusing to run programs from it"):
        private_cache(tmp_path / "link")
    assert private_cache(tmp_path / "own") == tmp_path / "own"


def test_a_function_the_driver_defines_fails_the_link_with_its_name(tmp_path: Path) -> None:
    """The driver defines the malloc family: a submission's own valloc is named, not the grader's files."""
    (tmp_path / "llm_memory.c").write_text(REFERENCE_C.read_text() + "\nvoid *valloc(size_t n)\n{\n    return malloc(n);\n}\n")
    result = build(tmp_path / "llm_memory.c", tmp_path / "cache")
    assert not result.ok and result.stage == "link" and result.defined_twice == ("valloc",)
    assert result.verdict == ("llm_memory.c defines valloc, which the grader's driver defines: remove it (the library "
                              "defines only the spec's calls and its own static helpers)")
    assert result.graded_driver is None and result.flags == FACTS.lenient_flags


def test_a_build_is_summed_up_in_one_line() -> None:
    built = BuildResult(True, Path("driver"), "done", "", facts=FACTS)
    assert (built.verdict, built.message, built.flags) == ("built", "built", OFFICIAL_FLAGS)
    link = BuildResult(False, None, "link", "ld: final link failed: No space left on device\ncollect2: error: ld returned 1\n",
                       facts=FACTS)
    assert link.verdict == "linking llm_memory.c with the grader failed: collect2: error: ld returned 1"
    assert link.message.startswith(link.verdict + "\nld: final link failed")
    quiet = BuildResult(False, None, "compile", "gcc was stopped after 60 s\n", facts=FACTS)
    assert quiet.verdict.endswith("-c llm_memory.c failed: gcc was stopped after 60 s")
    assert BuildResult(False, None, "compile", "", facts=FACTS).verdict.endswith("failed: no output")


REFUSED = {
    # valgrind's client requests, by its header or by its instruction preamble written out
    "valgrind_header": ("#include <valgrind/memcheck.h>  /* included, no request made (a request is the preamble) */\n",
                        "includes valgrind's headers: a submission may not speak to valgrind"),
    "valgrind_preamble": ("void pagedcheck_preamble(void) { __asm__ volatile(\".byte 0x48,0xc1,0xc7,0x03,0x48,0xc1,"
                          "0xc7,0x0d,0x48,0xc1,0xc7,0x3d,0x48,0xc1,0xc7,0x33\"); }\n",
                          "makes valgrind client requests (valgrind.h's instruction preamble is in its code)"),
    "mmap": ("#include <sys/mman.h>\nvoid *pagedcheck_map(void) { return mmap(0, 4096, 3, 0x22, -1, 0); }\n",
             "refers to mmap, which would allocate or map memory behind the grader's accounting"),
    "at_exit": ("#include <stdlib.h>\nstatic void pagedcheck_bye(void) {}\nint pagedcheck_later(void) { return atexit(pagedcheck_bye); }\n",
                "runs code outside the API calls (atexit)"),
    "syscall_instruction": ("long pagedcheck_raw(void) { long r; __asm__ volatile(\"syscall\" : \"=a\"(r) : \"a\"(39L) : \"rcx\", \"r11\", \"memory\"); return r; }\n",
                            "makes system calls itself (a `syscall` instruction), around the C library: not allowed"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_submission_that_goes_around_the_grader_is_refused_at_build_with_the_reason(name: str, tmp_path: Path) -> None:
    """oracle/native/refusal.py: each way around the grader's accounting and valgrind, said in one line."""
    if name == "syscall_instruction" and os.uname().machine != "x86_64":
        pytest.skip("an x86_64 instruction")
    code, words = REFUSED[name]
    (tmp_path / "llm_memory.c").write_text(REFERENCE_C.read_text() + "\n" + code)
    result = build(tmp_path / "llm_memory.c", tmp_path / "build")
    assert not result.ok and result.driver is None and words in result.message, result.message
