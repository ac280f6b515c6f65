"""alloc_failure (oracle/hw3/alloc_failure.py), on real C submissions built by gcc: every allocation of every call
is failed in turn, wherever a bug hides among many others, and a call of more than MOST_PER_CALL allocations leaves
the item not run, with why."""

from pathlib import Path

import pytest

from oracle.hw3.alloc_failure import ALLOCATING, MOST_PER_CALL, _allocations, _inject, _shuffled
from oracle.hw3.c.adapter import CAdapter
from oracle.hw3.c.build import build
from oracle.hw3.grade import grade, load
from tests.conftest import REFERENCE_C, SUBMISSIONS, patched, seeded_build_cache
from tests.test_grade import small_rubric

SPARE_RECORDS = SUBMISSIONS / "correct_review2" / "spare_records.patch"  # llm_init: 2 + 8000 allocations


def _alloc_failure(tmp_path: Path, source: str) -> tuple[str, str]:
    directory = tmp_path / "submission"
    directory.mkdir()
    (directory / "llm_memory.c").write_text(source)
    out = tmp_path / "out"
    out.mkdir()
    report = grade(str(directory), load(small_rubric(tmp_path / "rubric.toml", ["alloc_failure"])), out)
    item = next(item for item in report.items if item.id == "alloc_failure")
    return item.status, item.message


def _spares(count: int) -> str:
    """spare_records (a correct, unusual design) setting aside `count` records in llm_init instead of 8000:
    llm_init makes count + 2 allocations."""
    source = patched(REFERENCE_C.read_text(), SPARE_RECORDS)
    loop = "for (int i = 0; i < 8000; i++)"
    assert source.count(loop) == 1
    return source.replace(loop, f"for (int i = 0; i < {count}; i++)")


def test_the_reference_has_every_allocation_failed(tmp_path: Path) -> None:
    status, message = _alloc_failure(tmp_path, REFERENCE_C.read_text())
    assert (status, message) == ("passed", "16 allocations failed one at a time")  # 2, 3, 3, 4, 3 and 1 a call


def test_a_call_of_more_allocations_than_the_bound_leaves_the_item_not_run(tmp_path: Path) -> None:
    status, message = _alloc_failure(tmp_path, _spares(MOST_PER_CALL - 1))
    assert status == "not_run", message
    assert message == (f"not run: allocation_failure: call 1 llm_init(pool, 2560) made {MOST_PER_CALL + 1} allocations "
                       f"with none failing; the grader fails each allocation of a call in turn, up to {MOST_PER_CALL} "
                       f"a call"), message


def test_a_call_of_as_many_allocations_as_the_bound_is_tried(tmp_path: Path) -> None:
    """The first spare record written through unchecked: a crash when llm_init's third allocation fails."""
    checked = "        if (record == NULL) {"
    source = _spares(MOST_PER_CALL - 2)
    assert source.count(checked) == 1
    status, message = _alloc_failure(tmp_path, source.replace(checked, "        if (record == NULL && i != 0) {"))
    assert status == "failed", message
    assert message.startswith("allocation_failure (allocation 3 of step 1 failing): step 1 llm_init(pool, 2560)"), message
    assert "SIGSEGV" in message, message


def test_a_leak_when_the_last_of_many_allocations_fails_is_caught(tmp_path: Path) -> None:
    undo = "        if (record == NULL) {\n            drop_spares();"
    correct = _spares(MOST_PER_CALL - 2)
    assert undo in correct
    last = MOST_PER_CALL - 3  # the last spare record's i
    leaky = correct.replace(undo, f"        if (record == NULL) {{\n            if (i < {last})\n                drop_spares();")
    status, message = _alloc_failure(tmp_path, leaky)
    assert status == "failed"
    assert f"allocation {MOST_PER_CALL} of step 1 failing" in message, message
    assert f"heap: expected every allocation freed, got {last} block(s)" in message, message


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
    """create_sequence ends by asking for a block it can do without (a cache it skips when malloc says no), and
    frees the block it set aside before only when that one came: where the optional malloc fails (and every one
    after it in the call), the call still succeeds, and the block set aside is never freed."""
    done = "    list_add_tail(&seq->node, &engine->active_seqs);\n    return seq;\n"
    optional = ("    list_add_tail(&seq->node, &engine->active_seqs);\n    set_aside = malloc(1);\n"
                "    void *cache = malloc(1); /* optional: done without when there is no memory */\n"
                "    if (cache != NULL) {\n        free(set_aside);\n        free(cache);\n    }\n    return seq;\n")
    reference = REFERENCE_C.read_text()
    assert done in reference
    leaky = reference.replace(done, optional).replace(
        "static Sequence *new_sequence(", "void *set_aside; /* global: kept, never freed */\nstatic Sequence *new_sequence(")
    status, message = _alloc_failure(tmp_path, leaky)
    assert status == "failed"
    # seq, its L1 table, one L2 table (20 records), set_aside, cache
    assert message.startswith("allocation_failure (allocation 5 of step 2 failing)"), message
    assert "llm_destroy afterwards: its status and the heap blocks left: expected 0 and 0, got 0 and 1" in message, message


