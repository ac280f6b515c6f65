"""CProbeAdapter: the probes' interface over a C submission's driver. The pool is read from the grader's own
memory file, not from the submission's process; and the observations only C has (guard zones, pool_base_ptr,
a NULL ref_count, a wild pointer in a block table) reach the probe's judgement in the grader."""

import os
from pathlib import Path

import pytest

from oracle.hw3.c.build import build
from oracle.hw3.c.probe_adapter import CProbeAdapter
from oracle.hw3.c.stray import Stray
from oracle.hw3.pool import GUARD
from oracle.hw3.probe_pool import PATTERN
from oracle.hw3.probes import ProbeResult, run_probes
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched, seeded_build_cache


def driver_of(tmp_path: Path, source: str) -> Path:
    (tmp_path / "llm_memory.c").write_text(source)
    driver = build(tmp_path, seeded_build_cache(tmp_path / "cache")).graded_driver
    assert driver is not None
    return driver


def variant(old: str, new: str) -> str:
    """The reference with one exact piece of its text replaced."""
    text = REFERENCE_C.read_text()
    assert text.count(old) == 1, old
    return text.replace(old, new)


def test_the_pool_is_read_from_the_graders_memory_file(tmp_path: Path) -> None:
    adapter = CProbeAdapter(driver_of(tmp_path, REFERENCE_C.read_text()), limit=10)
    try:
        engine = adapter.init_pool(640, PATTERN)
        view = adapter.pool()
        assert view.data == (PATTERN * 3)[:640] and (view.guard_before, view.guard_after) == (GUARD, GUARD)
        assert adapter.counts(engine).pool_base_ok is True and not view.freed
        adapter.call("create_sequence", engine, 1, 1)
        assert adapter.call("append_kv", engine, 1, 0x1234) == 0
        assert adapter.pool().data[4:8] == (0x1234).to_bytes(4, "little")  # record 1 of block 0, first fit
        assert adapter.pool_int(4) == 0x1234
        assert adapter.entered == "append_kv"
    finally:
        adapter.close()


def probe(tmp_path: Path, name: str, old: str, new: str) -> ProbeResult:
    (result,) = run_probes(driver_of(tmp_path, variant(old, new)), only=[name])
    return result


INIT = "    engine->pool_base_ptr = pool_addr;\n"


@pytest.mark.parametrize("new, detail", [
    (INIT + "    ((unsigned char *)pool_addr)[pool_size] = 0;\n",
     "llm_init(pool, 64) wrote into the guard zone after the pool (byte 0)"),
    (INIT + "    ((unsigned char *)pool_addr)[-2] = 0;\n",
     "llm_init(pool, 64) wrote into the guard zone before the pool (byte 62)"),
    ("    engine->pool_base_ptr = (char *)pool_addr + 64;\n",
     "llm_init(pool, 64): pool_base_ptr is not the pool it was given"),
])
def test_init_untouched_judges_what_only_c_shows(new: str, detail: str, tmp_path: Path) -> None:
    result = probe(tmp_path, "init_untouched", INIT, new)
    assert not result.passed and result.detail == detail and result.stopped_in is None  # judged, not stopped


def test_a_null_ref_count_is_an_unreadable_state_in_the_call_that_left_it(tmp_path: Path) -> None:
    result = probe(tmp_path, "init_untouched", "    list_init(&engine->active_seqs);\n",
                   "    list_init(&engine->active_seqs);\n"
                   "    if (pool_size == 6400) {\n        free(engine->ref_count);\n        engine->ref_count = NULL;\n    }\n")
    assert not result.passed and result.detail == "state unreadable: ref_count is NULL"
    assert result.stopped_in == "llm_init" and not result.elsewhere


