"""The white-box probes on C submissions, each in its own driver process and judged in the grader: the
reference passes all of them, each broken submission fails the probe aimed at it (and only that one), and a
probe that crashes or hangs fails alone, with the signal or time named."""

from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.hw3.c.build import build
from oracle.hw3.probes import PROBES, ProbeResult
from oracle.hw3.probes import run_probes as run_on_driver
from tests.conftest import seeded_build_cache

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "engine" / "c"


def run_probes(submission: Path, cache: Path, timeout: float = 10) -> list[ProbeResult]:
    """Every probe on a C submission, built into its driver in `cache` (seeded with our driver's object)."""
    driver = build(submission, seeded_build_cache(cache)).graded_driver
    assert driver is not None
    return run_on_driver(driver, timeout)


def test_reference_passes_every_probe(tmp_path: Path) -> None:
    results = run_probes(REFERENCE, tmp_path)
    assert [r.name for r in results] == list(PROBES)
    assert all(r.passed for r in results), [(r.name, r.detail) for r in results]


@pytest.mark.parametrize(
    "name, probe, detail",
    [
        ("break_at_null_l1", "l1_gap_free",
         "after freeing a sequence whose L1 slots 0, 3 and 15 are in use (1, 2 and 4 to 14 NULL), the blocks past the gap "
         "still have ref_count 1, expected 0 (the loop must not stop at a NULL slot)"),
        ("cmut_fork_break_at_null_l1", "l1_gap_fork",
         "fork_sequence(engine, 1, 2) of a parent whose L1 slots 0, 3 and 15 are in use (1, 2 and 4 to 14 NULL): "
         "the child's block_table[3] is NULL"),
        ("free_walks_kv_count", "l1_gap_free", "after freeing a sequence whose L1 slots 0, 3 and 15 are in use (1, 2 and "
         "4 to 14 NULL), the blocks past the gap still have ref_count 1, expected 0"),
        ("cmut_init_refuses_32mib", "init_untouched", "llm_init(pool, 67108864) returned NULL"),
        ("destroy_frees_pool", "destroy_keeps_pool", "llm_destroy freed pool_base_ptr, which the caller owns"),
        ("l2_hole_free", "l2_hole_free", "after freeing a sequence whose block_table[0] maps entries 0, 2 and 5"),
        ("l2_hole_fork", "l2_hole_fork", "fork_sequence(engine, 1, 2) of a parent whose block_table[0] maps entries "
         "0, 2 and 5 (entry 1 is -1): the child's block_table[0][2] is -1, expected the parent's 2"),
        ("many_sequences", "many_sequences", "create_sequence(engine, "),
        ("two_engines", "two_engines", "free_sequence(a, 2) succeeded, expected NULL / -1: sequence 2 lives in engine b"),
        ("int_block_offset", "big_pool", "crashed: SIGSEGV"),
    ],
)
def test_a_broken_submission_fails_the_probe_aimed_at_it(
    name: str, probe: str, detail: str, tmp_path: Path, submission: Callable[..., Path]
) -> None:
    results = {r.name: r for r in run_probes(submission("broken", name), tmp_path)}
    assert not results[probe].passed and results[probe].detail.startswith(detail), results[probe].detail
    assert results[probe].rule == PROBES[probe]
    assert all(r.passed for other, r in results.items() if other != probe), results


@pytest.mark.parametrize(
    "name, probe, owner, detail",
    [
        ("init_writes_pool", "init_untouched", "no_premature_writes",
         "not checked: llm_init(pool, 64) wrote into the pool (byte 0) (item no_premature_writes)"),
        # a fork that copies blocks instead of sharing them: what comes before the gap is the fork item's
        ("fork_deep_copy", "l1_gap_fork", "fork",
         "not checked: after fork_sequence(engine, 1, 2), the child's block_table[0][0] is 33 and ref_count[0] is 1, "
         "expected the parent's block 0 with ref_count 2, before any gap (item fork)"),
    ],
)
def test_a_probe_passes_another_items_bug_as_not_checked(
    name: str, probe: str, owner: str, detail: str, tmp_path: Path, submission: Callable[..., Path]
) -> None:
    result = run_probe(submission("broken", name), tmp_path, probe)
    assert result.passed and not result.checked and result.detail.startswith(detail), result.detail
    assert result.owner == owner


PAST = "its rule holds; on the way, another item's bug: "