@pytest.mark.unmeasured  # the item's tries over 50-odd allocations a call: paths the tests above measure
def test_a_leak_among_blocks_allocated_and_freed_around_a_calls_own_work_is_caught(tmp_path: Path) -> None:
    """alloc_failure's bug (a failed L2 table leaks the half-built Sequence), each call padded with 25 blocks
    allocated and freed before its own work and 25 after (tests/submissions/hostile/review3b, its 100 made 25 to
    stay within MOST_PER_CALL)."""
    broken = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "alloc_failure.patch")
    padded = patched(broken, SUBMISSIONS / "hostile" / "review3b" / "padded_allocations.patch")
    assert padded.count("PADDING = 100") == 1
    padded = padded.replace("PADDING = 100", "PADDING = 25")  # within MOST_PER_CALL: tried, not left not run
    status, message = _alloc_failure(tmp_path, padded)
    assert status == "failed", message
    assert message.startswith("allocation_failure (allocation 28 of step 2 failing): step 2 create_sequence"), message


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



@pytest.mark.unmeasured  # the item's tries over 50-odd allocations a call: paths the tests above measure
def test_a_leak_among_blocks_kept_around_a_calls_own_work_is_caught(tmp_path: Path) -> None:
    """As above, with the padding kept until llm_destroy (a failing call frees its own)."""
    broken = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "alloc_failure.patch")
    padded = patched(broken, SUBMISSIONS / "hostile" / "review3b" / "padded_kept_allocations.patch")
    assert padded.count("PADDING = 100") == 1
    padded = padded.replace("PADDING = 100", "PADDING = 25")  # within MOST_PER_CALL: tried, not left not run
    status, message = _alloc_failure(tmp_path, padded)
    assert status == "failed", message
    assert message.startswith("allocation_failure (allocation 28 of step 2 failing): step 2 create_sequence"), message


def test_the_tries_run_in_an_order_drawn_afresh_each_time() -> None:
    """Every try once, in an order no run can know: a try that counted the tries before it (the kernel's page cache,
    tests/test_tamper_cache_quiet.py) learns nothing of its k. Ten draws of the reference's 16 tries are never all
    alike (the chance that they are: 1 in 16!^9)."""
    counts = [2, 3, 3, 4, 3, 1]  # the reference's, call by call
    every = [(index, k) for index, count in enumerate(counts) for k in range(1, count + 2)]  # one past each count
    draws = [_shuffled(counts) for _ in range(10)]
    assert all(sorted(draw) == every for draw in draws)
    assert len({tuple(draw) for draw in draws}) > 1


def test_the_try_reported_is_the_programs_first_failing_one_whatever_the_order(tmp_path: Path) -> None:
    """broken/alloc_failure leaks wherever an L2 table of create_sequence cannot be had (calls 2, 4 and 5, some at
    more than one allocation): whichever order the tries ran in, every grade reports call 2's, the first in the
    program's order."""
    source = patched(REFERENCE_C.read_text(), SUBMISSIONS / "broken" / "alloc_failure.patch")
    reports = set()
    for attempt in range(3):
        (tmp_path / str(attempt)).mkdir()
        reports.add(_alloc_failure(tmp_path / str(attempt), source))
    assert len(reports) == 1, reports
    status, message = reports.pop()
    assert status == "failed"
    first = "allocation_failure (allocation 3 of step 2 failing): step 2 create_sequence(engine, 1, 20)"
    assert message.startswith(first), message


def test_a_try_past_a_calls_count_must_make_as_many_allocations_and_fail_none(tmp_path: Path) -> None:
    """The try past a call's count fails nothing: the reference's create_sequence of 20 records (3 allocations)
    passes it as counted, and were it counted at 2 (as a process that could tell the counting run from a try, and
    put a checked allocation before its last one in every try, would be) the third allocation is failed there and
    the try fails the item, naming the count."""
    directory = tmp_path / "reference"
    directory.mkdir()
    (directory / "llm_memory.c").write_text(REFERENCE_C.read_text())
    built = build(directory, seeded_build_cache(tmp_path / "work"))
    assert built.ok and built.driver is not None, built.message
    adapter = CAdapter(built.driver)
    try:
        counts = _allocations(adapter, ALLOCATING.steps)
        assert counts[1] == 3, counts  # create_sequence(engine, 1, 20): the sequence, its L1 table, one L2 table
        assert _inject(adapter, ALLOCATING.steps, 1, 4, counted=3) is None
        finding = _inject(adapter, ALLOCATING.steps, 1, 3, counted=2)
    finally:
        adapter.close()
    assert finding is not None and finding.step == 2, finding
    assert finding.program == "allocation_failure (step 2 as counted, none failing)", finding.program
    assert (finding.difference.expected, finding.difference.got) == (
        "2, as when counted", "3: the call allocated otherwise than when it was counted"), finding.difference