def test_a_wild_l2_pointer_is_read_as_wild_and_named_the_call_that_left_it(tmp_path: Path) -> None:
    """create_sequence leaves a wild L2 pointer: the grader, reading the table from outside the process, finds
    no memory at that slot's address and sees the slot as wild (and reads the others). A probe sets the slot to NULL, as the create should have, and judges its rule past
    it, naming create_sequence's item (which must fail, create_free's own probe included)."""
    wild = ("    list_add_tail(&seq->node, &engine->active_seqs);\n    return seq;\n",
            "    list_add_tail(&seq->node, &engine->active_seqs);\n    seq->block_table[15] = (int *)16;\n    return seq;\n")
    (tmp_path / "gap").mkdir(), (tmp_path / "hole").mkdir()
    result = probe(tmp_path / "gap", "l1_gap_free", *wild)
    assert result.passed and result.checked and result.past and result.owner == "create_free"
    assert ("block_table[15] is a wild pointer after create_sequence(engine, 1, 528): reading its L2 table faulted; the "
            "probe set it to NULL, as the create should have (item create_free)") in result.detail, result.detail
    result = probe(tmp_path / "hole", "l2_hole_free", *wild)
    assert result.passed and result.checked and result.past and result.owner == "create_free"
    assert "block_table[15] is a wild pointer after create_sequence(engine, 1, 48)" in result.detail, result.detail


def test_a_write_into_a_pool_past_a_mib_shows_in_its_digest(tmp_path: Path) -> None:
    """A 64 MiB pool is compared by its digest, read from the memory file a MiB at a time."""
    result = probe(tmp_path, "init_untouched", INIT,
                   INIT + "    if (pool_size == (size_t)64 << 20)\n        ((unsigned char *)pool_addr)[pool_size - 1] = 0;\n")
    assert result.passed and result.detail == ("not checked: llm_init(pool, 67108864) wrote into the pool "
                                               "(item no_premature_writes) (another item's bug)")


def test_a_call_the_driver_cannot_go_on_after_fails_the_probe_with_its_words(tmp_path: Path) -> None:
    """A double free within llm_destroy: the driver reports it and exits; the probe fails in that call."""
    result = probe(tmp_path, "destroy_keeps_pool", "    free(engine->ref_count);\n    free(engine);",
                   "    free(engine->ref_count);\n    free(engine->ref_count);\n    free(engine);")
    assert not result.passed and result.stopped_in == "llm_destroy" and not result.elsewhere
    assert result.detail.startswith("free(0x") and "a double free: this call already freed that block" in result.detail


def test_a_stray_access_is_noted_for_memory_safety_and_a_rule_that_holds_past_it_holds(tmp_path: Path) -> None:
    """fork_sequence overflows the L2 copies it mallocs: the probe's driver serves blocks from the fence, as a graded
    run's, so the write past the block's end is a stray access the driver lets go on, onto a page of no other block
    (on glibc's heap, malloc aborted later, in whichever call). The grader counts it after the fork and notes it, in
    the probe's calls, for stray_charge to charge memory_safety with; many_forks' rule holds past it, with
    memory_safety's bug met on the way."""
    strays: list[Stray] = []
    driver = driver_of(tmp_path, variant("        int *to = new_l2_table();", "        int *to = malloc(L2_PT_SIZE);"))
    (result,) = run_probes(driver, only=["many_forks"], strays=strays)
    assert result.passed and result.checked and result.past and result.owner == "memory_safety", result
    assert result.detail == ("its rule holds; on the way, another item's bug: fork_sequence(engine, 0, 1): natively, a "
                             "read or write outside any live heap block, or a free of a pointer that is none (1 page(s) of "
                             "guard or freed memory touched: a heap overflow, a use after free or a double free) (item "
                             "memory_safety)"), result.detail
    (stray,) = strays
    assert (stray.program, stray.call, stray.pages) == ("white-box probe many_forks", "fork_sequence(engine, 0, 1)", 1)
    assert stray.calls[0].startswith("llm_init(pool, ") and stray.step == len(stray.calls)


