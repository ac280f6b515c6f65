"""alloc_failure (oracle/hw3/alloc_failure.py): which allocations of a call it fails (allocations_to_fail, on plain
counts), and, on real C submissions built by gcc, that a call of thousands of allocations is tried in bounded
work and a leak on its last allocation's failure is still caught."""

from pathlib import Path

from oracle.hw3.alloc_failure import EDGE, FAILED_PER_CALL, allocations_to_fail
from oracle.hw3.grade import grade, load
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched
from tests.test_grade import small_rubric

SPARE_RECORDS = SUBMISSIONS / "correct_review2" / "spare_records.patch"  # llm_init: 2 + 8000 allocations


def test_every_allocation_of_a_short_call_fails() -> None:
    assert allocations_to_fail(0) == ()
    assert allocations_to_fail(1) == (1,)
    assert allocations_to_fail(4) == (1, 2, 3, 4)
    assert allocations_to_fail(FAILED_PER_CALL) == tuple(range(1, FAILED_PER_CALL + 1))


def test_a_long_call_fails_its_first_and_last_allocations_and_an_even_spread_between() -> None:
    assert allocations_to_fail(100) == (1, 2, 3, 4, 5, 6, 7, 8, 11, 16, 22, 27, 32, 37, 43, 48, 53, 58, 64, 69,
                                        74, 79, 85, 90, 93, 94, 95, 96, 97, 98, 99, 100)
    for count in (FAILED_PER_CALL + 1, FAILED_PER_CALL + 2, 40, 100, 8002, 10**9):
        chosen = allocations_to_fail(count)
        assert len(chosen) == FAILED_PER_CALL and len(set(chosen)) == FAILED_PER_CALL, count
        assert list(chosen) == sorted(chosen) and chosen[0] == 1 and chosen[-1] == count, count
        assert chosen[:EDGE] == tuple(range(1, EDGE + 1)), count
        assert chosen[-EDGE:] == tuple(range(count - EDGE + 1, count + 1)), count
        between = chosen[EDGE:-EDGE]
        assert all(EDGE < k <= count - EDGE for k in between), count
        gaps = [b - a for a, b in zip(between, between[1:])]
        assert max(gaps) - min(gaps) <= 1, (count, gaps)  # evenly spread, to the nearest allocation


def test_the_choice_depends_on_the_count_alone() -> None:
    assert allocations_to_fail(8002) == allocations_to_fail(8002)
    assert allocations_to_fail(8002) != allocations_to_fail(8003)



def test_a_long_call_fails_every_block_it_kept_whatever_surrounds_them() -> None:
    """padded_allocations (tests/submissions/hostile/review3b): its kept blocks sit among 100 blocks allocated and
    freed before them and 100 after, where the count-only choice never lands."""
    kept = (101, 102, 103)
    assert not set(kept) & set(allocations_to_fail(203))
    chosen = allocations_to_fail(203, kept)
    assert set(kept) <= set(chosen) and len(chosen) == FAILED_PER_CALL == len(set(chosen))
    assert list(chosen) == sorted(chosen) and all(1 <= k <= 203 for k in chosen)
    others = [k for k in chosen if k not in kept]  # the rest of the budget, 29 tries: a quarter at each edge
    edge = (FAILED_PER_CALL - len(kept)) // 4
    assert others[:edge] == list(range(1, edge + 1)) and others[-edge:] == list(range(204 - edge, 204))
    huge = allocations_to_fail(10**9, (5, 10**8))  # a count the submission claimed: the work is the tries'
    assert {1, 5, 10**8, 10**9} <= set(huge) and len(set(huge)) == FAILED_PER_CALL


def test_a_call_that_kept_many_blocks_fails_a_sample_of_them_and_still_some_of_the_others() -> None:
    kept = tuple(range(2, 2001, 2))  # 1000 kept, 1000 freed between them
    chosen = allocations_to_fail(2000, kept)
    assert len(chosen) == FAILED_PER_CALL == len(set(chosen))
    ours = [k for k in chosen if k in kept]
    assert len(ours) == FAILED_PER_CALL - EDGE  # EDGE tries left to the others
    assert ours[0] == 2 and ours[-1] == 2000
    assert allocations_to_fail(8002, tuple(range(1, 8003))) == allocations_to_fail(8002)  # all kept: as by count