@pytest.mark.parametrize(
    "name, probe, owner, detail",
    [
        ("fork", "big_pool", "fork", "the copy-on-write was not checked: fork_sequence(engine, 1, 2) gave the child kv_count 0 "
         "and ref_count[33554432] 2, expected 2 and 2 (item fork)"),
        ("fork", "l1_gap_fork", "fork", "fork_sequence(engine, 1, 2): the child's kv_count is 0, expected the parent's 528 (item fork)"),
        ("free_count", "many_forks", "free_count", "free_local_blocks is 304 after freeing a sequence and its 300 forks, "
         "expected 4 (item free_count)"),
        # free's return value, and the list after it, are create_free's: the L1 walk is still judged by the blocks
        ("free_returns_one", "l1_gap_free", "create_free", "free_sequence(engine, 1) returned 1, expected 0 (item create_free)"),
        ("free_returns_one", "many_forks", "create_free",
         "free_sequence(engine, 0) returned 1 with 301 sequences sharing a block, expected 0 (item create_free)"),
        ("free_unlink_half", "l1_gap_free", "create_free",
         "the active list is not empty after free_sequence(engine, 1) freed its only sequence (item create_free)"),
        # a free count off from the implementation's own ref_count is free_count's
        ("fork_counts_shared_blocks", "l1_gap_fork", "free_count", "free_local_blocks is 66 after fork_sequence(engine, 1, 2), "
         "expected 99: a fork takes no block, and ref_count shows none taken (item free_count)"),
        # big_pool judges where a record lands by the implementation's own kv_count and table
        ("create_kv_count_rounded", "big_pool", "create_free",
         "create_sequence(engine, 1, 1) left kv_count 16, expected 1 (item create_free)"),
        ("append_byte_offset", "big_pool", "append_cow", "append_kv(engine, 1, 0x5EED) wrote 0x5eed at byte 1 of block "
         "33554432, expected byte 4 (record 1): the block's address is right, the offset within it is wrong (item append_cow)"),
        # create leaves the L1 slots it does not use wild: the probe sets them NULL, as create should have, and
        # judges the walk past the gap
        ("l1_not_nulled", "l1_gap_free", "create_free", "block_table[3] is a wild pointer after create_sequence(engine, 1, "
         "528): reading its L2 table faulted; the probe set it to NULL, as the create should have (item create_free)"),
        # the same on the fork's probe: what its set-up's create got wrong is noted past the fork it judged
        ("l1_not_nulled", "l1_gap_fork", "create_free", "block_table[3] is a wild pointer after create_sequence(engine, 1, "
         "528): reading its L2 table faulted; the probe set it to NULL, as the create should have (item create_free)"),
        # a search bounded by free_local_blocks cannot reach block 2^25 with 3 free: the probe maps it itself
        ("first_fit_bound_free_count", "big_pool", "first_fit", "create_sequence(engine, 1, 1) with only blocks 2^25 to "
         "2^25 + 2 free mapped no block (item first_fit); the probe mapped block 2^25 itself"),
    ],
)
def test_a_probe_that_judged_its_rule_names_another_items_bug_it_met(
    name: str, probe: str, owner: str, detail: str, tmp_path: Path, submission: Callable[..., Path]
) -> None:
    result = run_probe(submission("broken", name), tmp_path, probe)
    assert result.passed and result.checked and result.past and result.detail == PAST + detail, result.detail
    assert result.owner == owner


def run_probe(submission: Path, cache: Path, probe: str) -> ProbeResult:
    """One probe on a C submission, built into its driver in `cache` (seeded with our driver's object)."""
    driver = build(submission, seeded_build_cache(cache)).graded_driver
    assert driver is not None
    (result,) = run_on_driver(driver, 10, only=[probe])
    return result


def test_a_crashing_or_hanging_probe_fails_alone(tmp_path: Path, submission: Callable[..., Path]) -> None:
    crashed = {r.name: r for r in run_probes(submission("broken", "deref_null_l1"), tmp_path / "crash")}
    assert not crashed["l1_gap_free"].passed and crashed["l1_gap_free"].detail.startswith("crashed: SIGSEGV")
    # located in the call it happened in: free_sequence is what l1_gap_free is about, not what many_forks is about
    assert crashed["l1_gap_free"].stopped_in == "free_sequence" and not crashed["l1_gap_free"].elsewhere
    assert crashed["many_forks"].stopped_in == "free_sequence" and crashed["many_forks"].elsewhere
    hung = {r.name: r for r in run_probes(submission("broken", "hang_in_free"), tmp_path / "hang", timeout=1)}
    assert hung["l1_gap_free"].detail == "timed out after 1 s" and hung["l1_gap_free"].stopped_in == "free_sequence"
    assert hung["init_untouched"].passed  # it calls no free_sequence