# every llm_init reads the byte past the ref_count it callocs: a stray access in the probe's own llm_init operation
INIT_STRAY = ("    list_init(&engine->active_seqs);\n",
              "    list_init(&engine->active_seqs);\n    (void)((volatile unsigned char *)engine->ref_count)"
              "[engine->total_local_blocks * sizeof(int)];\n")
INIT_STRAY_WORDS = ("natively, a read or write outside any live heap block, or a free of a pointer that is none (1 "
                    "page(s) of guard or freed memory touched: a heap overflow, a use after free or a double free) "
                    "(item memory_safety)")


def test_a_stray_access_in_llm_init_is_counted_after_the_probes_own_operation(tmp_path: Path) -> None:
    strays: list[Stray] = []
    (result,) = run_probes(driver_of(tmp_path, variant(*INIT_STRAY)), only=["init_untouched"], strays=strays)
    assert result.passed and result.checked and result.past and result.owner == "memory_safety", result
    assert result.detail.startswith("its rule holds; on the way, another item's bug: llm_init(pool, ")
    assert result.detail.endswith(INIT_STRAY_WORDS), result.detail
    (stray,) = strays  # the reference refuses a NULL pool and one too small before it callocs: their steps go by
    assert stray.program == "white-box probe init_untouched" and stray.call.startswith("llm_init(pool, ")
    assert stray.step == len(stray.calls) > 1 and result.detail.startswith(f"its rule holds; on the way, another item's bug: {stray.call}: ")


def test_a_failure_after_a_stray_access_is_still_the_probes(tmp_path: Path) -> None:
    """l1_traversal's bug fails l1_gap_free; a stray access before it (a read, in llm_init) changes no state the
    probe reads, so the probe fails for the bug just as without it, in the same words (the stray is memory_safety's,
    noted in the submission's list for stray_charge), and not "left to memory_safety": each bug costs its own item
    (review 6's stray_in_probe made the stray in the probe's own state to get its item free)."""
    bug = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "l1_traversal.patch")
    (tmp_path / "bug").mkdir(), (tmp_path / "stray").mkdir()
    (alone,) = run_probes(driver_of(tmp_path / "bug", bug), only=["l1_gap_free"])
    assert not alone.passed and alone.checked, alone
    assert bug.count(INIT_STRAY[0]) == 1
    strays: list[Stray] = []
    (result,) = run_probes(driver_of(tmp_path / "stray", bug.replace(*INIT_STRAY)), only=["l1_gap_free"], strays=strays)
    assert not result.passed and result.checked and result.detail == alone.detail, result
    (stray,) = strays
    assert stray.program == "white-box probe l1_gap_free" and stray.call.startswith("llm_init(pool, ")


def test_a_free_of_a_block_an_earlier_call_freed_is_a_stray_and_the_probe_goes_on(tmp_path: Path) -> None:
    """free_sequence frees, one call later, the sequence it freed in the call before (a double free across calls).
    On the fence that pointer is no live block and can be no later one's (no page is mapped for a block twice), so
    the free changes no live block: the driver makes it a stray access the grader counts (it reads a page no block
    was given) and the call goes on. many_sequences' rule holds past it, with memory_safety's bug met on the way,
    noted for stray_charge in the call that made it (once a heap found corrupted left the probe unchecked: review
    6's double_free_in_probe made one in the probe's own state to get its item free)."""
    strays: list[Stray] = []
    driver = driver_of(tmp_path, variant("    destroy_sequence(engine, seq);\n    return 0;\n",
                                         "    destroy_sequence(engine, seq);\n    static Sequence *gone;\n"
                                         "    if (gone != NULL)\n        free(gone);\n    gone = seq;\n    return 0;\n"))
    (result,) = run_probes(driver, only=["many_sequences"], strays=strays)
    assert result.passed and result.checked and result.past and result.owner == "memory_safety", result
    assert result.detail.startswith("its rule holds; on the way, another item's bug: free_sequence(engine, ")
    assert result.detail.endswith(INIT_STRAY_WORDS), result.detail
    (stray,) = strays
    assert stray.program == "white-box probe many_sequences" and stray.call.startswith("free_sequence(engine, ")
    assert stray.pages == 1 and stray.step == len(stray.calls)