def test_the_kept_blocks_holding_the_engines_objects_come_first_however_many_others_it_kept() -> None:
    """padded_kept_allocations (tests/submissions/hostile/review3b): 100 one-byte blocks kept before a create's own
    three (a Sequence, its L1 and L2 tables) and 100 after, and 100 allocated and freed after them."""
    kept, objects = tuple(range(1, 204)), (101, 102, 103)
    assert not set(objects) & set(allocations_to_fail(303, kept))  # the kept ones alone: a sample misses them
    chosen = allocations_to_fail(303, kept, objects)
    assert set(objects) <= set(chosen) and len(chosen) == FAILED_PER_CALL == len(set(chosen))
    assert len([k for k in chosen if k > 203]) == EDGE  # EDGE tries left to the blocks it did not keep
    assert allocations_to_fail(303, kept, (0, 250, 400)) == allocations_to_fail(303, kept)  # only kept ones count

def test_a_kept_number_beyond_the_count_is_not_tried() -> None:
    assert allocations_to_fail(40, (0, 41, 10**9)) == allocations_to_fail(40, ())

def _alloc_failure(tmp_path: Path, source: str) -> tuple[str, str]:
    directory = tmp_path / "submission"
    directory.mkdir()
    (directory / "llm_memory.c").write_text(source)
    out = tmp_path / "out"
    out.mkdir()
    report = grade(str(directory), load(small_rubric(tmp_path / "rubric.toml", ["alloc_failure"])), out)
    item = next(item for item in report.items if item.id == "alloc_failure")
    return item.status, item.message


def test_a_correct_call_of_thousands_of_allocations_passes_on_a_bounded_set(tmp_path: Path) -> None:
    status, message = _alloc_failure(tmp_path, patched(REFERENCE_C.read_text(), SPARE_RECORDS))
    assert status == "passed", message
    # llm_init's 32 of 8002, and every one of the other calls' 14 (the reference's counts)
    assert message.startswith(f"{FAILED_PER_CALL + 14} of the {8002 + 14} allocations failed one at a time"), message


def test_a_leak_when_the_last_of_thousands_of_allocations_fails_is_caught(tmp_path: Path) -> None:
    correct = patched(REFERENCE_C.read_text(), SPARE_RECORDS)
    undo = "        if (record == NULL) {\n            drop_spares();"
    assert undo in correct
    leaky = correct.replace(undo, "        if (record == NULL) {\n            if (i < 7999)\n                drop_spares();")
    status, message = _alloc_failure(tmp_path, leaky)
    assert status == "failed"
    assert "allocation 8002 of step 1 failing" in message, message
    assert "heap: expected every allocation freed, got 7999 block(s)" in message, message


def test_a_call_that_crashes_when_its_malloc_fails_is_caught_at_that_allocation(tmp_path: Path) -> None:
    """new_sequence writes through the NULL its first malloc returned."""
    checked = "    Sequence *seq = malloc(sizeof *seq);\n    if (seq == NULL)\n        return NULL;\n"
    reference = REFERENCE_C.read_text()
    assert checked in reference
    status, message = _alloc_failure(tmp_path, reference.replace(checked, "    Sequence *seq = malloc(sizeof *seq);\n"))
    assert status == "failed"
    assert message.startswith("allocation_failure (allocation 1 of step 2 failing): step 2 create_sequence(engine, 1, 20)"), message
    assert "SIGSEGV" in message, message