# big_pool's calls, each broken in the reference: the probe steps around the call's own bug (not checked
# before its rule was judged, or judged and the bug named on the way), never failing big_pool for it
BIG_POOL_STEPS = [
    ("required > MAX_LOGICAL_BLOCKS || required > engine->free_local_blocks",
     "required > MAX_LOGICAL_BLOCKS || required + 3 > engine->free_local_blocks", False,
     "not checked: create_sequence(engine, 1, 1) returned NULL with blocks 2^25 to 2^25 + 2 free"),
    ("    seq->kv_count++;\n    return 0;", "    seq->kv_count++;\n    return 1;", False,
     "not checked: append_kv(engine, 1, 0x5EED) returned 1, expected 0, with free blocks left (item append_cow)"),
    ("    seq->kv_count++;\n    return 0;", "    return 0;", True,
     PAST + "append_kv(engine, 1, 0x5EED) left kv_count 1, expected 2 (item append_cow)"),
    ("    if (old == -1) {\n", "    if (old != -1 && needs_block)\n        return -1;\n    if (old == -1) {\n", True,
     PAST + "append_kv(engine, 2, 0xC0DE) after the fork returned -1, expected 0, with a free block left (item append_cow)"),
]


@pytest.mark.parametrize("old, new, checked, detail", BIG_POOL_STEPS,
                         ids=["create_wants_4_free", "append_returns_1", "append_keeps_kv_count", "cow_refused"])
def test_big_pool_leaves_the_bugs_of_the_calls_it_makes_to_their_items(
    old: str, new: str, checked: bool, detail: str, tmp_path: Path
) -> None:
    reference = (REFERENCE / "llm_memory.c").read_text()
    assert reference.count(old) == 1
    (tmp_path / "llm_memory.c").write_text(reference.replace(old, new))
    result = run_probe(tmp_path / "llm_memory.c", tmp_path / "cache", "big_pool")
    assert result.passed and result.checked == checked and result.detail.startswith(detail), result.detail


def test_a_fork_is_judged_against_its_parent_as_read_before_it(tmp_path: Path) -> None:
    """Review 16's fork_forgets_parent_past_gap (on cmut_fork_break_at_null_l1: the fork stops copying at the first
    NULL L1 slot, and also clears the parent's slots past it, so that parent and child agree when read after the
    fork): the child is judged against the parent as read before the fork, so the walk's bug fails l1_gap_fork, and
    the parent's change is the fork item's bug, met as well (owner fork, `met`: that item must fail for it too)."""
    from tests.conftest import SUBMISSIONS, patched

    source = (REFERENCE / "llm_memory.c").read_text()
    for patch in (SUBMISSIONS / "broken" / "cmut_fork_break_at_null_l1.patch",
                  SUBMISSIONS / "hostile" / "review16" / "fork_forgets_parent_past_gap.patch"):
        (tmp_path / "patch").write_text(patch.read_text())
        source = patched(source, tmp_path / "patch")
    (tmp_path / "llm_memory.c").write_text(source)
    result = run_probe(tmp_path / "llm_memory.c", tmp_path / "cache", "l1_gap_fork")
    assert not result.passed and result.detail.startswith(
        "fork_sequence(engine, 1, 2) of a parent whose L1 slots 0, 3 and 15 are in use (1, 2 and 4 to 14 NULL): "
        "the child's block_table[3] is NULL, expected a copy of the parent's (the loop must not stop at a NULL slot)"), \
        result.detail
    assert result.owner == "fork" and result.met == (
        "fork_sequence(engine, 1, 2) changed its parent: the parent's block_table[3] is NULL after it, expected an L2 "
        "table, as before it (item fork)"), result.met


def test_a_parent_left_as_it_was_is_no_bug_of_the_forks(tmp_path: Path, submission: Callable[..., Path]) -> None:
    """The known bug alone (cmut_fork_break_at_null_l1) leaves its parent as it was: the probe fails, and names no
    other item's bug."""
    result = run_probe(submission("broken", "cmut_fork_break_at_null_l1"), tmp_path, "l1_gap_fork")
    assert not result.passed and result.owner is None and result.met == ""