def test_a_runaway_write_past_64_pages_stops_no_probe(tmp_path: Path) -> None:
    """free_sequence writes a byte every 512 for 1 MiB past the sequence it frees (256 pages, live blocks' among
    them). Past 64 stray pages in one call each further one is the sink's, counted (driver.c, ledger.py's sunk):
    no memory error ends a call on the fence, so the probe goes on and judges what it reads, its rule found holding
    with memory_safety's bug met on the way, noted for stray_charge in the call that made it with every page past
    the 64 too. (Once the 65th page ended the run as a heap found corrupted, which left the probe to memory_safety
    unchecked: review 7's runaway_in_probe made one in the probe's own state to get its item free.)"""
    strays: list[Stray] = []
    driver = driver_of(tmp_path, variant(
        "    destroy_sequence(engine, seq);\n    return 0;\n",
        "    for (long i = 0; i < (1L << 20); i += 512)\n        ((char *)seq)[sizeof *seq + (unsigned long)i] = 1;\n"
        "    destroy_sequence(engine, seq);\n    return 0;\n"))
    (result,) = run_probes(driver, only=["many_sequences"], strays=strays)
    assert result.passed and result.checked and result.past and result.owner == "memory_safety", result
    assert result.detail.startswith("its rule holds; on the way, another item's bug: free_sequence(engine, ")
    first = strays[0]
    assert first.program == "white-box probe many_sequences" and first.call.startswith("free_sequence(engine, ")
    assert 64 < first.pages <= 256, first.pages


def test_whether_a_pool_can_be_mapped_is_the_graders_own_finding(tmp_path: Path) -> None:
    """A driver that says its pool is not mapped is checked by a process of the grader's, in the same sandbox
    under the same limits: "unavailable" when that one cannot map it either (past the 4 GiB address space),
    else the submission's failure (CProbeAdapter._init)."""
    adapter = CProbeAdapter(driver_of(tmp_path, REFERENCE_C.read_text()), limit=30)
    try:
        assert adapter.init_pool(640, PATTERN) is not None
        assert adapter._can_map(640 + 128) is True
        os.ftruncate(adapter._pools.fd, 5 << 30)  # sparse: no memory taken
        assert adapter._can_map(5 << 30) is False  # more than the probes' address space
    finally:
        adapter.close()


def test_a_stray_only_a_probe_meets_costs_memory_safety_and_not_the_probes_item(tmp_path: Path) -> None:
    """llm_init reads past its ref_count only for a pool of 6400 bytes, a size init_untouched gives and no graded
    program does: the probe's stray, noted in the submission's list, fails memory_safety (stray_charge.py) in the
    probe's words (the Excuse the probe's item leaves, or the stray's charge: one of them, once), and llm_init,
    whose rule holds, passes."""
    from oracle.hw3.grade import grade, load
    from tests.test_grade import small_rubric

    old, new = INIT_STRAY
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "llm_memory.c").write_text(variant(old, new.replace("    (void)", "    if (pool_size == 6400)\n"
                                                                                 "        (void)")))
    rubric = load(small_rubric(tmp_path / "rubric.toml", ["compiles", "llm_init", "memory_safety"]))
    report = grade(str(tmp_path / "sub"), rubric, tmp_path / "out", timeout=1.0)
    status = {item.id: (item.status, item.message) for item in report.items}
    assert status["llm_init"][0] == "passed" and status["compiles"][0] == "passed", status
    assert status["memory_safety"][0] == "failed", status
    assert "init_untouched" in status["memory_safety"][1], status
    assert "llm_init(pool, 6400): natively, a read or write outside any live heap block" in status["memory_safety"][1]