def test_a_call_that_succeeds_in_spite_of_a_failed_malloc_must_still_leave_nothing_after_llm_destroy(tmp_path: Path) -> None:
    """new_sequence tries its L1 table's malloc again, and sets aside a block nothing ever frees."""
    undo = "    if (seq->block_table == NULL) {\n        free(seq);\n        return NULL;\n    }\n"
    retry = ("    if (seq->block_table == NULL) {\n        lost_block = malloc(1);\n"
             "        seq->block_table = malloc(L1_PT_SIZE * sizeof *seq->block_table);\n    }\n"
             "    if (seq->block_table == NULL) {\n        free(seq);\n        return NULL;\n    }\n")
    reference = REFERENCE_C.read_text()
    assert undo in reference
    leaky = reference.replace(undo, retry).replace("static Sequence *new_sequence(", "void *lost_block; /* global: kept, never freed */\nstatic Sequence *new_sequence(")
    status, message = _alloc_failure(tmp_path, leaky)
    assert status == "failed"
    assert message.startswith("allocation_failure (allocation 2 of step 2 failing)"), message
    assert "llm_destroy afterwards: its status and the heap blocks left: expected 0 and 0, got 0 and 1" in message, message


def test_a_leak_among_blocks_allocated_and_freed_around_a_calls_own_work_is_caught(tmp_path: Path) -> None:
    """alloc_failure's bug (a failed L2 table leaks the half-built Sequence), each call padded with 100 blocks
    allocated and freed before its own work and 100 after (tests/submissions/hostile/review3b)."""
    broken = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "alloc_failure.patch")
    padded = patched(broken, SUBMISSIONS / "hostile" / "review3b" / "padded_allocations.patch")
    status, message = _alloc_failure(tmp_path, padded)
    assert status == "failed", message
    assert message.startswith("allocation_failure (allocation 103 of step 2 failing): step 2 create_sequence"), message


# Reads the driver's request for the call (op, fail_at, target, a, b, packed: driver_reply.py) off the stack above
# its own frame, and when told the k-th allocation fails, makes that one a decoy it does not need.
DECOY = r"""
#include <stdint.h>
static int scheduled, made;
static int told_fail_at(char op, const void *target, int a, int b)
{
    const unsigned char *frame = __builtin_frame_address(0);
    for (int i = 0; i < 4096; i++) {
        const unsigned char *q = frame + i;
        uint64_t at;
        int32_t fail_at, x, y;
        memcpy(&fail_at, q + 1, 4), memcpy(&at, q + 5, 8), memcpy(&x, q + 13, 4), memcpy(&y, q + 17, 4);
        if (q[0] == (unsigned char)op && at == (uint64_t)(uintptr_t)target && x == a && y == b)
            return fail_at;
    }
    return -1;
}
static void *decoyed(size_t size)
{
    if (scheduled > 0 && made + 1 == scheduled) {
        void *volatile decoy = malloc(1); /* the allocation the grader fails (volatile: gcc drops a malloc freed at once) */
        free(decoy), made++;
    }
    made++;
    return malloc(size);
}
#define malloc(size) decoyed(size)
"""


def test_a_submission_that_reads_its_request_cannot_tell_which_allocation_fails(tmp_path: Path) -> None:
    """alloc_failure's bug, with the request the driver read found on the stack: were the k-th allocation to fail
    written there, the submission would make it a decoy, and its real allocations would never fail."""
    source = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "alloc_failure.patch")
    head = "Sequence *create_sequence(LLMEngine *engine, int seq_id, int initial_kv_len)\n{\n"
    assert source.count(head) == 1 and source.count("#include <string.h>\n") == 1
    source = source.replace("#include <string.h>\n", "#include <string.h>\n" + DECOY).replace(
        head, head + "    scheduled = told_fail_at('C', engine, seq_id, initial_kv_len), made = 0;\n")
    status, message = _alloc_failure(tmp_path, source)
    assert status == "failed", message
    assert "step 2 create_sequence" in message, message



def test_a_leak_among_blocks_kept_around_a_calls_own_work_is_caught(tmp_path: Path) -> None:
    """As above, with the padding kept until llm_destroy (a failing call frees its own)."""
    broken = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "alloc_failure.patch")
    padded = patched(broken, SUBMISSIONS / "hostile" / "review3b" / "padded_kept_allocations.patch")
    status, message = _alloc_failure(tmp_path, padded)
    assert status == "failed", message
    assert message.startswith("allocation_failure (allocation 103 of step 2 failing): step 2 create_sequence"), message
